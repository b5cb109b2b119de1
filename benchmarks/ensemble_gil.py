"""Benchmark: what do two members in one process cost each other? (issue #54's last 1-2%, docs/speed.md)

    python benchmarks/ensemble_gil.py [--rounds 8] [--steps 30] [--preset small] [--json FILE]

A run's updates on one core are timed while the other core runs a neighbour that needs the interpreter almost
never (a loop of one-thread matrix products, which torch computes without holding it):

  thread    the neighbour is a thread of the run's own process;
  process   the neighbour is a process of its own.

If ``thread`` is as fast as ``process``, sharing a process costs nothing by itself (its memory map, allocator,
torch's state), and what two members in one process cost each other (benchmarks/ensemble_pair.py: 0.986 of
separate processes over their own updates) is their need of the interpreter at the same time. Rounds alternate
the order; printed: each round and the median of ``thread / process``. Nothing else may run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZE = 384  # the neighbour's matrices: a product takes a few milliseconds on one core


def neighbour(stop: threading.Event | None = None, ready: threading.Event | None = None) -> None:
    """Matrix products on one thread until ``stop`` is set (or forever: the process is killed); says it is at work
    through ``ready`` (a thread) or a line on its output (a process)."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(SIZE, SIZE), torch.randn(SIZE, SIZE)
    torch.mm(a, b)
    if ready is None:
        print("ready", flush=True)
    else:
        ready.set()
    while stop is None or not stop.is_set():
        torch.mm(a, b)


def member(preset: str, steps: int, folder: str, mode: str) -> float:
    """Steps/s of one run's updates beside the neighbour in ``mode`` (thread or process)."""
    import torch

    from empirical.ensemble import open_members
    from empirical.training.config import make_config
    from empirical.training.threaded import updates

    torch.set_num_threads(1)
    run = open_members([make_config(preset, ["seed=0"])], [Path(folder)], progress=False)[0]
    run.vdm.train()
    updates(run, 3)  # warm-up
    stop, ready = threading.Event(), threading.Event()
    if mode == "thread":
        other = threading.Thread(target=neighbour, args=(stop, ready), daemon=True)
        other.start()
        ready.wait()
    else:
        other = subprocess.Popen(
            [sys.executable, __file__, "--neighbour"], stdout=subprocess.PIPE, text=True
        )
        other.stdout.readline()  # "ready": the neighbour at work
    start = time.perf_counter()
    updates(run, steps)
    rate = steps / (time.perf_counter() - start)
    if mode == "thread":
        stop.set()
        other.join()
    else:
        other.kill()
        other.wait()
    return rate


def timed(preset: str, steps: int, mode: str) -> float:
    """One timing in a fresh process (its own start-up, nothing shared with the last)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, __file__, "--member", preset, str(steps), f"{tmp}/m", mode],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
    return float(out.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--neighbour"]:
        neighbour()
        return 0
    if argv[:1] == ["--member"]:
        preset, steps, folder, mode = argv[1:5]
        print(member(preset, int(steps), folder, mode))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8, help="rounds (default 8)")
    parser.add_argument("--steps", type=int, default=30, help="timed updates (default 30)")
    parser.add_argument("--preset", default="small", help="the run's preset (default small)")
    parser.add_argument("--json", type=Path, help="write every round and the median here")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.steps < 1:
        parser.error(f"--rounds {args.rounds} --steps {args.steps}: both must be at least 1")
    rounds = []
    for i in range(args.rounds):
        order = ["thread", "process"] if i % 2 == 0 else ["process", "thread"]
        rounds.append({mode: timed(args.preset, args.steps, mode) for mode in order})
        r = rounds[-1]
        print(
            f"round {i + 1}/{args.rounds}: thread {r['thread']:.3f}, process {r['process']:.3f} steps/s"
        )
    median = round(statistics.median(r["thread"] / r["process"] for r in rounds), 3)
    print(f"median thread / process: {median}")
    if args.json:
        doc = {"preset": args.preset, "steps": args.steps, "rounds": rounds, "median": median}
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
