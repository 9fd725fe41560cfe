"""Small objects grown through pymalloc's arenas and released before a normal exit.

Each of 20 steps keeps 5,000 objects of `bytes(200)` (233 bytes each, pymalloc's 240-byte size
class), so 100,000 objects, 24,000,000 bytes of object memory, all made on one line. pymalloc puts
them in arenas it maps itself (1 MiB each from CPython 3.10, 256 KiB before): the heap sees none of
them, only the list's own array. Then the list is cleared, pymalloc unmaps its empty arenas, and the
program exits normally.

Expected `memshim report`: the first item of the verdict is released growth of anonymous mappings at
`keep (grow_small_objects.py:19)`, peaking at 24,000,000 bytes rounded up to whole arenas (plus at
most a few arenas of pools the interpreter had begun), given back when the list is cleared.
"""
import time

STEPS, PER_STEP = 20, 5000


def keep(held):
    held.extend(bytes(200) for _ in range(PER_STEP))


def main():
    held = []
    for _ in range(STEPS):
        keep(held)
        time.sleep(0.02)
    print(len(held))
    held.clear()
    time.sleep(0.05)


main()
