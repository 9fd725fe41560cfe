"""A training loop through PyTorch's allocator stand-in, for memshim's e2e tests of steps and roles.
FAKE_TORCH names tests/cuda/python/fake_torch (modules whose frames sit where PyTorch's do);
STANDIN_TORCH_LIB the stand-in's libc10_cuda.so (run as torch_standin.py is).

Before the loop the model's 4 parameters of 1 MiB are allocated (Module._apply). Then 8 steps of
20 ms, each: a 1 MiB batch (data), 2 MiB of activations (forward), 4 MiB of gradients (backward,
which frees the activations), AdamW's step (8 MiB of state at the first step, kept; a 1 MiB
temporary every step), gradients and batch freed; from step 3 on the loop keeps 3 MiB a step
(`kept`, line 56; the interpreter's teardown frees them, which is no growth given back). Allocated at each step's peak: 18 MiB + 3 MiB for each step kept before it
(parameters 4, data 1, gradients 4, optimizer state 9, other the kept); 12 MiB + the kept between.
Prints "hooks N" and "ok".
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.environ["FAKE_TORCH"])
lib = ctypes.CDLL(os.environ["STANDIN_TORCH_LIB"])
lib.standin_torch_malloc.restype = ctypes.c_uint64
lib.standin_torch_malloc.argtypes = [ctypes.c_size_t]
lib.standin_torch_free.argtypes = [ctypes.c_uint64]
from torch._tensor import backward  # noqa: E402
from torch.nn.modules.module import Module  # noqa: E402
from torch.optim.adamw import AdamW  # noqa: E402
from torch.utils.data.loader import load_batch  # noqa: E402

MiB = 1 << 20


class Kept:
    """Frees its block when collected, as a tensor does."""

    def __init__(self, size):
        self.free = lib.standin_torch_free
        self.ptr = lib.standin_torch_malloc(size)

    def __del__(self):
        self.free(self.ptr)


assert lib.standin_torch_init() == 0
sizes = [MiB] * 4
model = Module(lib, sizes).to_device()
opt = AdamW(lib, sizes)
kept = []
for step in range(8):
    batch = load_batch(lib)
    activations = model(batch)
    grads = backward(lib, sizes, activations)
    opt.step()
    for g in grads:
        lib.standin_torch_free(g)
    lib.standin_torch_free(batch)
    if step >= 2:
        kept.append(Kept(3 * MiB))
    time.sleep(0.02)
print("hooks", lib.standin_torch_hooks())
print("ok")
