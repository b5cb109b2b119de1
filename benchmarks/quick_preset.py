"""Benchmark: does the `quick` preset show the paper's path in one sitting? Minutes and composition
step per seed.

    python benchmarks/quick_preset.py --json benchmarks/results/quick_preset.json [--seeds 0-4]
    python benchmarks/quick_preset.py --json F --seeds 0 --set precision=fp32   # the fp32 time
    python benchmarks/quick_preset.py --json F --at-once    # a GPU: the seeds side by side

Trains ``python -m empirical.train --preset quick`` once per seed, one run after another (never two
at once: each takes both cores), each in a process of its own, timed from the command's start to its
end (the probe loaded, the data drawn, every checkpoint evaluated: what a user waits for). Then
reads each run as python -m fitting.ladder does: what class 11 was memorized as, its turn, the step
from which its naive joint accuracy holds >= 0.5 (composed), and the final shares. The JSON is
written after every seed; rerunning skips the seeds it already holds for the same settings, so an
interrupted benchmark resumes (a run cut mid-way resumes from its checkpoint, and is then timed
from the resume: its minutes say so). ``--at-once`` starts the seeds together instead, each process
with an equal share of the cores: for a GPU, which one run leaves mostly idle (each seed's minutes
are then its own under that sharing; each seed's ``at_once`` and ``threads`` in the JSON say how
many runs this command started together and with how many torch threads each).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ensemble_pair import machine  # noqa: E402
from core.files import write_json  # noqa: E402
from empirical.ensemble import seed_list  # noqa: E402
from fitting.analyses.ladder_rows import row  # noqa: E402

GOAL = {"minutes": 15.0, "composed": 4, "of": 5}  # issue #76: at most 15 min, 4 of 5 seeds compose


def start(run: Path, seed: int, settings: list[str], threads: int | None = None):
    """Start (or finish) one seed's run in a process of its own; the process, its start time, and
    whether it started from nothing. With ``threads`` (runs side by side) its output goes to
    RUN.log beside the run folder instead of the terminal."""
    fresh = not (run / "checkpoints" / "last.pt").exists()
    sets = [f"--set={s}" for s in [f"seed={seed}", *settings]]
    command = [sys.executable, "-m", "empirical.train", "--preset", "quick", *sets]
    command += ["--out", str(run)]
    if not threads:
        return subprocess.Popen(command, cwd=ROOT), time.perf_counter(), fresh
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    run.parent.mkdir(parents=True, exist_ok=True)
    with open(run.parent / f"{run.name}.log", "a") as log:  # the child holds its own copy
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    return process, time.perf_counter(), fresh


def wait(process, started: float) -> float:
    """Wall minutes of a started run, once it ends; CalledProcessError if it failed."""
    if process.wait():
        raise subprocess.CalledProcessError(process.returncode, process.args)
    return (time.perf_counter() - started) / 60


def side_by_side(doc: dict, runs: dict, args, load: float) -> None:
    """Every seed of ``runs`` started at once; each recorded when it ends, timed to its own end
    (whichever ends first); SystemExit naming the seeds that failed, once all have ended."""
    threads = args.threads or max(1, (os.cpu_count() or 1) // len(runs))
    running = {seed: start(run, seed, args.set, threads) for seed, run in runs.items()}
    failed = []
    while running:
        for seed, (process, started, fresh) in list(running.items()):
            if process.poll() is None:
                continue
            minutes = (time.perf_counter() - started) / 60
            del running[seed]
            if process.returncode:
                failed.append(seed)
                continue
            line = measure(runs[seed], minutes, fresh, load)
            record(doc, seed, {**line, "at_once": len(runs), "threads": threads}, args.json)
        time.sleep(0.5)
    if failed:
        raise SystemExit(f"seeds {failed} failed: their output is in RUN.log beside each run")


def measure(run: Path, minutes: float, fresh: bool, load: float) -> dict:
    """One seed's line of the benchmark, from its folder."""
    r = row(run, "11")
    return {
        "run": str(run),
        "minutes": round(minutes, 2),
        "timed_from_start": fresh,
        "load_at_start": load,  # 1-minute load average before the run: ~0 means it ran alone
        "train_minutes": r["cost"]["minutes"],
        "steps_per_s": r["cost"]["steps_per_s"],
        "device": r["cost"]["device"],
        "precision": r["cost"]["precision"],
        "memorized": r["memorized"],
        "turn_step": r["turn"]["step"],
        "composed_step": r["composed_step"],
        "best": r["best"],
        "final_step": r["final_step"],
        "final": r["final"],
    }


