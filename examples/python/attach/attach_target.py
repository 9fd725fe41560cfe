"""A running Python program for `memshim attach`.

Prints "attach_target: ready", then until a file named `stop` appears in its working directory,
keeps one bytearray(200_000) from make() per turn and sleeps 20 ms; then prints
"attach_target: done" and exits with status 5. The list that keeps them is made whole at the start,
so a turn allocates nothing else on the heap that outlives it.
"""
import os
import sys
import time


def make():
    return bytearray(200_000)


def main():
    kept = [None] * 100_000
    print("attach_target: ready", flush=True)
    n = 0
    while not os.path.exists("stop") and n < len(kept):
        kept[n] = make()
        n += 1
        time.sleep(0.02)
    print("attach_target: done", flush=True)
    sys.exit(5)


main()
