"""An out-of-memory error from fragmentation with mixed sizes: blocks of 3, 5 and 7 MiB are allocated in
turn (PyTorch carves blocks under 10 MiB out of 20 MiB segments, three or four to a segment) until
about 5 GiB of a 6 GiB share is reserved; every block but each third is freed, so each segment keeps one
and none can be given back; then one 1.5 GiB request is made.

Expected memshim report, native allocator: one OOM asking for 1.5 GiB, verdict fragmentation (about
3.6 GiB reserved but free, the largest free block at most 17 MiB), holders led by `allocate` line 21.
With expandable segments the request fits. Prints "oom" or "fits".
"""
import torch

MiB = 1 << 20
free, total = torch.cuda.mem_get_info()
torch.cuda.set_per_process_memory_fraction((6 << 30) / total)


def allocate(budget):
    blocks, used, sizes = [], 0, (3, 5, 7)
    while used < budget:
        n = sizes[len(blocks) % 3] * MiB
        blocks.append(torch.empty(n, dtype=torch.uint8, device="cuda"))
        used += n
    return blocks


kept = [b for i, b in enumerate(allocate(9 << 29)) if i % 3 == 2]
try:
    big = torch.empty(1536 * MiB, dtype=torch.uint8, device="cuda")
    print("fits")
except torch.OutOfMemoryError:
    print("oom")
