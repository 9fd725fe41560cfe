"""An out-of-memory error from capacity with no memory fraction: the program holds 20 GiB of weights and
asks for one tensor larger than the whole GPU.

Expected memshim report: one OOM whose verdict is capacity (the request alone exceeds what the GPU
has free), holders led by `load` line 11 (20 GiB in 20 tensors). Prints "oom".
"""
import torch


def load():
    return [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(20)]


weights = load()
try:
    torch.empty(400 << 30, dtype=torch.uint8, device="cuda")
    print("fits")
except torch.OutOfMemoryError:
    print("oom")
