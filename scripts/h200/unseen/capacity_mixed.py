"""Capacity-bound with tensors of mixed sizes: a cache of activations of 1-300 MiB filled to 94%
of the GPU, then a training loop of a small MLP beside it.
Expected: capacity_bound. Runs about 5 s. Prints "cached N tensors"."""
import time

import torch

free, total = torch.cuda.mem_get_info()
target = int(total * 0.94) - (total - free)
cache, held, i = [], 0, 0
while True:
    size = ((i * 7919) % 300 + 1) << 20
    if held + size > target:
        break
    cache.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
    held += size
    i += 1
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda()
opt = torch.optim.Adam(model.parameters())
end = time.monotonic() + 5.0
while time.monotonic() < end:
    x = torch.randn(1024, 2048, device="cuda")
    loss = model(x).logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("cached", len(cache), "tensors")
