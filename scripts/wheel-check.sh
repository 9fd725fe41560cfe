#!/usr/bin/env bash
# Builds the wheel (maturin, from PyPI, in a private venv), installs it into a new venv and checks
# that what it installs works there: `memshim run -- python script.py` and `pytest --memshim`.
# Usage: scripts/wheel-check.sh [WORKDIR]   (default: a new temporary directory, removed after)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
keep=${1:+yes}
python3 -m venv "$work/build-venv"
"$work/build-venv/bin/pip" install -q 'maturin>=1.5,<2'
"$work/build-venv/bin/maturin" build --quiet --release -o "$work/dist"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$work"/dist/memshim-*.whl pytest
export PATH="$work/venv/bin:$PATH" XDG_CACHE_HOME="$work/cache"
unset MEMSHIM_LIB MEMSHIM_CLI
cd "$work"
printf 'held = [bytearray(4096) for _ in range(8)]\nprint("script ran")\n' > script.py
memshim run --quiet -o traces -- python script.py | grep -qx 'script ran'
ls traces/python*.mshim >/dev/null
cp "$OLDPWD/examples/python/pytest/test_limits.py" .
set +e
pytest -q -p no:cacheprovider --memshim --memshim-dir pytest-traces test_limits.py > pytest.out 2>&1
status=$?
set -e
grep -q 'limit_memory(24.0 MiB) broken: 30.0 MiB heap peak' pytest.out
grep -q '2 failed, 2 passed' pytest.out
[ "$status" -eq 1 ] || { cat pytest.out; echo "pytest exited $status, not 1" >&2; exit 1; }
echo "wheel-check: $(ls "$work"/dist): memshim run and pytest --memshim work from the installed wheel"
[ -n "$keep" ] || rm -rf "$work"
