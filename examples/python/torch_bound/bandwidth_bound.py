"""A bandwidth-bound loop: elementwise kernels over 4 GiB tensors, which read and write the whole of
them each step and do almost no arithmetic, so memory is busy whenever a kernel runs.

Expected memshim finding on the H200: `bandwidth_bound` (memory busy most of the time while kernels
ran) with its fix (fuse, lower precision, reuse data on the device). Runs about 6 s. Prints "steps N".
"""
import time

import torch

n = 1 << 30  # 4 GiB of float32 each
a = torch.ones(n, device="cuda")
b = torch.empty(n, device="cuda")
steps = 0
end = time.monotonic() + 6.0
while time.monotonic() < end:
    for _ in range(10):
        torch.mul(a, 1.0001, out=b)
        torch.mul(b, 0.9999, out=a)
    torch.cuda.synchronize()
    steps += 1
print("steps", steps)
