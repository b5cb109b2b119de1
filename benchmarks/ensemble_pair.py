"""Benchmark: is K = 2 in one process (the threaded engine) as fast as two one-thread processes side by side?

    python benchmarks/ensemble_pair.py [--rounds 8] [--steps 30] [--preset small] [--ways W,...] [--json FILE]

Issue #54's CPU line, measured as a paired comparison. A round times each way once (by default these three):

  separate            two one-thread processes side by side (pipeline.batch's way), each run alone;
  threaded-lockstep   one process, two members in two threads meeting after every update (empirical.ensemble
                      before 2026-11-29);
  threaded            one process, two members meeting only at records (a training record, an evaluation, a save:
                      here the end of the timed span), as empirical.ensemble trains them now;

and any other engine spec of benchmarks/ensemble_speed.py (``threaded@5e-5``: another interpreter switch interval).
The order rotates from round to round; the processes of one timing start their timed spans together. Two rates a
run: over the span (the pace of a run, the members' wait for each other at the end included: runs per hour) and
over each member's own updates (without that wait: what is left is the members' cost to each other). Printed: each
round, and the median over rounds of each round's ratio to ``separate`` (robust to the machine's drift between
rounds: one timing of one thing varies by +-10% on these 2 cores, docs/speed.md). Nothing else may run: each
timing owns both cores. The JSON records the machine (CPU, bf16 instructions, precision, torch, commit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ensemble_speed import timed_both, way  # noqa: E402
from timing import cpuinfo, cpu_model  # noqa: E402

WAYS = "separate,threaded-lockstep,threaded"


def one_round(preset: str, steps: int, order: list[str]) -> dict[str, dict[str, float]]:
    """Steps/s a run of each way, timed in ``order`` ({way: {span, own}}: benchmarks/ensemble_speed.py's
    worker): ``separate`` two one-thread processes, any other an engine spec of that file's workers (two members
    in one two-thread process)."""
    out = {}
    for spec in order:
        if spec == "separate":
            span, own = timed_both(preset, 0, steps, "cpu", 1, 2)
        else:
            span, own = timed_both(preset, 2, steps, "cpu", 2, 1, spec)
        out[spec] = {"span": span, "own": own}
    return out


def summary(rounds: list[dict[str, dict[str, float]]]) -> dict[str, float]:
    """The median over rounds of each way's ratio to ``separate`` in its round: over the span (the pace of runs,
    the members' wait for each other at the end included) and over each member's own time (without it)."""
    out = {}
    for name in rounds[0]:
        if name == "separate":
            continue
        for kind, key in (("span", f"{name}_over_separate"), ("own", f"{name}_own_over_separate")):
            ratios = [r[name][kind] / r["separate"][kind] for r in rounds]
            out[key] = round(statistics.median(ratios), 3)
    return out


def ways_given(text: str) -> list[str]:
    """The --ways list; ValueError saying what is wrong."""
    ways = text.split(",")
    for w in ways:
        try:
            ok = w == "separate" or way(w)[0] in ("threaded", "stacked")
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"{w!r} is not a way: separate, or an engine like threaded, threaded-lockstep@1e-4"
            )
    if "separate" not in ways or len(set(ways)) != len(ways):
        raise ValueError("name separate (the baseline) and each way once")
    return ways


def machine() -> dict[str, str | None]:
    """What the numbers were measured on: the CPU, the precision `small` trains in here, torch, the commit."""
    import torch

    from empirical.nets.device import resolve_precision

    here = Path(__file__).parent
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=here)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        cwd=here,
    )
    flags = next((line for line in cpuinfo() if line.startswith("flags")), "").split()
    return {
        "cpu": cpu_model(),
        "avx512_bf16": "avx512_bf16" in flags,
        "precision": resolve_precision("auto", torch.device("cpu")),
        "torch": torch.__version__,
        # +changes: the tree differed from the commit (what was measured is not exactly it)
        "commit": (commit.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")) or None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8, help="paired rounds (default 8)")
    parser.add_argument("--steps", type=int, default=30, help="timed updates a run (default 30)")
    parser.add_argument("--preset", default="small", help="the runs' preset (default small)")
    parser.add_argument(
        "--ways",
        default=WAYS,
        help=f"what to time, separate among them (default {WAYS}; an engine may end in -lockstep, its members "
        "meeting after every update, and @SECONDS, the threaded engine's interpreter switch interval)",
    )
    parser.add_argument("--json", type=Path, help="write every round and the medians here")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.steps < 1:
        parser.error(f"--rounds {args.rounds} --steps {args.steps}: both must be at least 1")
    try:
        ways = ways_given(args.ways)
    except ValueError as err:
        parser.error(f"--ways {args.ways}: {err}")
    rounds = []
    for i in range(args.rounds):
        order = ways[i % len(ways) :] + ways[: i % len(ways)]
        rounds.append(one_round(args.preset, args.steps, order))
        said = ", ".join(
            f"{w} {rounds[-1][w]['span']:.3f} ({rounds[-1][w]['own']:.3f})" for w in ways
        )
        print(
            f"round {i + 1}/{args.rounds} (steps/s a run, over the span (own)): {said}", flush=True
        )
    medians = summary(rounds)
    print(
        "median ratio to two one-thread processes: "
        + ", ".join(f"{k} {v}" for k, v in medians.items())
    )
    if args.json:
        out = {"preset": args.preset, "steps": args.steps, "machine": machine(), "rounds": rounds}
        args.json.write_text(json.dumps(out | {"median": medians}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
