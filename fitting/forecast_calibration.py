"""How well fitting.forecast's methods forecast, leave one run out, at cut points fixed before
scoring.

  python -m fitting.forecast_calibration RUN [RUN ...] --out DIR

For every run and cut, the pooled methods learn from the other runs (leaving out every run of the
same setting and seed too: a repeat of a seed on another device is not another run), read the run
only up to the cut, and forecast its behavior step (fitting.analyses.forecast_methods) for the
horizon of the run's own length. The cuts, each fixed before any score was seen but memorized-live:
steps 2,000, 3,000 and 4,000; the run's memorization plateau (where its memorized corner peaks,
fitting.ladder: known only once the run is over, so a hindsight cut); the checkpoint at which a live
reader sees the memorization (``memorized-live``: the held-out class read as one other corner in at
least half its samples at 2 checkpoints in a row, once the training classes are drawn; added
2026-11-29, after the first table was seen, because the plateau is not causal); the checkpoint after
its capability step (where over-prompting has shown the class at the 2 checkpoints that confirm it).
A run whose behavior the log cut there already shows is not forecast there (counted as ``already``).

Scored per method and cut:
  mae          the median absolute error of the behavior step. A forecast of "not by the horizon"
               counts as the horizon; a run that never composed counts as composing at its last
               step, and its error as the lower bound max(0, last step - forecast) (0 where the
               forecast lies past the end).
  coverage     the share of runs inside the 80% interval (a censored run is inside when the interval
               reaches past its last step); a method that gave no interval counts as not covering.
  brier        the Brier score of P(composes by the horizon) against whether it did (runs with a
               probability).
  n, censored, missing   runs forecast, of them never composed, of them with no forecast from the
                         method.

Writes DIR/calibration.json (every forecast and the scores) and DIR/calibration.md (the table).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.analyses import forecast_baselines as fb, forecast_methods as fm, reference_pool
from fitting.analyses.event_records import CalibrationRecord, ReferencePoolRecord
from fitting.analyses.capability_readings import capability
from fitting.analyses.events import run_events
from fitting.analyses.study_runs import PERSIST
from fitting.estimators.curves import threshold_step
from fitting.estimators.trajectory_turn import learned_from
from core.progress import bar as progress_bar
from core import cli
from core.trajectory import UNREADABLE, Trajectory, read_csv

FIXED_CUTS = (2000.0, 3000.0, 4000.0)
ALL = fm.METHODS + tuple(b for b in fm.BASELINES if b not in fm.METHODS)
CUTS = ("2000", "3000", "4000", "memorized", "memorized-live", "capability")


def cut_steps(
    e: dict, trajectories: Sequence[Trajectory], label: str = "11"
) -> dict[str, float | None]:
    """Each cut's step for a run. The capability cut is the capability curve's checkpoint after the
    capability step: the step is the first of the 2 checkpoints that hold it, so a log cut at the
    step itself cannot show it yet (the first table, 2026-11-27, cut there and its lag method never
    forecast)."""
    out = {str(int(c)): c for c in FIXED_CUTS}
    out["memorized"] = e.get("memorized_step")
    out["memorized-live"] = memorized_live(trajectories, label)
    cap = e["capability"].step if e.get("capability") else None
    curve = capability(trajectories, label)
    after = [] if cap is None or curve is None else [s for s in curve[0] if s > cap]
    out["capability"] = float(min(after)) if after else None
    return out


def memorized_live(trajectories: Sequence[Trajectory], label: str = "11") -> float | None:
    """The checkpoint at which a reader of the log so far sees the memorization: once the training
    classes are drawn, the held-out class read as one other corner in at least half its samples at 2
    checkpoints in a row (the second of them); None when it never is."""
    naive = [t for t in trajectories if t.protocol == "naive"]
    held = next((t for t in naive if t.label == label), None)
    if held is None:
        return None
    start = learned_from(held, naive)
    steps, seen = held.step[start:], []
    for corner, share in held.shares().items():
        if corner in (label, UNREADABLE):
            continue
        first = threshold_step(steps, share[start:], 0.5, persist=PERSIST)
        if first is not None:
            # dated to the first of the checkpoints that hold it, seen at the last of them
            seen.append(float(steps[np.searchsorted(steps, first) + PERSIST - 1]))
    return min(seen) if seen else None


def forecasts(runs: Sequence[Path], label: str = "11", leave: str = "run") -> list[dict]:
    """Every run forecast at every cut from the others: ``leave`` "run" drops the run (and its
    seed's repeats at its setting), "setting" every run at its separations (the registered test's
    runs are at new settings)."""
    events = [run_events(r, label) for r in runs]
    rows = []
    for run, e in progress_bar(list(zip(runs, events)), desc=f"leave one {leave} out", unit="run"):
        if leave == "setting":
            pool = fm.Pool([o for o in events if o["sep"] != e["sep"]])
        else:
            pool = fm.Pool([o for o in events if o is not e and not fm.same_run(o, e)])
        trajectories = read_csv(Path(run) / "trajectories.csv")
        end = e["behavior"].censored_at
        truth = e["behavior"].step
        for name, at in cut_steps(e, trajectories, label).items():
            if at is None or at >= end:
                continue
            r = fm.reading(trajectories, at, label, e["sep"])
            if r.behavior is not None:  # the log cut here already shows it
                rows.append({"run": str(run), "cut": name, "at": at, "already": True})
                continue
            made = [fm.anchor(r, pool, end), fm.clock(r, pool, end), fm.lag(r, pool, end)]
            made += fb.baselines(r, pool, end)
            rows.append(cut_row(run, name, at, truth, end, [m.to_json() for m in made]))
    return rows


def cut_row(run, name: str, at: int, truth, end, forecasts: list) -> dict:
    """One row of a calibration table: the forecasts made of ``run`` cut at step ``at`` (the cut
    ``name``), beside the truth (the behavior step, or None) and the log's end."""
    return {
        "run": str(run),
        "cut": name,
        "at": at,
        "already": False,
        "truth": truth,
        "end": end,
        "forecasts": forecasts,
    }


