"""``python -m pipeline.sweep status DIR``: what each run of a sweep has done (done, running,
interrupted, failed with its error and log, not started), with a forecast's line where one was
written."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from core import cli
from core.files import read_json
from empirical.training import lock
from fitting.records import ForecastRecord
from pipeline import collect as collect_mod
from pipeline import sweep_plan as plan


def _forecast(run: Path) -> str:
    """'; class 11 composes ~ step 6,400 [5,200, 8,100], p 0.86 by 10,000 (...)' where a forecast
    step (or fitting.forecast --watch --json RUN/forecast.json) wrote one; '' otherwise."""
    path = run / ForecastRecord.FILE
    if not path.exists():
        return ""
    try:
        return "; " + ForecastRecord.read(path).line()
    except ValueError as err:
        return f"; forecast unreadable ({cli.one_line(str(err))})"


def status(argv: Sequence[str] | None) -> int:
    parser = cli.parser(
        "pipeline.sweep status",
        "What each run of a sweep has done: python -m pipeline.sweep status DIR\n\n"
        "Exit codes: 0 when no run or stage has failed (done, running, interrupted or not "
        "started), 1 when "
        "any has (each named with its error and log), 2 for bad input.",
    )
    parser.add_argument("dir", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    if cli.checking(args):
        return 0
    rows = collect_mod.run_folders(args.dir)
    spec = args.dir / "sweep.json"
    if spec.exists():  # the sweep's own list: runs not started yet have no folder
        doc = read_json(spec, "sweep file (JSON)")
        names = doc.get("runs", []) if isinstance(doc, dict) else None
        if not isinstance(names, list) or not all(
            isinstance(n, str) and n and "/" not in n for n in names
        ):
            raise ValueError(
                f"{spec}: not a sweep file written by python -m pipeline.sweep (it needs an "
                "object whose "
                "'runs' is a list of run folder names)"
            )
        rows += [args.dir / "runs" / n for n in names if not (args.dir / "runs" / n).is_dir()]
    if not rows:
        raise ValueError(
            f"{args.dir}: no runs (no run folder in runs/, no {spec.name} listing any); "
            "give the --out of python -m pipeline.sweep"
        )
    counts: dict[str, int] = {}
    for run in rows:
        state = plan.read_state(run)
        if lock.held(run):
            key, what = (
                "running",
                f"running ({lock.holder(run)}), step {collect_mod.last_step(run)}",
            )
        elif "failed" in state:
            f = state["failed"]
            key, what = (
                "failed",
                f"FAILED at {f.get('stage')}: {f.get('error')}; log: {f.get('log')}",
            )
        elif state["done"]:
            key, what = "done", "done: " + ", ".join(state["done"])
        elif (run / "config.json").exists():
            key, what = (
                "interrupted",
                f"interrupted at step {collect_mod.last_step(run)} (rerun the sweep to resume)",
            )
        else:
            key, what = "not started", "not started"
        counts[key] = counts.get(key, 0) + 1
        print(f"{run.name}: {what}{_forecast(run)}")
    print(f"{len(rows)} runs: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts.get("failed") else 0
