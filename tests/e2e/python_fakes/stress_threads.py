"""Python frames under pressure, for memshim's e2e tests: 8 threads allocate through bytearray and ctypes
while others start and end, generators and recursion churn the frame chains, and daemon threads are still
allocating when the interpreter shuts down (their thread states are freed under them). The process must
exit normally with status 0 and print "ok"."""
import ctypes
import sys
import threading

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


def deep(n):
    if n == 0:
        p = libc.malloc(700)
        libc.free(p)
        return bytearray(900)
    return deep(n - 1)


def gen(k):
    for i in range(k):
        yield bytearray(600 + i % 7)


def worker(rounds):
    for r in range(rounds):
        deep(r % 40)
        for b in gen(5):
            del b
        if r % 50 == 0:
            t = threading.Thread(target=lambda: [bytearray(1000) for _ in range(20)])
            t.start()
            t.join()


def daemon():
    while True:
        deep(10)


threads = [threading.Thread(target=worker, args=(int(sys.argv[1]),)) for _ in range(8)]
for t in threads:
    t.start()
for _ in range(4):
    threading.Thread(target=daemon, daemon=True).start()
for t in threads:
    t.join()
print("ok")
