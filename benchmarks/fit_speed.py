"""Benchmark: fitting eq1 to 2-concept trajectories of 60 checkpoints (the parameter-recovery cases).

    python benchmarks/fit_speed.py [--n 100] [--boot-n 10]

Rows: one fit (median over the N trajectories); N fits in sequence (Wald intervals, the default);
the whole per-trajectory analysis of ``python -m fitting.fit`` without figures (thresholds, turn
with its bootstrap, model fit); residual-bootstrap intervals (B = 100), timed on --boot-n
trajectories and scaled to N. Baseline, side by side: what one writes by hand, least_squares
over a solve_ivp residual with scipy's own finite-difference Jacobian, single start from the truth
(on 5 trajectories). The numba compile happens once per process and is reported on its own.
Targets (2 cores): one fit <= 0.5 s; 100 trajectories <= 20 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fitting.estimators.model_fit import fit_model  # noqa: E402
from fitting.analyses.report import analyse  # noqa: E402
from fitting.analyses.synthetic import eq1_case  # noqa: E402


def baseline_fit(traj, truth):
    """least_squares over solve_ivp, '2-point' Jacobian, started at the truth (a generous baseline)."""
    t = traj.step.astype(float)

    def simulate(x):
        lam, t_sw, k, zb, z0 = np.exp(x[0:2]), x[2:4], np.exp(x[4]), x[5:7], x[7:9]

        def rhs(tt, z):
            m = zb + 0.5 * (1 + np.tanh(k * (tt - t_sw) / 2)) * (1 - zb)
            return lam * (m - z)

        return solve_ivp(rhs, (t[0], t[-1]), z0, t_eval=t, rtol=1e-8, atol=1e-10).y.T

    x0 = np.r_[
        np.log(truth["lam"]), truth["t_switch"], np.log(truth["k"]), truth["z_bias"], truth["z0"]
    ]
    return least_squares(lambda x: (simulate(x) - traj.z).ravel(), x0, method="trf")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--boot-n", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} cores; {args.n} eq1 trajectories x 60 checkpoints, noise sd 0.02")
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    cases = [eq1_case(rng)]  # the first simulation compiles the eq1 kernel
    print(f"numba compile (once per process): {time.perf_counter() - start:.2f} s")
    cases += [eq1_case(rng) for _ in range(args.n - 1)]
    fit_model(cases[0].trajectory)  # warm-up

    times = []
    start = time.perf_counter()
    for case in cases:
        t0 = time.perf_counter()
        fit_model(case.trajectory)
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - start

    start = time.perf_counter()
    for case in cases:
        analyse(case.trajectory, "eq1")
    full = time.perf_counter() - start

    start = time.perf_counter()
    for case in cases[: args.boot_n]:
        fit_model(case.trajectory, ci="bootstrap", n_boot=100)
    boot_each = (time.perf_counter() - start) / args.boot_n

    start = time.perf_counter()
    for case in cases[:5]:
        baseline_fit(case.trajectory, case.truth)
    base_each = (time.perf_counter() - start) / 5

    one = float(np.median(times))
    print(f"\n  {'what':<44} {'time':>10}   {'target':>8}   vs baseline")
    print(
        f"  {'one fit (median)':<44} {one:>8.3f} s   {'0.5 s':>8}   {base_each / one:5.1f}x faster"
    )
    print(f"  {'one fit (max)':<44} {max(times):>8.3f} s")
    print(
        f"  {f'{args.n} fits, Wald intervals':<44} {total:>8.2f} s   {'20 s':>8}   {base_each * args.n / total:5.1f}x faster"
    )
    print(f"  {f'{args.n} trajectories, whole analysis (no figures)':<44} {full:>8.2f} s")
    print(
        f"  {f'{args.n} fits, bootstrap intervals (B=100)':<44} ~{boot_each * args.n:>7.1f} s   (scaled from {args.boot_n})"
    )
    print(f"  {'baseline: one hand-written fit from the truth':<44} {base_each:>8.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
