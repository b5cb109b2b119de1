#!/usr/bin/env bash
# The GPU line of issue #54, as run on a lent H100 in one call:
#   1. a seed sweep of 24 `small` runs (10,000 steps, 41 checkpoints) as one ensemble (python -m empirical.ensemble,
#      the stacked engine), trained for a fixed wall-clock time with every evaluation and save a run alone makes;
#   2. 16 members evaluated with over-prompting at every checkpoint, 15,000 steps (the shape of issue #57's
#      registered runs, at small's default separations and seeds 100-115: none of the registered settings);
#   3. benchmarks/member_conv.py: K members' convolutions five ways (vmap, grouped NCHW/NHWC, im2col + bmm, a loop);
#   4. benchmarks/ensemble_speed.py's GPU rows (training steps/s, ensemble against separate processes).
#
#   OUT=folder bash benchmarks/ensemble_gpu.sh [SECONDS_A_SWEEP] [KS]
#
# Writes into $OUT: sweep24.{log,json}, overprompt16.{log,json} (steps reached, training seconds, evaluation
# seconds, the command's wall-clock, and what the whole sweep would take at those rates), their logs without
# checkpoints (*.tgz), member_conv.{log,json}, bench.log and ensemble_gpu.json.
# A CPU check of this script: PRESET=smoke SET=probe=/tmp/p SEEDS24=0-1 SEEDS16=2-3 SECONDS_BENCH=5
set -u
OUT=${OUT:?set OUT to a folder for the results}
SECONDS_SWEEP=${1:-160}
KS=${2:-1,4,16,32}
PRESET=${PRESET:-small}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
nvidia-smi -L
$PY -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'

sweep() {  # NAME SECONDS SEEDS KEY=VALUE...: train for SECONDS, then summarize into $OUT/NAME.json
    local name=$1 seconds=$2 seeds=$3 runs=/tmp/ensemble-gpu/$1
    shift 3
    local sets=()
    for kv in ${SET:-} "$@"; do sets+=(--set "$kv"); done
    local start=$(date +%s)
    timeout "$seconds" $PY -m empirical.ensemble --runs "$runs" --preset "$PRESET" --seeds "$seeds" \
        "${sets[@]}" >"$OUT/$name.log" 2>&1
    echo "$name: exit $? after $(( $(date +%s) - start )) s"
    $PY benchmarks/ensemble_summary.py "$runs" --preset "$PRESET" --started "$start" \
        --json "$OUT/$name.json" --set ${SET:-} "$@"
    tar czf "$OUT/$name.tgz" --exclude=checkpoints --exclude='*.pt' -C /tmp/ensemble-gpu "$name"
}

sweep sweep24 "$SECONDS_SWEEP" "${SEEDS24:-0-23}"
sweep overprompt16 "${SECONDS_OVERPROMPT:-90}" "${SEEDS16:-100-115}" steps=15000 protocols=overprompt

timeout "${SECONDS_CONV:-120}" $PY benchmarks/member_conv.py --preset "$PRESET" --ks 4,24 \
    --json "$OUT/member_conv.json" 2>&1 | tee "$OUT/member_conv.log"
echo "member_conv: exit ${PIPESTATUS[0]}"

timeout "${SECONDS_BENCH:-280}" $PY benchmarks/ensemble_speed.py --devices cuda --ks "$KS" --steps 10 \
    --json "$OUT/ensemble_gpu.json" 2>&1 | tee "$OUT/bench.log"
echo "bench: exit ${PIPESTATUS[0]}"
