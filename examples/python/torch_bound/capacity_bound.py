"""A capacity-bound job: it holds 96% of the GPU's memory in tensors and keeps computing, the state of
a job whose next larger batch will not fit.

Expected memshim finding on the H200: `capacity_bound` (NVML: up to 96% of the GPU in use, this
process's share said) beside whichever time-bound finding its loop earns. Runs about 5 s.
Prints "held N GiB".
"""
import time

import torch

free, total = torch.cuda.mem_get_info()
target = int(total * 0.96) - (total - free)
chunk = 1 << 30
held = [torch.empty(chunk, dtype=torch.uint8, device="cuda") for _ in range(target // chunk)]
w = torch.randn(4096, 4096, device="cuda")
end = time.monotonic() + 5.0
while time.monotonic() < end:
    (w @ w).sum().item()
print("held", len(held), "GiB")
