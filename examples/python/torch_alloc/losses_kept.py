"""Losses appended with their graph (not `loss.item()`), so every step's activations stay alive,
then the function returns and all of it is released: growth that ended before the exit.

Expected memshim report (PyTorch section): a released growth at `forward` line 19 (the hidden
activations each kept graph holds): it climbs for the 40 steps of `train` and is given back when
`train` returns; after it, `idle` runs for 0.5 s holding none of it. Prints "released".
"""
import time

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1)
).cuda()


def forward(x):
    hidden = model[1](model[0](x))
    return model[2](hidden).pow(2).mean()


def train():
    losses = []
    for _ in range(40):
        x = torch.randn(512, 1024, device="cuda")
        losses.append(forward(x))  # the bug: keeps the graph (use loss.item())
        time.sleep(0.01)
    return float(sum(l.item() for l in losses))


def idle():
    time.sleep(0.5)


train()
idle()
torch.cuda.synchronize()
print("released")
