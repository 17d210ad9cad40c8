"""torch_slow: an unmodified PyTorch training script with slow steps, as real jobs have them.

A bag-of-pixels model of Fashion-MNIST (Debian's dataset-fashion-mnist): each image is the sum
of one learned 256-wide vector per (pixel, intensity), 784 x 256 rows, then a linear layer to
the 10 classes; plain SGD with dense gradients. The table is 205 MB, six times this machine's
32 MB L3, and every step streams all of it (the gradient, the update): about 125 ms a step on
one thread on the project's 2-core VM, and memory-bound as large models' optimizer steps are
(beside cosched-noise stream on the other core, +26 % on 2026-11-29; an MLP of the same step
time was compute-bound there, +1 %). It does not import cosched: `cosched experiment --trainer`
and the daemon's autoreport time it through the optimizer hook, as they would any job.

    python3 bench/torch_slow.py [--dim N] [--batch N] [--threads N] [--steps N] [--log FILE]

Runs until stopped (or --steps); --log FILE appends one line per step, "END_UNIX_SECONDS
STEP_SECONDS", the script's own clock, which bench/guard_slow.py compares with the guard's view.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist"


def load(name, offset):
    with gzip.open(os.path.join(DATA, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=256, help="width of each pixel-intensity vector")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="0: until stopped")
    p.add_argument("--log", help="append 'end step_seconds' per step to this file")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    pixels = torch.from_numpy(load("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.int64))
    x = pixels + 256 * torch.arange(784)  # one row per (pixel, intensity)
    y = torch.from_numpy(load("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    bag = torch.nn.EmbeddingBag(784 * 256, args.dim, mode="mean")
    head = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(args.dim, 10))
    opt = torch.optim.SGD(list(bag.parameters()) + list(head.parameters()), lr=args.lr)
    log = open(args.log, "a", buffering=1) if args.log else None
    step, n = 0, len(x) - args.batch
    while args.steps == 0 or step < args.steps:
        i = (step * args.batch) % n
        began = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(head(bag(x[i:i + args.batch])), y[i:i + args.batch]).backward()
        opt.step()
        if log:
            log.write("%.6f %.6f\n" % (time.time(), time.perf_counter() - began))
        step += 1


if __name__ == "__main__":
    main()
