"""Wall time of one small sweep on this machine, run three ways: why the sweep caps each job's threads.

  python benchmarks/sweep_threads.py [--probe runs/probe/color-size-16px] [--steps 200] [--out DIR]

The same 4 runs (the tiny network, --steps updates each, seeds 0-3, a few evaluations) with the local
executor, as (a) one job at a time with every core, (b) --max-parallel 2 with the cores split (the
default cap), (c) --max-parallel 2 with every core each (oversubscribed: what the cap prevents).
Prints the wall time of each and the ratio to (a). An existing probe is reused (--probe) so only
training is timed; without one, the first setting trains it and is not comparable.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline.executor import cores


def run(out: Path, probe: str, steps: int, parallel: int, cpus: int) -> float:
    cmd = [
        sys.executable,
        "-m",
        "pipeline.sweep",
        "--preset",
        "tiny",
        "--grid",
        "seed=0,1,2,3",
        "--set",
        f"steps={steps}",
        "--set",
        "evals=3",
        "--set",
        "eval_dense=none",
        "--set",
        "samples=8",
        "--set",
        "samples_held_out=8",
        "--set",
        "grids=0",
        "--set",
        f"probe={probe}",
        "--executor",
        "local",
        "--max-parallel",
        str(parallel),
        "--cpus-per-job",
        str(cpus),
        "--out",
        str(out),
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--probe", default="runs/probe/color-size-16px")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the sweeps here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    n = cores()
    settings = [
        ("one job at a time, all cores", 1, n),
        ("2 at once, cores split (default)", 2, max(1, n // 2)),
        ("2 at once, all cores each (oversubscribed)", 2, n),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.out or Path(tmp)
        probe = str(Path(args.probe).resolve())
        rows = []
        for i, (name, parallel, cpus) in enumerate(settings):
            rows.append(
                (name, parallel, cpus, run(root / f"s{i}", probe, args.steps, parallel, cpus))
            )
    base = rows[0][3]
    print(f"4 tiny runs x {args.steps} steps, local executor, {n} cores")
    print(f"{'setting':45s} {'jobs':>4s} {'threads':>7s} {'wall s':>7s} {'ratio':>6s}")
    for name, parallel, cpus, wall in rows:
        print(f"{name:45s} {parallel:4d} {cpus:7d} {wall:7.1f} {wall / base:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
