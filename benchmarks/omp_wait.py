"""Benchmark: what OpenMP's passive waiting (OMP_WAIT_POLICY=PASSIVE: an idle thread sleeps instead of
spinning) does to the package's two multi-threaded CPU paths, each case in a fresh process (the
policy is read once, when the OpenMP runtime loads), the two policies alternated round by round.

    python benchmarks/omp_wait.py [--rounds 2] [--out benchmarks/results/omp_wait.json]

theory: the notebook model's sweep of N = 10,000 trajectories (numba's threads): dopri (rtol 1e-7),
the exact path (rtol 1e-4) right after a dopri sweep, and the exact path 1 s after one (best of 3
each). torch: AdamW steps/s of the small preset's net (24 px, channels (32, 64, 128), 1 block, batch
64, fp32) and the time to draw 128 images with 50 steps (benchmarks/train_speed.py's measure).
The question (benchmarks/results/notes.md, 2026-12-04): passive waiting removed the exact path's
slow-down right after dopri; does it cost torch's training, which runs many short parallel regions?
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from timing import best_time, cpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.files import write_json  # noqa: E402

POLICIES = ("default", "PASSIVE")
N = 10_000


def theory_case() -> dict:
    import numpy as np
    from theory_sweep import batched

    a = np.exp(np.random.default_rng(0).uniform(np.log(0.2), np.log(5), N))
    batched(a, "dopri", 1e-7)  # compiled or loaded, warm
    batched(a, "exact", 1e-4)
    dopri = best_time(lambda: batched(a, "dopri", 1e-7), 3)
    after, settled = [], []
    for _ in range(3):
        batched(a, "dopri", 1e-7)
        start = time.perf_counter()
        batched(a, "exact", 1e-4)
        after.append(time.perf_counter() - start)
        time.sleep(1.0)
        start = time.perf_counter()
        batched(a, "exact", 1e-4)
        settled.append(time.perf_counter() - start)
    return {
        "dopri_ms": 1e3 * dopri,
        "exact_after_dopri_ms": 1e3 * min(after),
        "exact_settled_ms": 1e3 * min(settled),
    }


def torch_case() -> dict:
    from train_speed import measure

    _, steps_per_s, sampling = measure(24, (32, 64, 128), 1)
    return {"train_steps_per_s": steps_per_s, "sample_128_s": sampling}


CASES = {"theory": theory_case, "torch": torch_case}


def run_case(case: str, policy: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    done = subprocess.run(
        [sys.executable, __file__, "--case", case],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # one case, this process
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(CASES[args.case]()))
        return 0
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: must be at least 1")
    rows = []
    for r in range(args.rounds):
        for case in CASES:
            for policy in POLICIES if r % 2 == 0 else POLICIES[::-1]:
                got = run_case(case, policy)
                rows.append({"round": r, "case": case, "policy": policy, **got})
                print(
                    f"round {r} {case:6s} {policy:8s} "
                    + "  ".join(f"{k} {v:.2f}" for k, v in got.items()),
                    flush=True,
                )
    keys = [k for row in rows for k in row if k not in ("round", "case", "policy")]
    best = {
        policy: {
            k: (max if k.endswith("per_s") else min)(
                row[k] for row in rows if row["policy"] == policy and k in row
            )
            for k in dict.fromkeys(keys)
        }
        for policy in POLICIES
    }
    print(f"\nbest over {args.rounds} round(s) on {cpu()}:")
    for k in dict.fromkeys(keys):
        print(f"  {k:22s} " + "  ".join(f"{p} {best[p][k]:8.2f}" for p in POLICIES))
    if args.out:
        write_json(args.out, {"machine": cpu(), "rounds": args.rounds, "rows": rows, "best": best})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
