"""Benchmark: is K = 2 in one process (the threaded engine) as fast as two one-thread processes side by side?

    python benchmarks/ensemble_pair.py [--rounds 8] [--steps 30] [--preset small] [--ways W,...] [--json FILE]

Issue #54's CPU line, measured as a paired comparison: one timing of each way (by default these three)

  separate            two one-thread processes side by side (empirical.batch's way), each run alone;
  threaded-lockstep   one process, two members in two threads meeting after every update (empirical.ensemble
                      before 2026-11-29);
  threaded            one process, two members meeting only at records (a training record, an evaluation, a save:
                      here the whole timed span), as empirical.ensemble trains them now;

(threaded@5e-5: the threaded engine with another interpreter switch interval) in a round, the order rotated from round to round, then each round's ratios against ``separate`` (steps/s a run).
Prints every round and the median ratios; the median over rounds of a paired ratio is robust to the machine's drift
between rounds (one timing of one thing varies by +-10% on these 2 cores: docs/speed.md). Nothing else may run:
each timing owns both cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ensemble_speed import timed, way  # noqa: E402

WAYS = "separate,threaded-lockstep,threaded"


def one_round(preset: str, steps: int, order: list[str]) -> dict[str, float]:
    """Steps/s a run of each way, timed in ``order``: ``separate`` two one-thread processes, any other an engine
    spec of benchmarks/ensemble_speed.py's workers (two members in one two-thread process)."""
    out = {}
    for spec in order:
        if spec == "separate":
            out[spec] = timed(preset, 0, steps, "cpu", 1, 2)
        else:
            out[spec] = timed(preset, 2, steps, "cpu", 2, 1, spec)
    return out


def summary(rounds: list[dict[str, float]]) -> dict[str, float]:
    """The median over rounds of each way's ratio to ``separate`` in its round."""
    return {
        f"{way}_over_separate": round(statistics.median(r[way] / r["separate"] for r in rounds), 3)
        for way in rounds[0]
        if way != "separate"
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
    ways, rounds = args.ways.split(","), []
    bad = [w for w in ways if w != "separate" and way(w)[0] not in ("threaded", "stacked")]
    if "separate" not in ways or bad:
        parser.error(
            f"--ways {args.ways}: name separate and engines like threaded, threaded-lockstep@1e-4"
        )
    for i in range(args.rounds):
        order = ways[i % len(ways) :] + ways[: i % len(ways)]
        rounds.append(one_round(args.preset, args.steps, order))
        said = ", ".join(f"{w} {rounds[-1][w]:.3f}" for w in ways)
        print(f"round {i + 1}/{args.rounds} (steps/s a run): {said}", flush=True)
    medians = summary(rounds)
    print(
        "median ratio to two one-thread processes: "
        + ", ".join(f"{k} {v}" for k, v in medians.items())
    )
    if args.json:
        out = {"preset": args.preset, "steps": args.steps, "rounds": rounds, "median": medians}
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
