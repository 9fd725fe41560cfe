"""An input-bound training loop: each step prepares its batch on the CPU (a slow Python loop, as a
data pipeline without workers does) and runs one small kernel, so the GPU sits idle most of the time.

Expected memshim finding on the H200: `gpu_idle` (kernels ran a few percent of the time, counted from
when the process first held device memory) with its fix (load data ahead: workers, pinned memory,
prefetch). Runs about 6 s. Prints "steps N".
"""
import time

import torch

w = torch.randn(256, 256, device="cuda")
steps = 0
end = time.monotonic() + 6.0
while time.monotonic() < end:
    batch = [float(i % 7) for i in range(200_000)]  # the host-side preparation
    x = torch.tensor(batch[: 256 * 256]).view(256, 256).cuda()
    (x @ w).sum().item()
    steps += 1
print("steps", steps)
