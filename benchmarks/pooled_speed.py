"""Benchmark: the pooled eq1 fit (fitting.estimators.pooled.fit_law) of 20 runs x 60 checkpoints.

    python benchmarks/pooled_speed.py [--runs 20] [--boot 20]

Rows: the pooled fit with Wald intervals (target <= 30 s on 2 cores), with intervals from a bootstrap
over runs (B refits), the memorize law with an onset (--law memorize+onset), the coupled law with an
onset and the shared discrepancy (--law coupled+onset+mean), and side by side the
baseline of fitting every run on its own (fitting.estimators.model_fit, what one does without a law; it predicts
nothing for a new run). The numba compile of the eq1 kernel
happens once per process and is reported on its own. Recovery is printed too: the law's exponents
against the truth, and the held-out RMSE against the noise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fitting.estimators.model_fit import fit_model  # noqa: E402
from fitting.estimators.pooled import fit_law  # noqa: E402
from fitting.analyses.synthetic import TRUE_LAW, quadratic_steps, sweep_case  # noqa: E402


def timed(fn):
    """(what fn returns, seconds it took)."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def onset_fit(runs: int, steps, train: list[int]):
    """The memorize law with an onset on a sweep that has one: (fit, seconds)."""
    late = sweep_case(
        np.geomspace(0.005, 0.08, runs + 1),
        seed=0,
        noise=0.03,
        steps=steps,
        order="target-first",
        law=TRUE_LAW | {"b_t": 0.6, "t_ref": 1200.0},
        onset=400.0,
    )
    trajs = [late.trajectories[r] for r in train]
    return timed(lambda: fit_law(trajs, late.x[train], order="target-first", options=("onset",)))


def coupled_fit(runs: int, steps, train: list[int]) -> float:
    """Seconds of the coupled law with an onset and a mean discrepancy (its kernel compiled first)."""
    chain = sweep_case(
        np.geomspace(0.005, 0.08, runs + 1),
        seed=0,
        noise=0.03,
        steps=steps,
        order="target-first",
        gate="state",
        onset=400.0,
    )
    fit_law(chain.trajectories[:3], chain.x[:3], order="target-first", gate="state")  # compile
    trajs, x = [chain.trajectories[r] for r in train], chain.x[train]
    options = dict(order="target-first", gate="state", options=("onset",), discrepancy="mean")
    return timed(lambda: fit_law(trajs, x, **options))[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--boot", type=int, default=20)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    steps = quadratic_steps(60, 50, 5000)
    case = sweep_case(np.geomspace(0.005, 0.08, args.runs + 1), seed=0, noise=0.03, steps=steps)
    print(
        f"{os.cpu_count()} cores; {args.runs} runs x {steps.size} checkpoints, noise sd 0.03, 1 run held out"
    )
    print(
        f"numba compile and simulation of the sweep (once per process): {time.perf_counter() - start:.2f} s"
    )
    held = args.runs // 2
    train = [r for r in range(args.runs + 1) if r != held]
    trajs, x = [case.trajectories[r] for r in train], case.x[train]
    fit_law(trajs[:3], x[:3])  # warm-up
    fit, wald = timed(lambda: fit_law(trajs, x))
    boot = timed(lambda: fit_law(trajs, x, ci="runs", n_boot=args.boot))[1]
    per_run = timed(lambda: [fit_model(t) for t in trajs])[1]
    onset, with_onset = onset_fit(args.runs, steps, train)
    coupled = coupled_fit(args.runs, steps, train)

    pred = fit.predict(case.x[[held]], np.ones((1, 2)), steps)[0]
    rmse = float(np.sqrt(np.mean((pred - case.trajectories[held].z) ** 2)))
    print(f"\n  {'what':48s} {'time':>8s} {'target':>8s} {'vs per-run':>11s}")
    print(f"  {'pooled fit, Wald intervals':48s} {wald:7.2f}s {'30 s':>8s} {per_run / wald:10.1f}x")
    print(f"  {f'pooled fit, bootstrap over runs (B={args.boot})':48s} {boot:7.2f}s")
    print(
        f"  {'pooled memorize fit with an onset, Wald':48s} {with_onset:7.2f}s {'30 s':>8s} {per_run / with_onset:10.1f}x"
    )
    print(
        f"  {'pooled coupled fit, onset, discrepancy, Wald':48s} {coupled:7.2f}s {'30 s':>8s} {per_run / coupled:10.1f}x"
    )
    print(f"  {f'baseline: {len(trajs)} per-run eq1 fits':48s} {per_run:7.2f}s")
    print(
        f"\n  b_lam {fit.coefficients['b_lam']:.3f} (truth {TRUE_LAW['b_lam']}), b_t {fit.coefficients['b_t']:.3f} "
        f"(truth {TRUE_LAW['b_t']}); held-out RMSE {rmse:.4f} (noise 0.03); onset {onset.coefficients['t_on']:.0f} (truth 400)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
