"""PyTorch's caching allocator attached to while the program runs (`memshim attach`), through its
stand-in (tests/cuda/standin/libc10_cuda_standin.cpp). STANDIN_TORCH_LIB names the stand-in's
libc10_cuda.so; run with the stand-in driver on LD_LIBRARY_PATH and STANDIN_CUDA_MEM_BYTES=256M.

Starts the allocator and keeps one 1 MiB tensor, prints "torch_attach: ready" and waits for a file
named `go`; then waits (at most 30 s) until a trace tracker is attached to the allocator, keeps 3
tensors of 2 MiB + 10 B from keep() (line 25), prints "torch_attach: kept", waits for `stop` and
exits 0. Attached before `go` and detached after "kept", the report's torch section holds exactly
those 3 tensors (6291486 B) at keep (torch_attach.py:25), and not the 1 MiB from before attach.
With LOAD_LATE=1 the library is loaded (and the allocator started) only after `go`, so after attach,
and the 1 MiB tensor is not made.
"""
import ctypes
import os
import time

MiB = 1 << 20
# The library, once loaded (see load).
lib = None
kept = []


def keep():
    for _ in range(3):
        kept.append(lib.standin_torch_malloc(2 * MiB + 10))


def wait_for(name):
    while not os.path.exists(name):
        time.sleep(0.02)


def load():
    global lib
    lib = ctypes.CDLL(os.environ["STANDIN_TORCH_LIB"])
    lib.standin_torch_malloc.restype = ctypes.c_uint64
    lib.standin_torch_malloc.argtypes = [ctypes.c_size_t]
    assert lib.standin_torch_init() == 0


late = os.environ.get("LOAD_LATE") == "1"
if not late:
    load()
    kept.append(lib.standin_torch_malloc(MiB))
print("torch_attach: ready", flush=True)
wait_for("go")
if late:
    load()
deadline = time.monotonic() + 30
while lib.standin_torch_hooks() < 100 and time.monotonic() < deadline:
    time.sleep(0.02)
keep()
print("torch_attach: kept", flush=True)
wait_for("stop")
