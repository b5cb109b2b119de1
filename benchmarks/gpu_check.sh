#!/usr/bin/env bash
# What only a GPU can check, in one call of a lent machine (issue #76):
#   1. the CUDA path's tests (tests/integration/test_cuda.py: a run stamped with the GPU and bf16, a resume
#      as if never stopped, a stacked member as its run alone), which CI, without a GPU, skips;
#   2. the `quick` preset on the GPU: 5 seeds in bf16 side by side, and seed 0 in fp32 beside them
#      (benchmarks/quick_preset.py --at-once): minutes, composition step and path of each.
#
#   OUT=folder COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_check.sh
#
# Writes into $OUT: env.txt, gpu_tests.log, quick_gpu.json and quick_gpu_fp32.json (as quick_preset.json),
# quick_bf16.log, quick_fp32.log, and quick_runs.tgz (the runs' logs and trajectories, no checkpoints).
# A CPU check of this script: SET="steps=20 evals=2" SEEDS=0 THREADS=1 QUICK_SECONDS=120 (the tests are skipped there).
set -u
OUT=${OUT:?set OUT to a folder for the results}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}
RUNS=${RUNS:-/tmp/quick-gpu}
mkdir -p "$OUT"
{
    echo "commit ${COMMIT:-unknown}"
    nvidia-smi -L
    $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available());
print("tf32: cudnn", torch.backends.cudnn.allow_tf32, "matmul", torch.backends.cuda.matmul.allow_tf32)'
    nproc
} 2>&1 | tee "$OUT/env.txt"

start=$(date +%s)
timeout "${TEST_SECONDS:-150}" $PY -m pytest -q -s -n0 -p no:cacheprovider -m gpu \
    tests/integration/test_cuda.py >"$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $? after $(($(date +%s) - start)) s"
tail -3 "$OUT/gpu_tests.log"

sets=()
for kv in ${SET:-}; do sets+=(--set "$kv"); done
start=$(date +%s)
timeout "${QUICK_SECONDS:-420}" $PY benchmarks/quick_preset.py --json "$OUT/quick_gpu.json" --runs "$RUNS" \
    --seeds "${SEEDS:-0-4}" --at-once --threads "${THREADS:-2}" ${sets[@]+"${sets[@]}"} >"$OUT/quick_bf16.log" 2>&1 &
bf16=$!
timeout "${QUICK_SECONDS:-420}" $PY benchmarks/quick_preset.py --json "$OUT/quick_gpu_fp32.json" --runs "$RUNS" \
    --seeds 0 --at-once --threads "${THREADS:-2}" ${sets[@]+"${sets[@]}"} --set precision=fp32 >"$OUT/quick_fp32.log" 2>&1 &
fp32=$!
wait $bf16
echo "quick bf16: exit $? after $(($(date +%s) - start)) s"
wait $fp32
echo "quick fp32: exit $? after $(($(date +%s) - start)) s"
tail -n 9 "$OUT/quick_bf16.log" "$OUT/quick_fp32.log"
tar czf "$OUT/quick_runs.tgz" --exclude=checkpoints --exclude='*.pt' -C "$(dirname "$RUNS")" "$(basename "$RUNS")"
