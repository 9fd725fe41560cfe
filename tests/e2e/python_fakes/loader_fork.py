"""Forks one worker that runs `torch.utils.data._utils.worker._worker_loop` (the stand-in next to this
file), as a DataLoader with num_workers=1 does; the parent waits for it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch.utils.data._utils.worker import _worker_loop  # noqa: E402

pid = os.fork()
if pid == 0:
    _worker_loop(3)
    os._exit(0)
os.waitpid(pid, 0)
