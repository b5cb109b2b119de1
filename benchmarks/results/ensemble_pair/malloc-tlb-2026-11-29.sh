#!/bin/bash
# The record of the 2026-11-29 measurement, as run (it paused that session's registered training around it with
# SIGSTOP/SIGCONT): the TLB shootdown counts and the glibc-settings rounds of docs/speed.md. Not a tool.
PID=$(pgrep -f "empirical.train --preset small --set sep" | head -1)
echo "pausing $PID at $(date +%T)"
kill -STOP $PID
trap 'kill -CONT $PID; echo "resumed $PID at $(date +%T)"' EXIT
cd /work/wt
tlb() { grep TLB /proc/interrupts | awk '{s=0; for(i=2;i<=NF;i++) if ($i ~ /^[0-9]+$/) s+=$i; print s}'; }
TUNE="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824"
for mode in plain tuned; do
  if [ $mode = tuned ]; then export GLIBC_TUNABLES=$TUNE; fi
  rm -rf /tmp/w && mkdir -p /tmp/w
  a=$(tlb); OMP_NUM_THREADS=2 python benchmarks/ensemble_speed.py --worker small 2 60 cpu /tmp/w/t threaded 1 2>/dev/null | tail -1 | sed "s/^/$mode threaded steps\/s span own: /"; b=$(tlb)
  echo "$mode threaded: TLB shootdowns $((b-a))"
  rm -rf /tmp/w && mkdir -p /tmp/w
  a=$(tlb)
  OMP_NUM_THREADS=1 python benchmarks/ensemble_speed.py --worker small 0 60 cpu /tmp/w/0 threaded 2 2>/dev/null | tail -1 | sed "s/^/$mode separate 0: /" &
  OMP_NUM_THREADS=1 python benchmarks/ensemble_speed.py --worker small 0 60 cpu /tmp/w/1 threaded 2 2>/dev/null | tail -1 | sed "s/^/$mode separate 1: /" &
  wait; b=$(tlb)
  echo "$mode separate: TLB shootdowns $((b-a))"
  unset GLIBC_TUNABLES
done
GLIBC_TUNABLES=$TUNE timeout 600 python -u benchmarks/ensemble_pair.py --rounds 8 --steps 30 --ways separate,threaded --json benchmarks/results/ensemble_pair/bf16-malloc-2026-11-29.json 2>&1 | grep --line-buffered -v "^train:"
