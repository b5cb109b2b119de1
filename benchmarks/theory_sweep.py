"""Benchmark: sweeps of the notebook model, batched and exact paths vs the authors' per-trajectory solve_ivp loop.

    python benchmarks/theory_sweep.py [--n 1000 10000] [--repeats 3]

For N notebook trajectories (a log-uniform in [0.2, 5], t in [0, 25], 200 output points) every
method runs at *matched accuracy*: its tolerance is the loosest of a ladder whose max error against
a tight reference (DOP853, rtol 1e-13, per trajectory) is <= 1e-6. The reference covers all
trajectories for N <= 1000 and a random 1000 of them above. Timings are the best of --repeats runs,
after warm-up and a pause of SETTLE_S (the last method's OpenMP workers spin for a while after their
parallel region, and on 2 cores slowed the next method by up to 2x: benchmarks/results/notes.md, 2026-12-04). The first sweep of a new process is reported on its own, with an empty kernel cache
(numba compiles) and again in a second process (theory.solvers.kernels loads the compiled code); the exact path's
first sweep in a new process is timed for notebook, eq1 and eq2 (the sympy derivation included, imports not).
The output floor is the time to write the (N, T, 2) result alone. The loop baselines are
measured at the smallest N and, being linear in N, scaled for the larger ones (marked '~').
The batched methods use numba's threads (NUMBA_NUM_THREADS: dopri shares out trajectories, exact its
blocks of columns from 2**21 path values); the exact path is timed on one thread too, and profiled there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from theory.solvers.integrate import integrate, one_numba_thread, time_grid  # noqa: E402
from theory.models.paper import notebook  # noqa: E402
from timing import best_time, cpu  # noqa: E402

TARGET = 1e-6
LADDER = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11]
T_EVAL = time_grid(25, 200)


SETTLE_S = 1.0  # seconds between methods: the last one's OpenMP workers stop spinning


def authors_rhs(a, s=3.0, k=0.1, t0=10.0):
    """sim.ipynb cell 1, by hand, as the authors wrote it (a Python function per trajectory)."""

    def rhs(t, z):
        alpha = 1 / (1 + np.exp(-k * (t - t0)))
        return [
            s * ((1 - z[0]) / (2 * a) + a / 2 * (alpha - z[0])),
            s * (a / 2 * (1 - z[1]) + (alpha - z[1]) / (2 * a)),
        ]

    return rhs


def loop(a_values, method, rtol):
    out = np.empty((len(a_values), T_EVAL.size, 2))
    for i, a in enumerate(a_values):
        sol = solve_ivp(
            authors_rhs(a),
            (0, 25),
            [0.5, 0.5],
            t_eval=T_EVAL,
            method=method,
            rtol=rtol,
            atol=rtol * 1e-2,
        )
        out[i] = sol.y.T
    return out


def batched(a_values, method, rtol):
    return integrate(
        notebook(), T_EVAL, {"a": a_values}, method=method, rtol=rtol, atol=rtol * 1e-2
    ).z


METHODS = {
    "loop RK45 (authors')": lambda a, r: loop(a, "RK45", r),
    "loop DOP853": lambda a, r: loop(a, "DOP853", r),
    "stacked solve_ivp": lambda a, r: batched(a, "stacked", r),
    "dopri (numba, batched)": lambda a, r: batched(a, "dopri", r),
    "exact (quadrature)": lambda a, r: batched(a, "exact", r),
}
LOOPS = [m for m in METHODS if m.startswith("loop")]


FIRST_SWEEP = """
import time
import numpy as np
from theory.solvers.integrate import integrate, time_grid
from theory.models.paper import {model}
start = time.perf_counter()
integrate({model}(), time_grid(25, 200), {values}, method="{method}")
print(time.perf_counter() - start)
"""
FIRST_VALUES = {
    "notebook": '{"a": np.linspace(0.2, 5, 1000)}',
    "eq1": '{"lam": np.c_[np.linspace(0.2, 5, 1000), np.ones(1000)], "t_switch": np.c_[np.linspace(2, 12, 1000), np.zeros(1000)]}',
    "eq2": '{"p": np.linspace(0, 1, 1000)}',
}


def first_sweep_in_new_processes(
    method: str = "dopri", model: str = "notebook"
) -> tuple[float, float]:
    """The first sweep's time (building the model included, imports not) in a fresh process with an empty kernel
    cache, then in a second."""
    import subprocess
    import tempfile

    code = FIRST_SWEEP.format(model=model, values=FIRST_VALUES[model], method=method)
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        times = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                ).stdout.split()[-1]
            )
            for _ in range(2)
        ]
    return times[0], times[1]


def output_floor(n: int) -> float:
    """Writing the output alone: an (N, T, 2) float64 array filled once (the floor of any integrator)."""

    def write():
        out = np.empty((n, T_EVAL.size, 2))
        out[:] = 0.5
        return out

    return best_time(write, 5)


def calibrate(name, a_ref, z_ref):
    """The loosest rtol of the ladder with max error <= TARGET on the reference set."""
    for rtol in LADDER:
        err = np.abs(METHODS[name](a_ref, rtol) - z_ref).max()
        if err <= TARGET:
            return rtol, err
    raise RuntimeError(f"{name}: no tolerance in the ladder reaches {TARGET}")


def first_calls() -> dict:
    """The cost of the first sweep: in a new process (cold and warm kernel cache), this process's first call,
    and the first exact sweep of each model."""
    cold, warm = first_sweep_in_new_processes()
    print(
        f"first sweep of a landscape in a new process (1,000 trajectories, compile included): "
        f"{cold:.2f} s with an empty kernel cache, {warm:.2f} s in the next process (target < 1 s)"
    )
    start = time.perf_counter()
    batched(np.array([1.0, 2.0]), "dopri", 1e-9)
    compile_s = time.perf_counter() - start
    print(
        f"this process's first call (from the user cache once any process compiled it): {compile_s:.2f} s"
    )
    exact_first = {model: first_sweep_in_new_processes("exact", model)[0] for model in FIRST_VALUES}
    print(
        "first exact sweep in a new process (1,000 trajectories, sympy included; target < 1 s): "
        + ", ".join(f"{model} {secs:.2f} s" for model, secs in exact_first.items())
    )
    return {
        "compile_s": compile_s,
        "first_sweep_cold_s": cold,
        "first_sweep_warm_s": warm,
        "first_exact_sweep_s": exact_first,
    }


def one_size(n: int, rng, repeats: int, loop_per_traj: dict) -> tuple[dict, float]:
    """Every method on n trajectories at its calibrated tolerance: (rows by method, the output floor). The loops
    are timed once, at the smallest n, and extrapolated (``loop_per_traj``) beyond it."""
    a = np.exp(rng.uniform(np.log(0.2), np.log(5), n))
    ref_idx = np.arange(n) if n <= 1000 else rng.choice(n, 1000, replace=False)
    z_ref = loop(a[ref_idx], "DOP853", 1e-13)
    print(f"\nN = {n} trajectories x {T_EVAL.size} points (reference on {ref_idx.size})")
    print(f"  {'method':<24} {'rtol':>7} {'max err':>9} {'time':>10} {'speed-up vs loop':>17}")
    rows = {}
    for name in METHODS:
        if name in LOOPS and name in loop_per_traj:
            rtol, err, per = loop_per_traj[name]
            rows[name] = {"rtol": rtol, "max_error": err, "seconds": per * n, "extrapolated": True}
            continue
        rtol, _ = calibrate(name, a[ref_idx], z_ref)
        z = METHODS[name](a, rtol)
        err = float(np.abs(z[ref_idx] - z_ref).max())
        time.sleep(SETTLE_S)
        secs = best_time(lambda: METHODS[name](a, rtol), 1 if name in LOOPS else repeats)
        rows[name] = {"rtol": rtol, "max_error": err, "seconds": secs, "extrapolated": False}
        if name in LOOPS:
            loop_per_traj[name] = (rtol, err, secs / n)
    return rows, output_floor(n)


def report(rows: dict, floor: float) -> None:
    """One size's table: error, time and speed-ups against the fastest loop and the authors' loop."""
    fastest_loop = min(rows[m]["seconds"] for m in LOOPS)
    for name, r in rows.items():
        r["speedup_vs_fastest_loop"] = fastest_loop / r["seconds"]
        r["speedup_vs_authors_loop"] = rows[LOOPS[0]]["seconds"] / r["seconds"]
        mark = "~" if r["extrapolated"] else " "
        print(
            f"  {name:<24} {r['rtol']:>7.0e} {r['max_error']:>9.1e} {mark}{r['seconds']:>8.4f} s "
            f"{r['speedup_vs_fastest_loop']:>9.0f}x fastest, {r['speedup_vs_authors_loop']:.0f}x authors'"
        )
    print(f"  {'output floor (writing z)':<24} {'':>7} {'':>9} {floor:>9.4f} s")
    exact_s = rows["exact (quadrature)"]["seconds"]
    print(
        f"  exact / output floor: {exact_s / floor:.1f}x (goal <= 2x at N = 10,000); exact vs the authors' "
        f"loop: {rows[LOOPS[0]]['seconds'] / exact_s:.0f}x (goal >= 1000x at N = 1,000); "
        f"dopri / exact: {rows['dopri (numba, batched)']['seconds'] / exact_s:.1f}x"
    )


def exact_on_one_thread(n: int, rng, repeats: int) -> float:
    """The exact path's time at n trajectories (rtol 1e-4, as calibrated) on one thread."""
    a = np.exp(rng.uniform(np.log(0.2), np.log(5), n))
    with one_numba_thread():
        batched(a, "exact", 1e-4)
        return best_time(lambda: batched(a, "exact", 1e-4), repeats)


