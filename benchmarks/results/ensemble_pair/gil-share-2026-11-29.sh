#!/bin/bash
# The record of the 2026-11-29 measurement, as run (that session's registered training paused around it with
# SIGSTOP/SIGCONT): how much of a one-thread `small` run's update time holds the interpreter, sampled by py-spy
# 0.4.3 (pip install py-spy; not a dependency of the package) at 200 Hz, once counting every sample (--idle) and
# once only those holding the interpreter (--gil), twice; the timed 60 updates only. Not a tool.
cd /work/main
cat > /tmp/one.py <<'PY'
import sys, tempfile, time
from pathlib import Path
sys.path.insert(0, ".")
import torch
torch.set_num_threads(1)
from empirical.ensemble import open_members
from empirical.training.config import make_config
from empirical.training.threaded import updates
runs = open_members([make_config("small", ["seed=0"])], [Path(tempfile.mkdtemp()) / "m0"], progress=False)
runs[0].vdm.train()
updates(runs[0], 3)
t = time.perf_counter(); updates(runs[0], 60); dt = time.perf_counter() - t  # TIMED
print("steps/s", 60 / dt, "seconds", dt, flush=True)
PY
export OMP_NUM_THREADS=1
for i in 1 2; do for mode in idle gil; do
  py-spy record --nonblocking -r 200 --$mode -f raw -o /tmp/$mode-$i.txt -- python /tmp/one.py > /tmp/$mode-$i.out 2>&1
  n=$(grep "one.py:12" /tmp/$mode-$i.txt | awk '{s += $NF} END {print s}')
  secs=$(grep -o "seconds [0-9.]*" /tmp/$mode-$i.out | cut -d' ' -f2)
  python -c "print('$i $mode: $n samples in the timed updates over $secs s: %.4f of 200 Hz' % ($n / (200 * $secs)))"
done; done
