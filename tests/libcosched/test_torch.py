# test_torch: a real PyTorch training loop (CPU, one thread, a tiny MLP) reporting each step
# through the cosched module to the real coschedd; the daemon's stats must show every step.
import json
import os
import subprocess
import sys
import traceback

import torch

import cosched

STEPS = 40
# Seconds a reply may take: a daemon under ASan on a loaded machine may stall past the module's
# 1 s default, which is a bound for real training loops, not for this check.
WAIT_S = 60


def daemon_steps():
    out = subprocess.run([os.environ["COSCHED_BUILD_ROOT"] + "/client/cosched", "--timeout", str(WAIT_S), "--json",
                          "stats", "--job", os.environ["COSCHED_JOB"]], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["jobs"][0]


def train():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(256, 16)
    y = (x[:, :4].sum(dim=1) > 0).long()  # a rule the model can learn in a few dozen steps
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    with cosched.Reporter(timeout=WAIT_S, raise_errors=True) as rep:
        for step in range(STEPS):
            with rep.step():
                batch = slice(step * 32 % 256, step * 32 % 256 + 32)
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
                loss.backward()
                opt.step()
            losses.append(loss.item())
    return losses, rep.steps


def main():
    checks = []
    try:
        before = daemon_steps()["steps"]
        losses, steps = train()
        job = daemon_steps()
        checks.append(("the loop trained (loss went down)", sum(losses[-5:]) < sum(losses[:5])))
        checks.append(("every step of the loop was counted by the daemon", job["steps"] == before + STEPS))
        checks.append(("the reporter saw the same count", steps == before + STEPS))
        checks.append(("the daemon's window holds the loop's steps", job["window"]["samples"] > 0))
    except Exception:
        print("\n".join("# " + line for line in traceback.format_exc().splitlines()))
        checks.append(("the PyTorch loop ran and reported", False))
    for n, (name, passed) in enumerate(checks, 1):
        print("%s %d - %s" % ("ok" if passed else "not ok", n, name))
    print("1..%d" % len(checks))
    return 0 if all(p for _, p in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
