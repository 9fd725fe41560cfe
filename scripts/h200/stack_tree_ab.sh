#!/usr/bin/env bash
# Format 12's stack tree and the growing seen-stacks table on the H200, against an older build:
# PART=floor, the MLP step bare, with full stacks and in the production mode, with this build's shim
# and the old one's (scripts/h200/floor.sh); PART=job, a CUDA PyTorch job from start to report with
# both builds, each reporting its own trace (benches/torch_job.sh with DEVICE=cuda). Carry .h200
# (new/ and old/: stripped `memshim` and `libmemshim.so` of this build and the older one; bin/time:
# /usr/bin/time, which the image lacks) and .devlib (libunwind).
#   OUT=/some/dir PART=floor|job [ROUNDS=3] [STEPS=100] [JOB_ROUNDS=2] [JOB_STEPS=200] bash scripts/h200/stack_tree_ab.sh
set -u
mkdir -p target/release && cp .h200/new/memshim .h200/new/libmemshim.so target/release/
. scripts/h200/env.sh
case ${PART:-floor} in
floor)
    MODES="bare full full-before thin thin-before" ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-100} \
        BEFORE_LIB=$PWD/.h200/old/libmemshim.so OUT=$OUT bash scripts/h200/floor.sh
    ;;
job)
    TORCH_PY=python3 OLD=.h200/old NEW=.h200/new ROUNDS=${JOB_ROUNDS:-2} STEPS=${JOB_STEPS:-200} \
        DEVICE=cuda TIME=$PWD/.h200/bin/time bash benches/torch_job.sh 2>&1 | tee "$OUT/torch_job.txt"
    ;;
esac
