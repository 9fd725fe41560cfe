"""Lent Python frames' cost: a native thread (many_in_thread of tests/cuda/python/native_worker.c)
makes N device allocations through the stand-in driver (tests/cuda) while the main thread waits 13
Python frames deep, as PyTorch's autograd thread allocates gradients during backward(). Each allocation's stack gets the main thread's frames,
read while that thread may run.  python lent_frames.py NATIVE_WORKER_SO [N]"""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")
worker = ctypes.CDLL(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuInit(0) == 0
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0


def backward(n):
    assert worker.many_in_thread(n) == 0


def nested(depth, n):
    return backward(n) if depth == 0 else nested(depth - 1, n)


class Model:
    def __call__(self, n):
        return self.forward(n)

    def forward(self, n):
        return nested(8, n)


Model()(N)
