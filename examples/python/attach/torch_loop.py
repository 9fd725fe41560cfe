"""A small PyTorch training loop to attach to while it runs (`memshim attach PID`).

Trains a 3-layer MLP on random data for SECONDS_TO_RUN (default 30) seconds. Each step makes its batch on
the host (pageable memory) and copies it to the GPU (`upload`, host to device), and every 20th step
keeps one 4 MiB device tensor in a list (`remember`), so memory attached to later keeps growing;
every second it prints the step and the loss. With HOLD_CUPTI=1 it first subscribes to CUPTI's
callbacks itself (a callback that does nothing), as a profiler in the process would, so a tool that
attaches later cannot. Prints "torch_loop: ready pid N" once the first step ran, and "torch_loop:
done" at the end.
"""
import ctypes
import glob
import os
import sys
import time

import torch

SECONDS = float(os.environ.get("SECONDS_TO_RUN", "30"))
BATCH, WIDTH = 512, 1024
KEEP_EVERY = 20

CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)


def hold_cupti():
    """Subscribes to CUPTI from this process (the copy PyTorch loaded, else the first found)."""
    with open("/proc/self/maps") as maps:
        loaded = [line.split()[-1] for line in maps if "libcupti.so" in line]
    candidates = loaded + sorted(
        glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "**", "libcupti.so*"), recursive=True)
        + glob.glob("/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so*")
        + glob.glob("/usr/local/cuda*/lib64/libcupti.so*")
    )
    if not candidates:
        sys.exit("torch_loop: HOLD_CUPTI=1 but no libcupti was found")
    lib = ctypes.CDLL(candidates[0])
    handle = ctypes.c_void_p()
    keep = CALLBACK(lambda *args: None)
    result = lib.cuptiSubscribe(ctypes.byref(handle), keep, None)
    print(f"torch_loop: subscribed to CUPTI in {candidates[0]}: result {result}", flush=True)
    return keep, handle


def upload(x_host, y_host):
    return x_host.to("cuda"), y_host.to("cuda")


def remember(kept):
    kept.append(torch.empty(1 << 20, device="cuda"))


def main():
    held = hold_cupti() if os.environ.get("HOLD_CUPTI") == "1" else None
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, 1)
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    kept = []
    start = time.monotonic()
    last_print = start
    step = 0
    while time.monotonic() - start < SECONDS:
        x, y = upload(torch.randn(BATCH, WIDTH), torch.randn(BATCH, 1))
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % KEEP_EVERY == 0:
            remember(kept)
        if step == 0:
            print(f"torch_loop: ready pid {os.getpid()}", flush=True)
        if time.monotonic() - last_print >= 1.0:
            print(f"step {step} loss {loss.item():.4f} kept {len(kept)}", flush=True)
            last_print = time.monotonic()
        step += 1
    torch.cuda.synchronize()
    print(f"torch_loop: done after {step} steps, {len(kept)} tensors kept{' (CUPTI held)' if held else ''}", flush=True)


main()
