#!/usr/bin/env python3
"""fashion_mnist_train: an ordinary PyTorch training script, with no cosched in it — a small MLP
on Fashion-MNIST read from Debian's dataset-fashion-mnist (the idx files, gzip'ed), a fixed number
of SGD steps of a DataLoader's batches. It prints its own count of optimizer steps at the end,
{"steps": N}, so that a test can hold the daemon's count against it.

Two test stand-ins, both plain file and print I/O a real job could have:
  --contention FILE --contention-delay S: the data source is slower while another process is
      busy beside it, as a co-tenant slows a real job's data loading: each batch takes S seconds
      more while FILE was touched within the last 0.25 s (the co-tenant stand-in touches it while
      it runs; paused or frozen, it stops). The slowdown follows a model, not this machine's load.
  --step-lines: print a JSON line per step as cosched-train does ({"event": "step", ...}), which
      coschedd reads from a run's stdout as the program's own reports of its steps.

Usage: fashion_mnist_train.py [--steps 60] [--batch 64] [--data DIR] [--contention FILE
       --contention-delay S] [--step-lines]
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch

DATA = "/usr/share/datasets/fashion-mnist"
FRESH_S = 0.25  # a contention file touched this recently means the co-tenant is at work


def idx(path):
    """An idx file (images or labels) as a numpy array of its shape."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class FashionMNIST(torch.utils.data.Dataset):
    def __init__(self, data, limit, contention, delay, batch):
        images = idx(os.path.join(data, "train-images-idx3-ubyte.gz"))[:limit]
        self.x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0)
        self.y = torch.from_numpy(idx(os.path.join(data, "train-labels-idx1-ubyte.gz"))[:limit].astype(np.int64))
        self.contention, self.item_delay = contention, delay / batch

    def __len__(self):
        return len(self.y)

    def contended(self):
        try:
            return time.time() - os.stat(self.contention).st_mtime < FRESH_S
        except OSError:
            return False

    def __getitem__(self, i):
        if self.contention and self.contended():
            time.sleep(self.item_delay)
        return self.x[i], self.y[i]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--data", default=DATA)
    p.add_argument("--limit", type=int, default=6000, help="training images used")
    p.add_argument("--contention")
    p.add_argument("--contention-delay", type=float, default=0.05)
    p.add_argument("--step-lines", action="store_true")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = FashionMNIST(args.data, args.limit, args.contention, args.contention_delay, args.batch)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True, drop_last=True)
    model = torch.nn.Sequential(torch.nn.Linear(784, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps = 0
    last = time.monotonic()
    while steps < args.steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            now = time.monotonic()
            if args.step_lines:
                print(json.dumps({"event": "step", "step": steps, "t_step": now - last, "loss": loss.item()}),
                      flush=True)
            last = now
            steps += 1
            if steps == args.steps:
                break
    print(json.dumps({"steps": steps, "loss": loss.item()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
