#!/usr/bin/env bash
# Builds the stand-in CUDA driver and the test programs:  tests/cuda/build.sh OUTDIR
#   OUTDIR/libcuda.so.1 (+ libcuda.so -> libcuda.so.1)   the stand-in (standin/libcuda_standin.c)
#   OUTDIR/libcupti.so                                    CUPTI's stand-in (standin/libcupti_standin.c)
#   OUTDIR/<name>                                         one per programs/<name>.c
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
"$cc" "${warn[@]}" -shared -fPIC -O1 -g -o "$out/libcupti.so" "$here/standin/libcupti_standin.c"

for src in "$here"/programs/*.c; do
    name=$(basename "$src" .c)
    if [ "$name" = direct_link ]; then
        "$cc" "${warn[@]}" -g -O0 -o "$out/$name" "$src" -L "$out" -lcuda -Wl,-rpath,"$out" -ldl
    else
        "$cc" "${warn[@]}" -g -O0 -o "$out/$name" "$src" -ldl
    fi
done
echo "built the stand-in driver and $(ls "$here"/programs/*.c | wc -l) programs into $out"