def where_time_goes(n: int, rng, repeats: int = 5) -> list[dict]:
    """The exact path at n trajectories under cProfile, on one thread: each function's own time per call (ms) and
    share of the whole, largest first (the functions of theory/solvers that take at least 2% of it)."""
    import cProfile
    import pstats

    a = np.exp(rng.uniform(np.log(0.2), np.log(5), n))
    with one_numba_thread():  # cProfile sees the calling thread's work only
        batched(a, "exact", 1e-4)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(repeats):
            batched(a, "exact", 1e-4)
        profile.disable()
    stats = pstats.Stats(
        profile
    ).stats  # {(file, line, name): (calls, primitive, own, cumulative, callers)}
    total = sum(own for _, _, own, _, _ in stats.values())
    rows = [
        {"function": f"{Path(file).stem}.{name}", "ms": own / repeats * 1e3, "share": own / total}
        for (file, _, name), (_, _, own, _, _) in stats.items()
        if "theory" in Path(file).parts and own / total >= 0.02
    ]
    rows.append({"function": "numpy and the rest", "ms": 0.0, "share": 0.0})
    rows[-1]["share"] = 1 - sum(r["share"] for r in rows[:-1])
    rows[-1]["ms"] = rows[-1]["share"] * total / repeats * 1e3
    return sorted(rows, key=lambda r: -r["share"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    machine = f"{cpu()}, python {platform.python_version()}"
    load = os.getloadavg()[0]
    print(
        f"machine: {machine}; load average {load:.2f} at the start"
        + (" (not idle)" if load > 0.5 else "")
    )
    results = {
        "machine": machine,
        "load_at_start": load,
        **first_calls(),
        "target_max_error": TARGET,
        "sizes": {},
    }
    loop_per_traj = {}
    for n in sorted(args.n):
        rows, floor = one_size(n, rng, args.repeats, loop_per_traj)
        results.setdefault("output_floor_s", {})[n] = floor
        report(rows, floor)
        results["sizes"][n] = rows
    results["threads"] = numba.get_num_threads()
    results["exact_one_thread_s"] = {
        n: exact_on_one_thread(n, rng, args.repeats) for n in sorted(args.n)
    }
    print(
        f"\nthe exact path on 1 thread (above: {results['threads']}): "
        + ", ".join(f"N = {n}: {s * 1e3:.1f} ms" for n, s in results["exact_one_thread_s"].items())
    )
    results["exact_profile_n"] = max(args.n)
    results["exact_profile"] = where_time_goes(max(args.n), rng)
    print(f"\nwhere the exact path's time goes at N = {max(args.n)} (cProfile, own time per call):")
    for row in results["exact_profile"]:
        print(f"  {row['function']:<36} {row['ms']:>7.2f} ms {row['share']:>6.1%}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
