"""Growth given back: an evaluation pass keeps every batch's logits on the GPU to compute a metric at
the end (30 x 2 MiB at line 20), then clears the list, and training goes on for a while without
growing.

Expected memshim report: released growth of tensor memory at `evaluate` line 20, from 2.0 MiB to
60.0 MiB, given back (0 B left) at the clear, with the time it ended; no leak from that line.
Prints "metric ...".
"""
import time

import torch

w = torch.randn(1024, 512, device="cuda")


def evaluate():
    outs = []
    for _ in range(30):
        x = torch.randn(1024, 1024, device="cuda")
        outs.append(x @ w)
        time.sleep(0.02)
    metric = torch.cat([o.mean(0, keepdim=True) for o in outs]).mean().item()
    outs.clear()
    return metric


m = evaluate()
for _ in range(20):
    (torch.randn(1024, 1024, device="cuda") @ w).sum().item()
    time.sleep(0.02)
print("metric", round(m, 3))
