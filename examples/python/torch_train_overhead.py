"""A real training loop on synthetic data for measuring memshim's step-time overhead and checking that
the loss is unchanged. Prints one line: model, steps, median and mean step time in ms (after warm-up),
and the final loss.

Models (argv[2]): `transformer` (the default: a 6-layer encoder, d=512, batch 32x256, about 28 ms a
step on an H200) and `mlp` (24 Linear(256, 256) layers at batch 8: launch-bound, about 4 ms a step,
thousands of host malloc/free pairs a step).

Device (argv[3]): `cuda` (the default) or `cpu`, for a machine without a GPU (PyTorch's wheel from
PyPI): the same loop, where every tensor's memory is a host allocation.

With RECORD_HISTORY=1 in the environment the loop runs under PyTorch's own
`torch.cuda.memory._record_memory_history()` (stacks of every block, its peer for memshim's torch layer).

Run it bare and under memshim and compare:  python torch_train_overhead.py [steps] [model] [device]
"""
import os
import sys
import time

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
MODEL = sys.argv[2] if len(sys.argv) > 2 else "transformer"
DEVICE = sys.argv[3] if len(sys.argv) > 3 else "cuda"
WARMUP = 10


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


torch.manual_seed(0)
if MODEL == "mlp":
    layers = []
    for _ in range(24):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(DEVICE)
    head = torch.nn.Linear(256, 256).to(DEVICE)
    shape = (8, 256)
else:
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=6).to(DEVICE)
    head = torch.nn.Linear(512, 512).to(DEVICE)
    shape = (32, 256, 512)
if DEVICE == "cuda" and os.environ.get("RECORD_HISTORY") == "1":
    torch.cuda.memory._record_memory_history(max_entries=100000)
opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
g = torch.Generator(device=DEVICE).manual_seed(1)

times = []
for step in range(STEPS + WARMUP):
    x = torch.randn(*shape, device=DEVICE, generator=g)
    target = torch.randn(*shape, device=DEVICE, generator=g)
    sync()
    t0 = time.perf_counter()
    out = head(model(x))
    loss = torch.nn.functional.mse_loss(out, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sync()
    if step >= WARMUP:
        times.append(time.perf_counter() - t0)
times.sort()
median = times[len(times) // 2]
print(f"{MODEL} steps {STEPS} median_step_ms {median * 1e3:.3f} mean_step_ms {sum(times) / len(times) * 1e3:.3f} final_loss {loss.item():.6f}")
