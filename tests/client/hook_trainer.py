# hook_trainer: an unmodified PyTorch training loop (no cosched import) for test_experiment_hook:
# cosched experiment --trainer runs it and times its steps through cosched's step hook.
#
#   hook_trainer.py train        a tiny MLP on random tensors, optimizer steps until stopped
#   hook_trainer.py no-steps     imports torch and builds the model, but never calls step()
import sys
import time

import torch

PAUSE_S = 0.01  # between steps: cheap on a loaded two-core machine, and steps of a steady length


def main(mode):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 16), torch.randint(0, 2, (64,))
    print("training" if mode == "train" else "not stepping", flush=True)
    while True:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        if mode == "train":
            opt.step()
        time.sleep(PAUSE_S)


if __name__ == "__main__":
    main(sys.argv[1])
