"""An out-of-memory error from capacity: live activations alone exceed the GPU's share (a memory
fraction of about 7 GiB keeps it quick): 512 MiB tensors are kept until one fails.

Expected memshim report (PyTorch section): one OOM asking for 512.0 MiB with the verdict
"capacity", the holders led by `activations` line 16 (all the live tensors). Prints "oom after N".
"""
import torch

free, total = torch.cuda.mem_get_info()
torch.cuda.set_per_process_memory_fraction((7 << 30) / total)
kept = []


def activations():
    while True:
        kept.append(torch.empty(512 << 20, dtype=torch.uint8, device="cuda"))


try:
    activations()
except torch.OutOfMemoryError:
    print("oom after", len(kept))
