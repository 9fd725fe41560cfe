#!/usr/bin/env bash
# The reach features on the H200 with PyTorch: the --fail-on gate on a PyTorch device leak (the
# tensors held at exit, not the cache), the pprof export of device memory, and pytest --memshim on
# the bundled limit tests when the machine's Python has pytest.
#   OUT=/some/dir bash scripts/h200/reach.sh
set -u
. scripts/h200/env.sh
ex=examples/python/torch_alloc
w=/tmp/memshim-reach && rm -rf "$w" && mkdir -p "$w"
{
    echo "=== clone_leak with --fail-on leaked-device=16MiB (expect status 3)"
    "$M" run -q -o "$w/gate" --fail-on leaked-device=16MiB --fail-on peak-device=64GiB -- python3 "$ex/clone_leak.py" >"$w/gate.out" 2>&1
    echo "status $?"
    tail -3 "$w/gate.out"
    "$M" report "$w/gate" --fail-on leaked-device=1GiB >/dev/null; echo "report with a limit that holds: status $?"
    echo "=== pprof of device memory"
    "$M" export --pprof --memory device -o "$w/device.pb.gz" "$w/gate" && ls -la "$w/device.pb.gz"
    [ -n "${GATE_ONLY:-}" ] && exit 0
    echo "=== pytest --memshim"
    if python3 -c 'import pytest' 2>/dev/null; then
        cp examples/python/pytest/test_limits.py "$w/"
        (cd "$w" && PYTHONPATH="$OLDPWD/python" MEMSHIM_CLI="$M" python3 -m pytest -q -p no:cacheprovider \
            -p memshim.pytest_plugin --memshim --memshim-dir "$w/pytest" test_limits.py 2>&1 | tail -8)
    else
        echo "this machine's python3 has no pytest"
    fi
} 2>&1 | tee "$OUT/reach.txt"
