"""pytest --memshim: fail a test that allocates more than it may, naming the line that did.

Markers (sizes like "24 MB", "1.5GiB", "512K" or bytes; every suffix is a power of 1024):
  @pytest.mark.limit_memory("24 MB")          the test's heap high-water mark
  @pytest.mark.limit_leaks("1 MB")            what the test allocated and still held at its end
  @pytest.mark.limit_device_memory("2 GiB")   the test's peak of CUDA device memory

``pytest --memshim`` runs pytest again under ``memshim run`` (with CPython's small objects each a
malloc, so every object has its line) unless the shim is already loaded; the figures of each marked
test are the report of its own window of the trace, so they are the numbers ``memshim report``
gives. The traces are kept (``--memshim-dir``).
"""

import os
import re
import subprocess
import sys
import tempfile

import pytest

import memshim

_CHILD = "MEMSHIM_PYTEST_CHILD"
_UNITS = {"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
          "g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}


def parse_size(text):
    """Bytes of a size written like '24 MB', '1.5GiB' or '4096' (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("%r is not a size (write it like '24 MB', '1.5GiB' or 4096)" % (text,))
    return int(round(float(m.group(1)) * (1 << _UNITS[m.group(2).lower()])))


def human(n):
    if n < 1024:
        return "%d B" % n
    v, unit = n / 1024.0, 0
    units = ["KiB", "MiB", "GiB", "TiB"]
    while v >= 1024.0 and unit + 1 < len(units):
        v, unit = v / 1024.0, unit + 1
    return "%.1f %s" % (v, units[unit])


def pytest_addoption(parser):
    group = parser.getgroup("memshim")
    group.addoption("--memshim", action="store_true", default=False,
                    help="check limit_memory / limit_leaks / limit_device_memory markers under memshim")
    group.addoption("--memshim-dir", default=None,
                    help="where the traces go (default: a new temporary directory)")


def pytest_configure(config):
    for line in ("limit_memory(size): fail when the test's heap peak exceeds size (needs --memshim)",
                 "limit_leaks(size): fail when the test leaves more than size allocated (needs --memshim)",
                 "limit_device_memory(size): fail when the test's device peak exceeds size (needs --memshim)"):
        config.addinivalue_line("markers", line)


def pytest_cmdline_main(config):
    if not config.getoption("memshim") or memshim.active():
        return None
    if os.environ.get(_CHILD):
        raise pytest.UsageError("--memshim: pytest was started under memshim, but the shim is not "
                                "loaded in it (a static Python, or LD_PRELOAD cleared?)")
    cli = memshim.cli()
    if cli is None:
        raise pytest.UsageError("--memshim: cannot find the memshim command; put it on PATH or set MEMSHIM_CLI")
    out = config.getoption("memshim_dir") or tempfile.mkdtemp(prefix="memshim-pytest-")
    argv = [cli, "run", "--quiet", "--python-malloc", "-o", out, "--",
            sys.executable, "-m", "pytest"] + list(config.invocation_params.args)
    env = dict(os.environ, **{_CHILD: "1", "MEMSHIM_CLI": cli})
    status = subprocess.call(argv, env=env, cwd=str(config.invocation_params.dir))
    sys.stderr.write("memshim: the traces are in %s\n" % out)
    return status


def _site(site):
    frames = site.get("frames", [])
    for f in frames:
        if f.get("kind") == "python":
            return "%s %s:%s" % (f.get("function"), os.path.basename(f.get("file") or "?"), f.get("line"))
    for f in frames:
        name = f.get("function") or "??"
        if not re.match(r"(malloc|calloc|realloc|operator new|_Py|Py)", name):
            where = os.path.basename(f["file"]) + ":%s" % f.get("line") if f.get("file") else ""
            return (name + " " + where).strip()
    return "an unknown site"


def _broken(kind, limit, p):
    if kind == "limit_memory":
        got, what, sites = p["heap"]["peak_bytes"], "heap peak", p["heap"].get("peak_sites", [])
    elif kind == "limit_leaks":
        host = p["leaks"]["host"]
        got, what = host["bytes"] - host["driver_bytes"], "left allocated at the end"
        sites = [s for s in host["sites"] if s.get("owner") != "cuda_driver"]
    else:
        got, what, sites = p["device"]["peak_bytes"], "device peak", []
    if got <= limit:
        return None
    msg = "%s(%s) broken: %s %s, %s over" % (kind, human(limit), human(got), what, human(got - limit))
    if sites:
        top = max(sites, key=lambda s: s["bytes"])
        msg += "; the most from %s (%s)" % (_site(top), human(top["bytes"]))
    return msg


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    limits = [(m.name, parse_size(m.args[0])) for name in ("limit_memory", "limit_leaks", "limit_device_memory")
              for m in item.iter_markers(name)]
    if not limits or not item.config.getoption("memshim"):
        return (yield)
    since = memshim.elapsed()
    result = yield
    until = memshim.elapsed()
    p = memshim.report_window(since, until)
    broken = [b for b in (_broken(kind, limit, p) for kind, limit in limits) if b]
    if broken:
        pytest.fail("memshim: " + "\nmemshim: ".join(broken), pytrace=False)
    return result
