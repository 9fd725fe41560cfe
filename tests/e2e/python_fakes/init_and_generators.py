# Leaks from frames that CPython's own call paths push: `Holder()` called often enough that 3.13 and
# 3.14 specialise it (CALL_ALLOC_AND_ENTER_INIT pushes a line-less `__init__` shim frame between the
# caller and `Holder.__init__`), and a generator resumed by a for loop. os._exit keeps every block.
import os

keep = []


class Holder:
    def __init__(self):
        keep.append(bytearray(5000))


def build():
    for _ in range(200):
        Holder()


def produce():
    for _ in range(3):
        keep.append(bytearray(7000))
        yield


def main():
    build()
    for _ in produce():
        pass


main()
os._exit(0)
