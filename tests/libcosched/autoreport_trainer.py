# autoreport_trainer: unmodified PyTorch training (no cosched import, except in own-reporter) for
# test_autoreport; its last stdout line is {"steps": N}, its own count of training steps.
#
#   autoreport_trainer.py MODE STEPS
#   fashion         an MLP on Debian's Fashion-MNIST (random tensors where the package is absent)
#   two-optimizers  a fast optimizer stepping every iteration, a slow one every other one (first)
#   wrapper         a wrapper optimizer whose step() steps its inner optimizer three times
#   loader-fork     a DataLoader with 2 forked workers, each item stepping an optimizer of its own
#   loader-spawn    the same with spawned workers (a fresh interpreter, hooks of its own)
#   fork-child      halfway, a forked child (no DataLoader worker) steps an optimizer of its own
#   own-reporter    the loop reports its own steps through cosched.Reporter
import gzip
import json
import os
import sys

import torch

FASHION = "/usr/share/datasets/fashion-mnist"
BATCH = 32


def fashion_batches(steps):
    """(images, labels) of steps * BATCH Fashion-MNIST test images, flattened to 784 floats."""
    n = steps * BATCH
    try:
        with gzip.open(FASHION + "/t10k-images-idx3-ubyte.gz") as f:
            images = f.read(16 + n * 784)[16:]  # idx3: a 16-byte header, then 28x28 bytes each
        with gzip.open(FASHION + "/t10k-labels-idx1-ubyte.gz") as f:
            labels = f.read(8 + n)[8:]
        x = torch.frombuffer(bytearray(images), dtype=torch.uint8).float().div(255).view(n, 784)
        y = torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()
    except OSError:
        x, y = torch.randn(n, 784), torch.randint(0, 10, (n,))
    return x.split(BATCH), y.split(BATCH)


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(784, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


def train_step(model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def fashion(steps):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in zip(*fashion_batches(steps)):
        train_step(model, opt, x, y)
    return steps


def two_optimizers(steps):
    fast_model, slow_model = mlp(), mlp()
    fast = torch.optim.SGD(fast_model.parameters(), lr=0.1)
    slow = torch.optim.Adam(slow_model.parameters(), lr=0.01)
    for i, (x, y) in enumerate(zip(*fashion_batches(steps))):
        if i % 2 == 0:
            train_step(slow_model, slow, x, y)
        train_step(fast_model, fast, x, y)
    return steps


class SteppingThrice(torch.optim.Optimizer):
    """A wrapper as DeepSpeed's ZeRO is one around FusedAdam: its step() steps the inner
    optimizer once per part of the parameters (here three times)."""

    def __init__(self, inner):
        self.inner = inner
        super().__init__([p for g in inner.param_groups for p in g["params"]], {})

    def step(self, closure=None):
        for _ in range(3):
            self.inner.step()


def wrapper(steps):
    model = mlp()
    opt = SteppingThrice(torch.optim.SGD(model.parameters(), lr=0.03))
    for x, y in zip(*fashion_batches(steps)):
        train_step(model, opt, x, y)
    return steps


class SteppingItems(torch.utils.data.Dataset):
    """Items whose making steps an optimizer of their own: a worker that reported would show."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        w = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(2):
            (w - 1).pow(2).sum().backward()
            opt.step()
        return torch.randn(784), i % 10


def loader(steps, context):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.DataLoader(SteppingItems(steps * BATCH), batch_size=BATCH, num_workers=2,
                                       multiprocessing_context=context)
    n = 0
    for x, y in data:
        train_step(model, opt, x, y)
        n += 1
    return n


def step_alone(steps):
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    for _ in range(steps):
        (w - 1).pow(2).sum().backward()
        opt.step()


def fork_child(steps):
    import multiprocessing

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, (x, y) in enumerate(zip(*fashion_batches(steps))):
        train_step(model, opt, x, y)
        if i == steps // 2:
            child = multiprocessing.get_context("fork").Process(target=step_alone, args=(steps,))
            child.start()
            child.join()
            if child.exitcode != 0:
                sys.exit("the forked child exited %s" % child.exitcode)
    return steps


def own_reporter(steps):
    import cosched

    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with cosched.Reporter(timeout=60, raise_errors=True) as rep:
        for x, y in zip(*fashion_batches(steps)):
            with rep.step():
                train_step(model, opt, x, y)
    return steps


MODES = {
    "fashion": fashion,
    "two-optimizers": two_optimizers,
    "wrapper": wrapper,
    "loader-fork": lambda steps: loader(steps, "fork"),
    "loader-spawn": lambda steps: loader(steps, "spawn"),
    "fork-child": fork_child,
    "own-reporter": own_reporter,
}

if __name__ == "__main__":
    torch.set_num_threads(1)
    torch.manual_seed(0)
    steps = MODES[sys.argv[1]](int(sys.argv[2]))
    sys.stdout.flush()
    print(json.dumps({"steps": steps, "torch": torch.__version__, "pid": os.getpid()}))
