"""Device memory from Python through the stand-in driver (tests/cuda), for memshim's e2e tests:

    forward      cuMemAlloc_v2(1 MiB) from the main thread, at line 26 (step line 34, module line 38)
    backward     a native thread (native_worker.so) allocates 3 MiB while the main thread waits at
                 line 30 (step line 35, module line 38): the site carries the main thread's frames,
                 lent

Both blocks are leaked. Prints "ok" when the stand-in accepted both allocations.
"""
import ctypes
import os

cuda = ctypes.CDLL("libcuda.so.1")
worker = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_worker.so"))
worker.alloc_in_thread.argtypes = [ctypes.c_size_t]
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuInit(0) == 0
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]


def forward():
    p = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(p), 1 << 20) == 0


def backward():
    assert worker.alloc_in_thread(3 << 20) == 0


def step():
    forward()
    backward()


step()
print("ok")