def summary(lines: list[dict]) -> dict:
    composed = [x for x in lines if x["composed_step"] is not None]
    minutes = [x["minutes"] for x in lines]
    return {
        "seeds": len(lines),
        "composed": len(composed),
        "max_minutes": max(minutes, default=None),
        "composed_steps": [x["composed_step"] for x in lines],
        "meets_goal": len(lines) >= GOAL["of"]
        and len(composed) >= GOAL["composed"]
        and max(minutes) <= GOAL["minutes"],
    }


def report(doc: dict) -> str:
    head = "| seed | minutes | steps/s | memorized as | turn | composed | final shares |"
    out = [head, "|---|---|---|---|---|---|---|"]
    for seed, x in sorted(doc["seeds"].items(), key=lambda kv: int(kv[0])):
        m = x["memorized"]  # fitting.study's reading: {corner, share, step}, or None
        memo = f"{m['corner']} ({m['share']:.2f} at {m['step']:,.0f})" if m else "-"
        shares = ", ".join(f"{k} {v:.2f}" for k, v in (x["final"] or {}).items())
        steps = lambda v: "-" if v is None else f"{v:,.0f}"  # noqa: E731
        out.append(
            f"| {seed} | {x['minutes']:.1f} | {x['steps_per_s']:.2f} | {memo} | "
            f"{steps(x['turn_step'])} | {steps(x['composed_step'])} | {shares} |"
        )
    s = doc["summary"]
    out.append(
        f"\ncomposed in {s['composed']} of {s['seeds']} seeds; longest run {s['max_minutes']:.1f} min "
        f"(goal: {GOAL['composed']} of {GOAL['of']}, at most {GOAL['minutes']:.0f} min)"
    )
    return "\n".join(out)


def record(doc: dict, seed: int, line: dict, path: Path) -> None:
    """One seed's line into the results, written at once (atomic: an interrupted benchmark leaves
    the last whole file), and the table so far printed."""
    doc["seeds"][str(seed)] = line
    doc["summary"] = summary(list(doc["seeds"].values()))
    write_json(path, doc)
    print(report(doc), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, required=True, help="results (read first to resume)")
    parser.add_argument("--seeds", default="0-4", help="seeds, e.g. 0-4 or 0,2 (default 0-4)")
    parser.add_argument(
        "--runs", type=Path, default=Path("runs/quick-benchmark"), help="run folders"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="more --set for every run"
    )
    parser.add_argument(
        "--at-once",
        action="store_true",
        help="start the seeds together, the cores shared equally (for a GPU)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="with --at-once: torch threads a run (default: the cores over the seeds)",
    )
    args = parser.parse_args(argv)
    if args.threads is not None and (not args.at_once or args.threads < 1):
        parser.error(f"--threads {args.threads}: give a whole number >= 1, with --at-once")
    seeds = seed_list(args.seeds)
    doc = json.loads(args.json.read_text()) if args.json.exists() else {}
    if doc.get("settings", args.set) != args.set:
        parser.error(
            f"--json {args.json} holds runs with --set {doc['settings']}; give another file for "
            f"--set {args.set}"
        )
    doc.update(
        settings=args.set,
        machine={**machine(), "cores": os.cpu_count()},
        command="python -m empirical.train --preset quick --set seed=S "
        + " ".join(f"--set {s}" for s in args.set),
    )
    doc.setdefault("seeds", {})
    todo = [seed for seed in seeds if str(seed) not in doc["seeds"]]
    runs = {
        seed: args.runs / "-".join([f"seed{seed}", *args.set]).replace("=", "") for seed in todo
    }
    load = round(os.getloadavg()[0], 2)
    if args.at_once:
        if runs:
            side_by_side(doc, runs, args, load)
        return 0
    for seed, run in runs.items():
        process, started, fresh = start(run, seed, args.set)
        record(doc, seed, measure(run, wait(process, started), fresh, load), args.json)
        load = round(os.getloadavg()[0], 2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
