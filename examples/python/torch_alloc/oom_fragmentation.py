"""An out-of-memory error from fragmentation: many 6 MiB blocks fill 20 MiB segments (three each),
two of every three are freed, so the cache holds gigabytes free in pieces of at most 12 MiB and no
segment is wholly free; then one 1 GiB request fails. A memory fraction keeps the GPU's share small
(about 7 GiB) so the test is quick.

Expected memshim report (PyTorch section), native allocator: one OOM asking for 1.0 GiB with the
verdict "fragmentation" (reserved but free above 1 GiB, largest free block 12 MiB), the holders led
by `fill` line 24. With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the request succeeds (the
free pages are unmapped and mapped again where they are needed): no OOM. Prints "oom" or "fits".
"""
import torch

MiB = 1 << 20
free, total = torch.cuda.mem_get_info()
fraction = (7 << 30) / total
torch.cuda.set_per_process_memory_fraction(fraction)
allowed = int(fraction * total)


def fill():
    blocks = []
    # Three 6 MiB blocks to a 20 MiB segment, until about 512 MiB of the share is left.
    for _ in range(3 * ((allowed - (512 * MiB)) // (20 * MiB))):
        blocks.append(torch.empty(6 * MiB, dtype=torch.uint8, device="cuda"))
    return blocks


def thin(blocks):
    return [b for i, b in enumerate(blocks) if i % 3 == 2]


def big():
    return torch.empty(1 << 30, dtype=torch.uint8, device="cuda")


kept = thin(fill())
try:
    x = big()
    print("fits")
except torch.OutOfMemoryError:
    print("oom")
