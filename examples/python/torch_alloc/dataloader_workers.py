"""A DataLoader with worker processes (num_workers=2, pin_memory=True) feeding a small model on the
GPU: the workers build each batch (64 x 1024 float32, 256 KiB) in their own processes and send it
through shared memory; the main process pins it and copies it to the GPU.

Expected memshim report: the main process and its two DataLoader workers, each traced (role
"DataLoader worker"); in the main process BATCHES host-to-device copies of 256 KiB from pinned
memory, and steps found by the loop. Prints "batches N".
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

BATCHES = int(sys.argv[1]) if len(sys.argv) > 1 else 32


class Synthetic(Dataset):
    def __len__(self):
        return BATCHES * 64

    def __getitem__(self, i):
        return torch.full((1024,), float(i))


if __name__ == "__main__":
    model = torch.nn.Linear(1024, 1024).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Synthetic(), batch_size=64, num_workers=2, pin_memory=True)
    n = 0
    for x in loader:
        x = x.to("cuda", non_blocking=True)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
    torch.cuda.synchronize()
    print("batches", n)