def write_reference(runs: Sequence[Path], label: str, path: Path) -> None:
    """The runs' events as a reference pool (one kind of run only)."""
    events = [run_events(r, label) for r in runs]
    kinds = {json.dumps(reference_pool.describe(e), sort_keys=True) for e in events}
    if len(kinds) != 1:
        raise cli.UsageError(
            f"--reference: the runs are of {len(kinds)} kinds ({sorted(kinds)}); give one"
        )
    kind = json.loads(kinds.pop())
    root = reference_pool.ROOT
    rows = []
    for r, e in zip(runs, events):
        p = Path(r).resolve()
        e = {**e, "run": str(p.relative_to(root)) if p.is_relative_to(root) else str(r)}
        rows.append(reference_pool.to_json(e, kind))
    ReferencePoolRecord(**kind, label=label, made_by=ReferencePoolRecord.WRITER, runs=rows).write(
        path
    )


def _score(rows: list[dict], method: str) -> dict:
    errors, covered, brier, missing, censored = [], [], [], 0, 0
    for row in rows:
        m = next(f for f in row["forecasts"] if f["method"] == method)
        truth, end = row["truth"], row["end"]
        censored += truth is None
        if m["behavior_step"] is None and m["p_compose"] is None:
            missing += 1
            continue
        guess = m["behavior_step"] if m["behavior_step"] is not None else end
        errors.append(max(0.0, end - guess) if truth is None else abs(guess - truth))
        lo, hi = m["interval"] or (np.nan, np.nan)
        hi = np.inf if hi is None else hi  # an unbounded upper end
        covered.append(bool(hi >= end) if truth is None else bool(lo <= truth <= hi))
        if m["p_compose"] is not None:
            brier.append((m["p_compose"] - (truth is not None)) ** 2)
    return {
        "n": len(rows),
        "censored": censored,
        "missing": missing,
        "mae": float(np.median(errors)) if errors else None,
        "coverage": float(np.mean(covered)) if covered else None,
        "brier": float(np.mean(brier)) if brier else None,
    }


def scores(rows: list[dict]) -> dict:
    out = {}
    for cut in CUTS:
        mine = [r for r in rows if r["cut"] == cut and not r["already"]]
        out[cut] = {"already": sum(r["cut"] == cut and r["already"] for r in rows)}
        for method in ALL:
            out[cut][method] = _score(mine, method) if mine else None
    return out


def table(s: dict) -> str:
    lines = [
        "| cut | method | runs (censored) | median abs. error | 80% coverage | Brier | no "
        "forecast |",
        "|---|---|---|---|---|---|---|",
    ]
    for cut, by in s.items():
        for method in ALL:
            v = by.get(method)
            if not v:
                continue
            fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
            lines.append(
                f"| {cut} | {method} | {v['n']} ({v['censored']}) | {fmt(v['mae'], ',.0f')} | "
                f"{fmt(v['coverage'], '.2f')} | {fmt(v['brier'], '.3f')} | {v['missing']} |"
            )
    return "\n".join(lines)


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument(
        "runs", type=Path, nargs="+", help="run folders (config.json, trajectories.csv, metrics)"
    )
    parser.add_argument("--class", dest="label", default="11")
    parser.add_argument(
        "--out", type=Path, required=True, help="the folder for calibration.json and .md"
    )
    parser.add_argument(
        "--leave",
        choices=("run", "setting"),
        default="run",
        help="what each forecast leaves out of the pool: its run (default) or every run at its "
        "setting",
    )
    parser.add_argument(
        "--reference",
        type=Path,
        help="also write the runs' events as a reference pool (fitting.analyses.reference_pool) "
        "to this file",
    )
    args = parser.parse_args(argv)
    if len(args.runs) < 4:
        raise cli.UsageError(
            f"give at least 4 runs (got {len(args.runs)}): each is forecast from the others"
        )
    out = cli.output_dir(args.out, "--out")
    if cli.checking(args):
        return 0
    if args.reference:
        write_reference(args.runs, args.label, cli.output_file(args.reference, "--reference"))
        print(f"wrote {args.reference}")
    rows = forecasts(args.runs, args.label, args.leave)
    s = scores(rows)
    CalibrationRecord(cuts=list(CUTS), scores=s, forecasts=rows).write(out / CalibrationRecord.FILE)
    (out / "calibration.md").write_text(table(s) + "\n")
    print(table(s))
    print(f"wrote {out / 'calibration.json'} and {out / 'calibration.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
