#!/usr/bin/env python3
"""gpu_trainer: a PyTorch training of the usual shape, for bench/gpu_proxy.py on a GPU node.

ResNet-50 (torchvision) with bf16 autocast and channels_last, SGD, fed by a DataLoader whose
workers do what an ImageNet pipeline does on the host: decode a JPEG, crop 224x224 at random,
flip, normalise. The JPEGs are made once at start (smooth random pictures, 256x256), so the run
needs no dataset. It reports nothing to cosched: it writes one JSON line per step to --out
({"event":"step","t_step":seconds,"time":unix seconds}) for the benchmark's own bookkeeping,
and logs its loss every step as many scripts do (which waits for the GPU once per step).
`--device cpu --tiny` (a small CNN on 64x64 pictures, no torchvision) is for trying the
benchmarks' flow on a machine without a GPU (bench/gpu_guard.sh --cpu-dry-run).
"""
import argparse
import contextlib
import io
import json
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1) * 255


def make_jpegs(n, side=256, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        low = rng.integers(0, 256, (side // 16, side // 16, 3), dtype=np.uint8)
        img = Image.fromarray(low).resize((side, side), Image.BILINEAR)
        pixels = np.asarray(img, dtype=np.int16) + rng.integers(-12, 12, (side, side, 3), dtype=np.int16)
        buf = io.BytesIO()
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


class JpegStream(torch.utils.data.IterableDataset):
    """An endless stream of (image, label) decoded and augmented from the JPEG pool."""

    def __init__(self, jpegs, crop=224):
        self.jpegs, self.crop = jpegs, crop

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        rnd = random.Random(info.id if info else 0)
        while True:
            img = Image.open(io.BytesIO(self.jpegs[rnd.randrange(len(self.jpegs))])).convert("RGB")
            x0, y0 = rnd.randrange(img.width - self.crop + 1), rnd.randrange(img.height - self.crop + 1)
            img = img.crop((x0, y0, x0 + self.crop, y0 + self.crop))
            if rnd.random() < 0.5:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
            t = torch.from_numpy(np.array(img, dtype=np.uint8)).permute(2, 0, 1).float()
            yield (t - MEAN) / STD, rnd.randrange(1000)


def tiny_cnn():
    """A few convolutions: a step of milliseconds on one CPU core, for dry runs."""
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3, stride=2),
                               torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 1000))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--duration", type=float, default=600)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--workers", type=int, default=5)
    p.add_argument("--pool", type=int, default=512, help="JPEGs made at start")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--tiny", action="store_true", help="a small CNN on 64x64 pictures instead of ResNet-50 on 224x224")
    a = p.parse_args()
    torch.manual_seed(1)
    torch.backends.cudnn.benchmark = True
    cuda = a.device == "cuda"
    if a.tiny:
        model, side, crop = tiny_cnn(), 64, 56
    else:
        import torchvision  # only here: a dry run needs none

        model, side, crop = torchvision.models.resnet50(), 256, 224
    model = model.to(a.device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loader = torch.utils.data.DataLoader(JpegStream(make_jpegs(a.pool, side), crop), batch_size=a.batch,
                                         num_workers=a.workers, pin_memory=cuda, prefetch_factor=4,
                                         persistent_workers=True)
    end = time.time() + a.duration
    with open(a.out, "w", buffering=1) as out:
        last = time.perf_counter()
        for x, y in loader:
            x = x.to(a.device, non_blocking=True).to(memory_format=torch.channels_last)
            y = y.to(a.device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext():
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            value = loss.item()
            now = time.perf_counter()
            out.write(json.dumps({"event": "step", "t_step": now - last, "time": time.time(), "loss": value}, separators=(",", ":")) + "\n")
            last = now
            if time.time() > end:
                break


if __name__ == "__main__":
    main()
