#!/usr/bin/env bash
# Step time of the PyTorch loops (examples/python/torch_train_overhead.py) under this build against
# an older shim on the same machine, interleaved: bare, OLD_SHIM and this build, each with host
# stacks sampled (512K, the production mode) and in full.
#   OLD_SHIM=.devlib/libmemshim-<commit>.so OUT=/some/dir bash scripts/h200/step_ab.sh
set -u
. scripts/h200/env.sh
NEW=$PWD/target/release/libmemshim.so
OLD=${OLD_SHIM:?OLD_SHIM=path to an earlier libmemshim.so}
w=/tmp/memshim-step-ab && rm -rf "$w" && mkdir -p "$w"
step() { "$@" python3 examples/python/torch_train_overhead.py 30 "$model" 2>&1 | tail -1 | sed 's/ final_loss.*//'; }
for model in mlp transformer; do
    rounds="1 2"; [ $model = transformer ] && rounds=1
    for round in $rounds; do
        echo "== $model round $round"
        echo "bare         $(step env)"
        for mode in sampled full; do
            s=(); [ $mode = sampled ] && s=(MEMSHIM_SAMPLE_BYTES=512K)
            echo "old $mode $(step env "${s[@]}" MEMSHIM_LIB="$OLD" "$M" run -q -o "$w/o$model$round$mode" --)"
            echo "new $mode $(step env "${s[@]}" MEMSHIM_LIB="$NEW" "$M" run -q -o "$w/n$model$round$mode" --)"
        done
    done
done 2>&1 | tee "$OUT/step_ab.txt"
