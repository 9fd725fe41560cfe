"""memshim from inside a traced Python program.

Nothing here does anything unless the program runs under memshim (``memshim run -- python ...``):
the functions then talk to ``libmemshim.so`` through the small C API it exports; otherwise they
answer "not traced" and cost nothing. Imports only the standard library.

    import memshim
    with memshim.region("load_model") as r:
        model = load()
    print(r.report()["heap"]["peak_bytes"])   # what the region allocated at its high-water mark
"""

import ctypes
import json
import os
import shutil
import subprocess

__all__ = ["active", "elapsed", "flush", "trace_path", "region", "Region", "report_window", "cli"]

_LIB = ctypes.CDLL(None)


def _fn(name, restype, argtypes):
    f = getattr(_LIB, name, None)
    if f is not None:
        f.restype = restype
        f.argtypes = argtypes
    return f


_active = _fn("memshim_active", ctypes.c_int, [])
_elapsed = _fn("memshim_elapsed_ns", ctypes.c_uint64, [])
_flush = _fn("memshim_flush", ctypes.c_int, [ctypes.c_uint32])
_path = _fn("memshim_trace_path", ctypes.c_ssize_t, [ctypes.c_char_p, ctypes.c_size_t])


def active():
    """True when this process is being traced now."""
    return bool(_active and _active())


def elapsed():
    """Seconds since this process's trace began (what ``memshim report --since`` takes); 0.0 when
    not traced."""
    return _elapsed() / 1e9 if active() else 0.0


def flush(timeout=2.0):
    """Puts everything recorded so far into the trace file; True when it is there."""
    return bool(active() and _flush(int(timeout * 1000)) == 0)


def trace_path():
    """The path of this process's trace, or None when not traced."""
    if not active():
        return None
    buf = ctypes.create_string_buffer(os.pathconf("/", "PC_PATH_MAX") + 1)
    n = _path(buf, len(buf))
    return os.fsdecode(buf.value) if n >= 0 else None


def cli():
    """The memshim command: $MEMSHIM_CLI, or ``memshim`` on PATH."""
    return os.environ.get("MEMSHIM_CLI") or shutil.which("memshim")


def report_window(since, until):
    """The JSON report of this process's own trace between two ``elapsed()`` readings: what was
    allocated in that window, its peak, and what of it was still held at its end. Returns the
    process's entry of the report (a dict, its frames in place: see ``unpack_frames``), or raises
    RuntimeError saying why not."""
    path = trace_path()
    if path is None:
        raise RuntimeError("this process is not traced by memshim")
    if not flush():
        raise RuntimeError("memshim could not put the trace on disk in time")
    exe = cli()
    if exe is None:
        raise RuntimeError("cannot find the memshim command: put it on PATH or set MEMSHIM_CLI")
    argv = [exe, "report", "--format", "json", "--since", repr(since), "--until", repr(until), path]
    # The report runs untraced: the shim must not follow this process into its own reader.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    done = subprocess.run(argv, capture_output=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError("memshim report failed: " + done.stderr.decode(errors="replace").strip())
    return unpack_frames(json.loads(done.stdout))["processes"][0]


def unpack_frames(report):
    """A ``memshim report --format json`` document (memshim.report/2) with every ``frames`` list,
    written as indexes into its ``frame_table``, holding the frames themselves."""
    table = report.get("frame_table", [])

    def walk(v):
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                if k in ("frames", "marker") and isinstance(x, list) and all(isinstance(i, int) for i in x):
                    v[k] = [table[i] for i in x]
                elif k != "frame_table":
                    walk(x)

    walk(report)
    return report


class Region:
    """A stretch of the program, timed on the trace's clock; see ``region``."""

    def __init__(self, name):
        self.name = name
        self.since = None
        self.until = None

    def __enter__(self):
        self.since = elapsed()
        return self

    def __exit__(self, *exc):
        self.until = elapsed()
        return False

    def report(self):
        """The report of what this region allocated (see ``report_window``)."""
        if self.since is None or self.until is None:
            raise RuntimeError("the region %r has not ended yet" % self.name)
        return report_window(self.since, self.until)


def region(name):
    """A context manager that notes when a named stretch of the program began and ended, so its
    allocations can be reported on their own (``Region.report``). Harmless when not traced."""
    return Region(name)
