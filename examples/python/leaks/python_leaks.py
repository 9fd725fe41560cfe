"""Leaks from named Python functions, for memshim's e2e tests: each leak site must name the function,
file and line below. Everything held is still live when the process ends with os._exit, so the report's
leaks are exactly these (plus the interpreter's own).

    ctypes_leak      3 x malloc(70001)        line 25, called from main (line 43)
    bytearray_leak   bytearray(2000003)       line 29, called from main (line 44)
    ext_leak         heldext.hold(30011) x 2  line 34, called from main (line 45)
    thread_leak      2 x malloc(50007)        line 39, in the thread "worker"
"""
import ctypes
import os
import sys
import threading

import heldext

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
held = []


def ctypes_leak():
    for _ in range(3):
        held.append(libc.malloc(70001))


def bytearray_leak():
    held.append(bytearray(2000003))


def ext_leak():
    for _ in range(2):
        heldext.hold(30011)


def thread_leak():
    for _ in range(2):
        held.append(libc.malloc(50007))


def main():
    ctypes_leak()
    bytearray_leak()
    ext_leak()
    t = threading.Thread(target=thread_leak, name="worker")
    t.start()
    t.join()
    sys.stdout.flush()
    os._exit(0)


main()
