"""PyTorch's caching allocator through its stand-in (tests/cuda/standin/libc10_cuda_standin.cpp), for
memshim's e2e tests. STANDIN_TORCH_LIB names the stand-in's libc10_cuda.so; run with the stand-in
driver on LD_LIBRARY_PATH and STANDIN_CUDA_MEM_BYTES=256M.

    step       x and y (3 MiB each) are temporaries; the clone kept in `kept` (4 MiB + 100 B) at line 44
               leaks: 4 steps hold 16777616 B in 4 tensors until the interpreter exits, whose
               teardown of `kept` frees them
    train      8 losses of 2 MiB appended at line 52, 10 ms apart, then all released: growth to
               16 MiB, given back
    fragment   30 blocks of 6 MiB at line 59; two of each three are freed. The cache then reserves
               12 segments of 20 MiB (251658240 B) and holds 79692176 B of tensors (these 10 blocks,
               62914560 B, and the 4 clones), so 171966064 B are free, the largest free block 14 MiB:
               40 MiB fails with fragmentation
    capacity   1 GiB at line 68 fails (the stand-in GPU has 256 MiB, 16 MiB of it free): capacity

Prints "hooks N" (trackers * 100 + observers the stand-in has attached) and "ok".
"""
import ctypes
import os
import time

lib = ctypes.CDLL(os.environ["STANDIN_TORCH_LIB"])
lib.standin_torch_malloc.restype = ctypes.c_uint64
lib.standin_torch_malloc.argtypes = [ctypes.c_size_t]
lib.standin_torch_free.argtypes = [ctypes.c_uint64]
MiB = 1 << 20
kept = []


class Tensor:
    """Frees its block when collected, as a tensor does: at exit, clearing `kept` frees them."""

    def __init__(self, size):
        self.free = lib.standin_torch_free
        self.ptr = lib.standin_torch_malloc(size)

    def __del__(self):
        self.free(self.ptr)


def step():
    x = lib.standin_torch_malloc(3 * MiB)
    y = lib.standin_torch_malloc(3 * MiB)
    kept.append(Tensor(4 * MiB + 100))
    lib.standin_torch_free(x)
    lib.standin_torch_free(y)


def train():
    losses = []
    for _ in range(8):
        losses.append(lib.standin_torch_malloc(2 * MiB))
        time.sleep(0.01)
    for loss in losses:
        lib.standin_torch_free(loss)


def fragment():
    blocks = [lib.standin_torch_malloc(6 * MiB) for _ in range(30)]
    for i, b in enumerate(blocks):
        if i % 3 != 2:
            lib.standin_torch_free(b)
    assert lib.standin_torch_malloc(40 * MiB) == 0
    return [b for i, b in enumerate(blocks) if i % 3 == 2]


def capacity():
    assert lib.standin_torch_malloc(1 << 30) == 0


assert lib.standin_torch_init() == 0
for _ in range(4):
    step()
train()
held = fragment()
capacity()
print("hooks", lib.standin_torch_hooks())
print("ok")
