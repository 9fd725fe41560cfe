"""A training loop with a deliberate, growing device leak: every step keeps its hidden activations.

Expected report (memshim run -- python torch_growing_leak.py):
- device memory climbs by about 4 MiB per step (256 x 4096 float32 activations kept in `history`);
  over 60 steps the caching allocator asks the driver for new segments again and again, so
  `leaks.device` grows with the step count and the peak is reached at the end;
- the loss printed at the end is identical with and without memshim (same seed).
Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to exercise cuMemCreate/cuMemMap instead of
cuMemAlloc: the device section then shows `physical` and `mapped` rows.
"""
import sys
import time

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
history = []  # the bug: grows by one activation tensor per step


def train_step(x):
    hidden = model[1](model[0](x))
    history.append(hidden.detach())  # keeps 4 MiB alive per step
    loss = model[2](hidden).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


start = time.perf_counter()
for step in range(STEPS):
    x = torch.randn(256, 1024, device="cuda")
    loss = train_step(x)
torch.cuda.synchronize()
elapsed = time.perf_counter() - start
print(f"final loss {loss.item():.6f}")
print(f"allocated {torch.cuda.memory_allocated() >> 20} MiB, reserved {torch.cuda.memory_reserved() >> 20} MiB")
print(f"{STEPS} steps in {elapsed:.3f} s")
