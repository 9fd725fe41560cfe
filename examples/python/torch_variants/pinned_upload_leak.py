"""A device leak through host-to-device uploads: each batch is built on the host, pinned and copied to
the GPU with `non_blocking=True`, and the device copy is appended to a module-level history.

Expected memshim report: tensors held at exit 7 x 3 MiB = 22020096 B in 7 tensors at `upload` line 14;
the copies each way beside it (7 pinned host-to-device copies of 3 MiB). Prints "history 22020096".
"""
import torch

history = []


def upload(i):
    host = torch.full((3 << 20,), i % 251, dtype=torch.uint8).pin_memory()
    dev = host.to("cuda", non_blocking=True)
    history.append(dev)
    return dev


for i in range(7):
    upload(i)
torch.cuda.synchronize()
print("history", sum(t.numel() for t in history))
