"""Bandwidth-bound through library kernels: softmax and layer norm over 2 GiB half-precision
activations, each step reading and writing all of them with little arithmetic per byte.
Expected: bandwidth_bound. Runs about 6 s. Prints "steps N"."""
import time

import torch

x = torch.randn(16384, 65536, device="cuda", dtype=torch.float16)
norm = torch.nn.LayerNorm(65536, device="cuda", dtype=torch.float16)
steps = 0
end = time.monotonic() + 6.0
with torch.no_grad():
    while time.monotonic() < end:
        for _ in range(4):
            y = torch.softmax(x, dim=1)
            x = norm(y)
        torch.cuda.synchronize()
        steps += 1
print("steps", steps)
