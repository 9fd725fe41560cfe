"""Input-bound through a DataLoader: two worker processes decode each sample in Python (a slow
per-sample transform), the model is one small linear layer, so the GPU waits for batches.
Expected: gpu_idle. Runs about 6 s. Prints "batches N"."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        row = [((i * 31 + k) % 97) / 97.0 for k in range(512)]
        s = 0.0
        for v in row:  # the decode
            s += v * v
        return torch.tensor(row), torch.tensor(s)


def main():
    model = torch.nn.Linear(512, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Slow(), batch_size=64, num_workers=2)
    end = time.monotonic() + 6.0
    n = 0
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = ((model(x).squeeze(1) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += 1
        if time.monotonic() > end:
            break
    torch.cuda.synchronize()
    print("batches", n)


if __name__ == "__main__":
    main()
