# trainer_torch.py: the PyTorch peer of cosched-train for bench/trainer.sh: the same ResNet
# (CIFAR ResNet-N, projection shortcuts) trained with SGD on random data; prints images/s.
import sys, time, resource
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.sc = None
        if stride != 1 or cin != cout:
            self.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)), inplace=True)
        y = self.b2(self.c2(y))
        return F.relu(y + (self.sc(x) if self.sc is not None else x), inplace=True)


def resnet(n, classes=10):
    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True)]
    cin = 16
    for s, w in enumerate((16, 32, 64)):
        for j in range(n):
            layers.append(Block(cin, w, 2 if s > 0 and j == 0 else 1))
            cin = w
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes)]
    return nn.Sequential(*layers)


def main():
    depth, batch, threads, steps = (int(a) for a in sys.argv[1:5])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = resnet((depth - 2) // 6)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))
    times = []
    for s in range(steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if s >= 2:  # the first steps pay for allocation and kernel selection
            times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("images_per_s %.1f peak_rss_mib %.0f loss %.3f" % (batch / med, rss, loss.item()))


main()
