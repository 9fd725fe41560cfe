# Sourced by the GPU-machine scripts, from the repository root with target/release carried:
# $OUT (created), $M (the CLI), MEMSHIM_LIB (the shim), and libunwind from .devlib when the system
# has none (the H200 image does not: without it the shim falls back to libgcc's unwinder, several
# times slower on PyTorch's deep stacks).
OUT=${OUT:-/tmp/memshim-h200}
mkdir -p "$OUT"
M=$PWD/target/release/memshim
export MEMSHIM_LIB=${MEMSHIM_LIB:-$PWD/target/release/libmemshim.so}
ldconfig -p | grep -q 'libunwind.so.8 ' || export LD_LIBRARY_PATH=$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
