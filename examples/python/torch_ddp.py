"""A DistributedDataParallel training loop for `torchrun --nproc-per-node N`, with a deliberate imbalance:
rank 1 trains on twice the batch and keeps every step's activations (a leak only it has).

Backend: argv[2], else NCCL when every rank can have its own GPU, else gloo with the ranks sharing the
GPUs (gloo stages CUDA tensors through host memory, so its all-reduces show up as copies).

Expected report (memshim run -- torchrun --nproc-per-node 2 torch_ddp.py [steps]):
- one trace per rank, named <exe>.<host>.rank<N>.<pid>.mshim, plus the launcher's;
- the ranks table has rank 0 and rank 1; rank 1's peak and leaked device memory are higher by its
  kept activations, 8 MiB a step (512 x 4096 float32), 160 MiB over 20 steps, which the imbalance
  finding names;
- with NCCL, NCCL's own device buffers are sites with owner `nccl`;
- with two or more GPUs, rank 0 also sends 8 tensors of 4 MiB to the next GPU itself (`x.to("cuda:1")`):
  its transfers have a `peer` row of 8 copies, 33554432 bytes.
Prints one line per rank: rank, backend, steps and the final loss.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
local = int(os.environ["LOCAL_RANK"])
gpus = torch.cuda.device_count()
backend = sys.argv[2] if len(sys.argv) > 2 else ("nccl" if gpus >= world else "gloo")
device = torch.device("cuda", local % gpus)
torch.cuda.set_device(device)
dist.init_process_group(backend)

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
).to(device)
ddp = DDP(model, device_ids=[device.index])
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
kept = []  # rank 1's leak

for step in range(STEPS):
    x = torch.randn(256 * (1 + rank), 1024, device=device)
    hidden = model[1](model[0](x))
    if rank == 1:
        kept.append(hidden.detach())  # 512 x 4096 float32 = 8 MiB a step
    loss = ddp(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

if rank == 0 and gpus > 1:
    # A peer copy a process makes itself, beside NCCL's: 4 MiB (1M float32) to the next GPU, 8 times.
    other = torch.device("cuda", (device.index + 1) % gpus)
    block = torch.ones(1 << 20, device=device)
    sent = [block.to(other) for _ in range(8)]
    torch.cuda.synchronize(other)

dist.barrier()
print(f"rank {rank} backend {backend} steps {STEPS} loss {loss.item():.6f}", flush=True)
dist.destroy_process_group()
