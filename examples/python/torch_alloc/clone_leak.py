"""A training step that keeps `y.detach().clone()` alive in a list: a device leak held by the clone.

Expected memshim report (PyTorch section): tensors held at the end include 41943040 B in 10 tensors
at `step` line 17 (the clone: 10 steps x 1024 x 1024 float32), not at the matmul before it, which is
the allocation that made the cache grow. Prints "kept 41943040".
"""
import torch

torch.manual_seed(0)
w = torch.randn(1024, 1024, device="cuda")
kept = []


def step(x):
    y = x @ w
    z = torch.relu(y)
    kept.append(y.detach().clone())
    return z.sum().item()


for _ in range(10):
    step(torch.randn(1024, 1024, device="cuda"))
torch.cuda.synchronize()
print("kept", sum(t.numel() * t.element_size() for t in kept))
