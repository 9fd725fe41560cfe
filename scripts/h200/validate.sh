#!/usr/bin/env bash
# Validates memshim on a real NVIDIA GPU (the H200 device machine), in one go.
# Run from the repository root after building here and carrying target/release/memshim and
# target/release/libmemshim.so:  OUT=/some/dir bash scripts/h200/validate.sh
# Writes at most 8 files into $OUT: env.txt, driver_api.txt, cuda_examples.txt, torch_leak.txt,
# overhead.txt, bench.txt, transfers.txt, reports.tar.gz (every JSON report).
# SECTIONS picks what runs (default: all): driver cuda torch overhead bench transfers
set -u
SECTIONS=${SECTIONS:-driver cuda torch overhead bench transfers}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
OUT=${OUT:-/tmp/memshim-h200}
mkdir -p "$OUT"
root=$(pwd)
M="$root/target/release/memshim"
export MEMSHIM_LIB="$root/target/release/libmemshim.so"
# libunwind from .devlib when the system has none (see env.sh): the full-stacks step time needs it.
ldconfig -p | grep -q 'libunwind.so.8 ' || export LD_LIBRARY_PATH=$root/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=/tmp/memshim-h200-work
rm -rf "$work" && mkdir -p "$work/json"
py=${PYTHON:-python3}

report() { # name tracedir: text report to stdout, JSON kept for the tarball
    "$M" report --top 5 "$2" 2>&1 | grep -v '^        .*\(libc_start\|_start \)' | head -${3:-60}
    "$M" report --format json "$2" > "$work/json/$1.json" 2>/dev/null
}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    nvcc --version | tail -n 2
    "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
    ldconfig -p | grep -m1 'libcuda.so.1'
    uname -a
} > "$OUT/env.txt" 2>&1

# 1. The stand-in tests' driver-API programs, against the real driver: dlopen + cuGetProcAddress_v2
#    (like nvcc's static runtime) and -lcuda.
want driver && {
    libcuda=$(ldconfig -p | awk '/libcuda.so.1 / {print $NF; exit}')
    for p in device_leak managed_pinned; do
        gcc -g -O0 -o "$work/$p" "tests/cuda/programs/$p.c" -ldl || { echo "FAIL build $p"; continue; }
        echo "### $p (real driver, dlopen + cuGetProcAddress_v2)"
        "$M" run -q -o "$work/t_$p" -- "$work/$p"; echo "exit $?"
        report "driver_$p" "$work/t_$p" 45
    done
    echo "### dlopen_tls: 40 libraries with TLS loaded while a thread waits (the PyTorch crash)"
    for i in $(seq 0 39); do gcc -shared -fPIC -g -DTLS_ID=$i -o "$work/libtls$i.so" examples/c/libtls.c; done
    gcc -g -O0 -o "$work/dlopen_tls" examples/c/dlopen_tls.c -ldl -pthread
    "$M" run -q -o "$work/t_tls" -- "$work/dlopen_tls" "$work"/libtls*.so; echo "exit $?"
    "$M" report "$work/t_tls" 2>&1 | grep -E '^(==|   |leaked heap)|leak_after_load' | head -6
    gcc -g -O0 -o "$work/direct_link" tests/cuda/programs/direct_link.c "$libcuda" -ldl \
        && { echo "### direct_link (real driver, -lcuda)"; "$M" run -q -o "$work/t_direct" -- "$work/direct_link"; echo "exit $?"; report driver_direct_link "$work/t_direct" 30; }
} > "$OUT/driver_api.txt" 2>&1

# 2. The CUDA runtime examples, built with nvcc's static runtime and with -cudart shared.
if want cuda && [ -f examples/cuda/run_h200.sh ]; then
    OUT="$work/cuda" bash examples/cuda/run_h200.sh > "$OUT/cuda_examples.txt" 2>&1
    cp "$work"/cuda/*.json "$work/json/" 2>/dev/null
fi

# 3. PyTorch: a training loop with a growing leak, default caching allocator and expandable segments.
want torch && {
    for mode in default expandable; do
        conf=""
        [ "$mode" = expandable ] && conf="expandable_segments:True"
        echo "### torch_growing_leak.py, PYTORCH_CUDA_ALLOC_CONF=$conf"
        echo "-- bare:"
        PYTORCH_CUDA_ALLOC_CONF=$conf "$py" examples/python/torch_growing_leak.py 60 2>&1 | tail -3
        echo "-- under memshim:"
        PYTORCH_CUDA_ALLOC_CONF=$conf "$M" run -q -o "$work/t_torch_$mode" -- "$py" examples/python/torch_growing_leak.py 60 2>&1 | tail -3
        "$M" info "$work/t_torch_$mode" 2>&1 | grep -E 'events|device_|cuda_|dropped|truncated' | head -12
        "$M" report --top 3 "$work/t_torch_$mode" 2>&1 | sed -n '/^device:/,$p' | grep -v '^        ' | head -40
        echo "-- growth sites (frames):"
        "$M" report --top 2 "$work/t_torch_$mode" 2>&1 | sed -n '/^growing device/,/^growing host\|finding/p' | head -24
        "$M" report --format json "$work/t_torch_$mode" > "$work/json/torch_$mode.json" 2>/dev/null
    done
} > "$OUT/torch_leak.txt" 2>&1

# 4. Step-time overhead and loss on a real model (transformer encoder), interleaved runs.
want overhead && {
    for round in 1; do
        echo "bare:        $("$py" examples/python/torch_train_overhead.py 40 2>&1 | tail -1)"
        echo "cuda only:   $(MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 "$M" run -q -o "$work/o_cuda_$round" -- "$py" examples/python/torch_train_overhead.py 40 2>&1 | tail -1)"
        echo "full stacks: $("$M" run -q -o "$work/o_full_$round" -- "$py" examples/python/torch_train_overhead.py 40 2>&1 | tail -1)"
    done
    du -sh "$work"/o_full_1 "$work"/o_cuda_1
    "$M" info "$work/o_full_1" 2>&1 | grep -E '^events|^  alloc|^dropped' | head -4
} > "$OUT/overhead.txt" 2>&1

# 5. This machine's ceilings, which the reports below then compare against.
want bench && "$M" bench > "$OUT/bench.txt" 2>&1

# 6. Transfers: the pageable-vs-pinned data loader in PyTorch, and the interception cost per copy.
want transfers && {
    echo "### torch_dataloader_pinned.py bare"
    "$py" examples/python/torch_dataloader_pinned.py 600 2>&1 | tail -4
    echo "### under memshim"
    "$M" run -q -o "$work/t_loader" -- "$py" examples/python/torch_dataloader_pinned.py 600 2>&1 | tail -4
    "$M" report --top 4 "$work/t_loader" 2>&1 | sed -n '/^transfers/,/^growing\|^$/p' | head -60
    "$M" report --format json "$work/t_loader" > "$work/json/torch_loader.json" 2>/dev/null
    echo "### copy_overhead.cu (static runtime): bare, then under memshim, then CUDA events only"
    nvcc -g -O2 -o "$work/copy_overhead" examples/cuda/copy_overhead.cu 2>&1 | tail -3
    "$work/copy_overhead"
    "$M" run -q -o "$work/t_overhead" -- "$work/copy_overhead"
    MEMSHIM_HEAP=0 MEMSHIM_MMAP=0 "$M" run -q -o "$work/t_overhead2" -- "$work/copy_overhead"
} > "$OUT/transfers.txt" 2>&1

tar -czf "$OUT/reports.tar.gz" -C "$work" json
echo "validation done; files in $OUT"
