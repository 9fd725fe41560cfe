"""Growth that was later released, in host and device memory: `collect` keeps one 1 MiB host buffer
(bytearray) and one 2 MiB device tensor every 10 ms for 40 steps, then returns and both are freed;
`idle` then runs for 0.5 s holding none of it.

Expected memshim report: a released growth of host memory at `collect` (the bytearray line) from
1.0 MiB to 40.0 MiB, and one of device (tensor) memory at the torch.empty line from 2.0 MiB to
80.0 MiB, each with when it climbed and when it was given back. Prints "released".
"""
import time

import torch

MiB = 1 << 20


def collect():
    host, device = [], []
    for _ in range(40):
        host.append(bytearray(MiB))
        device.append(torch.empty(2 * MiB, dtype=torch.uint8, device="cuda"))
        time.sleep(0.01)
    return len(host) + len(device)


def idle():
    time.sleep(0.5)


collect()
idle()
torch.cuda.synchronize()
print("released")
