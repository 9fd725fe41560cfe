"""A list that grows 1 MiB a step for 40 steps and is released before a normal exit.

Expected `memshim report`: the verdict's first item is the released growth at grow (this file, the
append line): from 1.0 MiB to 40.0 MiB (40 bytearrays of 1 MiB + 1 byte: 41,943,080 bytes), given back
when grow returns; the heap's peak names the same line with those bytes in 40 blocks.
"""
import time


def grow(steps):
    held = []
    for _ in range(steps):
        held.append(bytearray(1 << 20))
        time.sleep(0.01)
    return len(held)


def main():
    print(grow(40))
    time.sleep(0.05)


main()
