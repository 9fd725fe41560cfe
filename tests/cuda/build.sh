#!/usr/bin/env bash
# Builds the stand-in CUDA driver and the test programs:  tests/cuda/build.sh OUTDIR
#   OUTDIR/libcuda.so.1 (+ libcuda.so -> libcuda.so.1)   the stand-in (standin/libcuda_standin.c)
#   OUTDIR/libcupti.so                                    CUPTI's stand-in (standin/libcupti_standin.c)
#   OUTDIR/<name>                                         one per programs/<name>.c
#   OUTDIR/torch/lib/libc10_cuda.so + torch/version.py    PyTorch 2.11's allocator hooks' stand-in
#   OUTDIR/torch_old/...                                  the same library claiming to be PyTorch 2.3.1
# The programs dlopen "libcuda.so.1", so run them with LD_LIBRARY_PATH=OUTDIR; direct_link is linked
# with -lcuda and an rpath to OUTDIR. CC (default cc) and EXTRA_CFLAGS (e.g. -Werror) are honoured.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: tests/cuda/build.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cc=${CC:-cc}
warn=(-Wall -Wextra ${EXTRA_CFLAGS:-})

"$cc" "${warn[@]}" -shared -fPIC -O1 -g -o "$out/libcuda.so.1" "$here/standin/libcuda_standin.c"
ln -sfn libcuda.so.1 "$out/libcuda.so"
"$cc" "${warn[@]}" -shared -fPIC -O1 -g -o "$out/libcupti.so" "$here/standin/libcupti_standin.c" -ldl

cxx=${CXX:-c++}
for pkg in torch:2.11.0+standin torch_old:2.3.1; do
    dir="$out/${pkg%%:*}"
    mkdir -p "$dir/lib"
    "$cxx" "${warn[@]}" -std=c++17 -shared -fPIC -O1 -g -o "$dir/lib/libc10_cuda.so" \
        "$here/standin/libc10_cuda_standin.cpp" -ldl
    printf "__version__ = '%s'\ndebug = False\n" "${pkg#*:}" >"$dir/version.py"
done

for src in "$here"/programs/*.c; do
    name=$(basename "$src" .c)
    if [ "$name" = direct_link ]; then
        "$cc" "${warn[@]}" -g -O0 -o "$out/$name" "$src" -L "$out" -lcuda -Wl,-rpath,"$out" -ldl
    else
        "$cc" "${warn[@]}" -g -O0 -o "$out/$name" "$src" -ldl
    fi
done
echo "built the stand-in driver and $(ls "$here"/programs/*.c | wc -l) programs into $out"
