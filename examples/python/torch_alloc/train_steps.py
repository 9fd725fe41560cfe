"""A transformer training loop, found step by step by memshim without any annotation: pinned data
batches copied to the GPU, forward, backward, AdamW, a loss read back; from step 3 on the loop keeps
each step's output (`out.detach().clone()`, 16 x 256 x 512 float32 = 8 MiB) in a list by mistake.

Expected memshim report (PyTorch section):
- steps found by the loop's top-level line (<module>, the `batch = ...` line 27), STEPS of them, each with
  its allocated and reserved peaks, host heap peak, 8 MiB copied host to device (the batch and its
  target, 4 MiB each) and 4 B back (the loss);
- growth: "+8.0 MiB a step at <module> (train_steps.py:36) since step 3";
- memory by role at the peak: parameters (Module.to), gradients (backward), optimizer state
  (AdamW.step), activations (the forward pass), data batches (the copies), workspaces, cache free.
Prints "steps N kept M".
"""
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
model = torch.nn.TransformerEncoder(layer, num_layers=4).to("cuda")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
host_x = torch.randn(16, 256, 512).pin_memory()
host_y = torch.randn(16, 256, 512).pin_memory()
kept = []
for step in range(STEPS):
    batch = host_x.to("cuda", non_blocking=True)
    target = host_y.to("cuda", non_blocking=True)
    out = model(batch)
    loss = torch.nn.functional.mse_loss(out, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
    if step >= 2:
        kept.append(out.detach().clone())  # the bug: keeps 8 MiB a step
torch.cuda.synchronize()
print("steps", STEPS, "kept", sum(t.numel() * t.element_size() for t in kept))
