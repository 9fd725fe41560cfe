"""CUDA graph capture beside event-timed copies: memshim must never break a capture.

memshim times every async copy of 64 KiB or more with two CUDA events and queries them from a helper
thread; a query while a global-mode capture is underway would invalidate the graph ("operation not
permitted when stream is capturing"). This script makes that moment as likely as it can: each round
issues 16 pinned 4 MiB host-to-device copies on a side stream (their events still in flight) and at
once captures a graph (torch.cuda.graph, capture_error_mode "global", the default) whose body copies a
pinned batch into a static input and runs a small MLP; the graph is replayed 20 times and its output
checked against the same computation run eagerly.

Expected: "graph ok rounds 30 max_err <1e-5" and exit 0, bare and under `memshim run`; the report's
HtoD pinned row has the side stream's 480 copies (16 x 30) GPU-timed, and the captured copies (one per
capture, recorded by the driver into the graph, not run) untimed.
"""
import sys

import torch

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).to(dev)
batch = torch.randn(256, 1024).pin_memory()
static_in = torch.zeros(256, 1024, device=dev)
side = torch.cuda.Stream()
chunks = [torch.randn(1 << 20).pin_memory() for _ in range(16)]   # 4 MiB each
targets = [torch.empty(1 << 20, device=dev) for _ in range(16)]

# Warm up on a side stream, as torch.cuda.graph's documentation asks.
warm = torch.cuda.Stream()
warm.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(warm), torch.no_grad():
    for _ in range(3):
        model(static_in)
torch.cuda.current_stream().wait_stream(warm)

max_err = 0.0
with torch.no_grad():
    for r in range(ROUNDS):
        with torch.cuda.stream(side):
            for c, t in zip(chunks, targets):
                t.copy_(c, non_blocking=True)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_in.copy_(batch, non_blocking=True)
            static_out = model(static_in)
        for _ in range(20):
            g.replay()
        torch.cuda.synchronize()
        want = model(batch.to(dev))
        max_err = max(max_err, (static_out - want).abs().max().item())
        side.synchronize()
        del g

print(f"graph ok rounds {ROUNDS} max_err {max_err:.2e}")
sys.exit(0 if max_err < 1e-4 else 1)
