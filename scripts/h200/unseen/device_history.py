"""A device leak by a kept reference: each step's loss tensor (with an 8 MiB activation kept
alongside) is appended to a history list, so device memory grows every step until exit.
Expected: torch step growth naming remember_step (device_history.py), 8 MiB a step.
Runs about 4 s. Prints "steps N kept M"."""
import time

import torch

history = []


def remember_step(act):
    history.append(act.detach().clone())


def main():
    w = torch.randn(1024, 1024, device="cuda")
    end = time.monotonic() + 4.0
    steps = 0
    while time.monotonic() < end:
        act = torch.randn(2048, 1024, device="cuda") @ w  # 8 MiB
        if steps % 5 == 0:
            remember_step(act)
        steps += 1
        time.sleep(0.01)
    torch.cuda.synchronize()
    print("steps", steps, "kept", len(history))


main()
