#!/usr/bin/env bash
# Many training runs at once on one machine with a GPU: the device runs of issue #36, now a thin call of
# python -m pipeline.batch (its --help says the rest; the job lines are parsed there, in Python).
#
#   bash results/ladder/device.sh JOBS SECONDS PARALLEL [RUNS]
#
# RUNS defaults to runs/device; THREADS (environment, default 1) CPU threads per run; with OUT set (the device
# tool's output folder) what results/ keeps of every run, and the logs, are packed into OUT/runs.tgz.
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n '2,8p' "$0" >&2; exit 2; }
exec python -m pipeline.batch "$1" --seconds "$2" --parallel "$3" --runs "${4:-runs/device}" \
    --threads "${THREADS:-1}" ${OUT:+--pack "$OUT/runs.tgz"}
