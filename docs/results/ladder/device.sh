#!/usr/bin/env bash
# Many training runs at once on one machine with a GPU (no submitit needed): the device runs of issue #36.
#
#   bash docs/results/ladder/device.sh JOBS SECONDS PARALLEL [RUNS]
#
# JOBS: one run per line, "FOLDER --preset ... --set ...", # starts a comment. Every line is checked first
# (python -m empirical.job_file: a bad line stops the batch before anything trains); each becomes
# `python -m empirical.train ARGS --out RUNS/FOLDER` (RUNS default runs/device), PARALLEL of them at a time with
# THREADS CPU threads each (environment variable, default 1), in the file's order. Every run stops when SECONDS
# have passed since the start (training is kill-safe); rerun the same command to resume: finished runs (marked
# RUNS/FOLDER/.finished) are skipped. A run's output goes to RUNS/FOLDER.log. With OUT set (the device tool's
# output folder), what the docs keep of every run (keep.sh: config, logs, metrics, trajectories, the
# over-prompting record, the last sample grid; no checkpoints) is packed into OUT/runs.tgz at the end: the tool
# does not bring back files whose names hold '=' or ','.
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,14p' "$0" >&2; exit 2; }
JOBS=$1 SECONDS_LEFT=$2 PARALLEL=$3 RUNS=${4:-runs/device}
export DEADLINE=$(( $(date +%s) + SECONDS_LEFT )) RUNS THREADS=${THREADS:-1}
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
mkdir -p "$RUNS"

one() {
  local folder=$1; shift
  local out="$RUNS/$folder" left=$(( DEADLINE - $(date +%s) ))
  [[ -e "$out/.finished" ]] && return 0
  (( left > 20 )) || { echo "$folder: no time left" >&2; return 0; }
  mkdir -p "$out"
  if timeout --signal=TERM --kill-after=15 "$left" python -m empirical.train "$@" --out "$out" >>"$out.log" 2>&1; then
    touch "$out/.finished"; echo "$folder: finished"
  else
    echo "$folder: stopped (exit $?; see $out.log)"
  fi
}
export -f one
python -m empirical.job_file "$JOBS" --runs "$RUNS" || exit 2  # every line checked before anything trains
sed -e 's/\(^\|[[:space:]]\)#.*$//' "$JOBS" | grep -v '^[[:space:]]*$' | xargs -r -P "$PARALLEL" -L 1 bash -c 'one "$@"' _ || true
if [[ -n "${OUT:-}" ]]; then
  keep=()
  source "$(dirname "$0")/keep.sh"  # kept_files: what the docs keep of a run
  for run in "$RUNS"/*/*/ "$RUNS"/*/; do
    [[ -f "$run/config.json" ]] || continue
    while read -r f; do keep+=("$f"); done < <(kept_files "$run")
  done
  tar czf "$OUT/runs.tgz" --ignore-failed-read "${keep[@]}" $(find "$RUNS" -name '*.log') 2>/dev/null || true
  echo "packed $(( ${#keep[@]} )) files into $OUT/runs.tgz"
fi
