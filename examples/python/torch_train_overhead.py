"""A real training loop (a small transformer encoder on synthetic data) for measuring memshim's
step-time overhead and checking that the loss is unchanged. Prints one line: steps, mean step time
in ms (after warm-up), and the final loss.

Run it bare and under memshim and compare:  python torch_train_overhead.py [steps]
"""
import sys
import time

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
WARMUP = 10

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=6).cuda()
head = torch.nn.Linear(512, 512).cuda()
opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
g = torch.Generator(device="cuda").manual_seed(1)

times = []
for step in range(STEPS + WARMUP):
    x = torch.randn(32, 256, 512, device="cuda", generator=g)
    target = torch.randn(32, 256, 512, device="cuda", generator=g)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = head(model(x))
    loss = torch.nn.functional.mse_loss(out, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if step >= WARMUP:
        times.append(time.perf_counter() - t0)
times.sort()
median = times[len(times) // 2]
print(f"steps {STEPS} median_step_ms {median * 1e3:.3f} mean_step_ms {sum(times) / len(times) * 1e3:.3f} final_loss {loss.item():.6f}")
