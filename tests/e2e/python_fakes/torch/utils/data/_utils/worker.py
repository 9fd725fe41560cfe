"""A stand-in for PyTorch's DataLoader worker module (torch/utils/data/_utils/worker.py), for memshim's
e2e tests: a process that runs a function named `_worker_loop` from a file at this path is reported as a
DataLoader worker. This is not PyTorch; it only borrows the path and the name."""
import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]


def _worker_loop(batches):
    return [libc.malloc(4096) for _ in range(batches)]
