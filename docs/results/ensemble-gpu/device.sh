#!/usr/bin/env bash
# Issue #54's GPU line in one sitting on a lent GPU (the device tool runs this in the repository's root, $OUT
# comes back). Three parts, each under its own time limit so that one failing leaves the others' numbers:
#   1. 24 `small` runs (10,000 steps, 41 naive checkpoints) as one ensemble, end to end (e2e.log, e2e-runs.tgz:
#      every run's folder without its checkpoints);
#   2. the cost of over-prompting at every checkpoint (issue #57's runs' shape, not its seeds or settings):
#      16 members, 15,000 steps, stopped after its first checkpoints (op.log);
#   3. benchmarks/ensemble_speed.py on the GPU: one ensemble of K against K processes (ensemble_gpu.json).
# Every log line is prefixed with the Unix time it was written. Dry run on a CPU: PRESET=smoke K=3 OUT=/tmp/o.
set -u
export PYTHONUNBUFFERED=1
PRESET=${PRESET:-small} K=${K:-24} W=${W:-/tmp/ensemble-gpu}
T1=${T1:-360} T2=${T2:-60} T3=${T3:-120}
mkdir -p "$W" "$OUT"
# each line (tqdm's \r too) stamped as it comes
stamp() { python3 -c 'import io, sys, time
for line in io.TextIOWrapper(sys.stdin.buffer, newline=""):
    print(f"{time.time():.1f} {line.rstrip()}", flush=True)'; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available() and torch.cuda.get_device_name())'
  echo "cpus $(nproc)"; date -u; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== 1. $K $PRESET runs in one ensemble (limit $T1 s)"
date +%s.%N > "$OUT/e2e.start"
timeout "$T1" python3 -m empirical.ensemble --runs "$W/e2e" --preset "$PRESET" --seeds "0-$((K - 1))" 2>&1 | stamp \
    > "$OUT/e2e.log"
echo "exit ${PIPESTATUS[0]}"; tail -n 3 "$OUT/e2e.log"
tar czf "$OUT/e2e-runs.tgz" --exclude=checkpoints -C "$W" e2e

echo "== 2. over-prompting at every checkpoint, 16 members (limit $T2 s)"
timeout "$T2" python3 -m empirical.ensemble --runs "$W/op" --preset "$PRESET" --seeds 100-115 \
    --set steps=15000 --set protocols=overprompt 2>&1 | stamp > "$OUT/op.log"
echo "exit ${PIPESTATUS[0]}"; tail -n 3 "$OUT/op.log"

echo "== 3. ensemble against separate processes (limit $T3 s)"
timeout "$T3" python3 benchmarks/ensemble_speed.py --devices cuda --preset "$PRESET" --ks "1,8,$K" --steps 15 \
    --json "$OUT/ensemble_gpu.json" 2>&1 | stamp | tee "$OUT/bench.log"
echo "exit ${PIPESTATUS[0]}"
