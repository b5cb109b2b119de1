"""Forecast, from a run in progress, when plain prompting will show its held-out class.

  python -m fitting.forecast RUN [--at STEP] [--horizon STEPS] [--pool RUN ...] [--json FILE]

RUN: a folder with a trajectory log (trajectories.csv: a training run of python -m empirical.train,
or a user's model walked with empirical.elicitation.walk, docs/your-model.md), and its config.json
where there is one (the separations and the configured steps; without one, give --horizon). The logs
are read only up to --at (default: the last checkpoint). Printed: one line per method and a summary
line; --json writes

  behavior_step           the forecast step at which naive prompting shows the class (joint accuracy
                          >= 0.5 held 2 checkpoints), by the first method that gives a forecast (a
                          step, or a probability of none by the horizon: anchor, then clock, then
                          lag); null when already observed or not expected by the horizon
  interval                its 80% interval [low, high]
  p_compose               the probability that it comes by the horizon (default: the run's
                          configured steps)
  observed_behavior_step  when it is already seen by the cut
  pending_behavior_step   where the last checkpoints by the cut read the class at >= 0.5 but too few
                          to confirm it: the step the behavior will be dated to if the next
                          checkpoint holds (null otherwise)
  method, at, horizon     which method, the cut, the horizon
  methods                 every method's forecast (fitting.analyses.forecast_methods explains each)

The methods (anchor, clock, lag) and the pooled baselines (blind, setting, base rate) learn from
the package's reference runs of the run's preset, resolution and concepts (fitting/reference/, read
from the run's config.json), or from --pool's run folders instead (never the run forecast: the run
itself, a copy of its log, or another run of its seed at its separations is dropped from the pool).
A run without config.json (a walk of your own model) has no reference runs: give --horizon and a
--pool of your own runs.

--watch SECONDS follows a run that is training: every SECONDS it looks for a new checkpoint in the
log and, when there is one, forecasts again from it (one summary line each, --json rewritten), until
naive prompting shows the class or the log reaches the horizon (Ctrl-C stops it).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import Sequence

from fitting.analyses import forecast_baselines as fb, forecast_methods as fm, reference_pool
from fitting.records import ForecastRecord
from fitting.analyses.events import run_events
from core import cli
from core.run_config import read_run_config
from core.trajectory import read_csv


def _cut(run: Path, trajectories, cfg: dict, at: float | None, horizon: float | None):
    """(at, horizon), checked: a finite cut after 0, a finite horizon from the flag or the run's
    config."""
    last = max(float(t.step[-1]) for t in trajectories)
    at = last if at is None else at
    if not (0 < at < float("inf")):
        raise cli.UsageError(
            f"--at {at:g}: give a step > 0 (the run's checkpoints reach {last:,.0f})"
        )
    if horizon is not None and not 0 < horizon < float("inf"):
        raise cli.UsageError(
            f"--horizon {horizon:g}: give the step the forecast is for (a finite step > 0)"
        )
    if not (horizon or cfg.get("steps")):
        # the log's last step would tell a forecast at an earlier cut how long the run went on
        raise cli.UsageError(
            f"{run}: no config.json giving the run's steps: give --horizon STEPS, the step the "
            "forecast is for"
        )
    horizon = float(horizon or cfg["steps"])
    if horizon < at:
        raise cli.UsageError(f"--horizon {horizon:,.0f} is before --at {at:,.0f}")
    return at, horizon


def forecast(
    run: Path,
    at: float | None,
    horizon: float | None,
    pool: fm.Pool | None,
    label: str = "11",
    pool_info: dict | None = None,
) -> dict:
    trajectories = read_csv(run / "trajectories.csv")
    cfg = _config(run)
    at, horizon = _cut(run, trajectories, cfg, at, horizon)
    r = fm.reading(trajectories, at, label, cfg.get("sep"))
    methods = (
        []
        if pool is None
        else [fm.anchor(r, pool, horizon), fm.clock(r, pool, horizon), fm.lag(r, pool, horizon)]
    )
    first = next((m for m in methods if m.step is not None or m.p_compose is not None), None)
    seen = r.behavior is not None
    reason = None
    if first is None and not seen:
        reason = (
            "; ".join(f"{m.method}: {m.note}" for m in methods)
            if methods
            else (pool_info or {}).get("why", "no pool of runs like this one: give --pool")
        )
    return {
        "run": str(run),
        "class": label,
        "at": at,
        "horizon": horizon,
        "observed_behavior_step": r.behavior,
        "pending_behavior_step": r.floor if r.pending else None,
        "behavior_step": None if seen or first is None else first.step,
        "interval": None
        if seen or first is None or first.interval is None
        else list(first.interval),
        "p_compose": 1.0 if seen else (None if first is None else first.p_compose),
        "method": "observed" if seen else ("none" if first is None else first.method),
        "methods": [m.to_json() for m in methods],
        "baselines": [m.to_json() for m in fb.baselines(r, pool, horizon)],
        "pool": pool_info,
        "reason": reason,
    }


def _config(run: Path) -> dict:
    return read_run_config(run, required=False).get("train", {})


def summary(doc: dict) -> str:
    line = f"{doc['run']}: {ForecastRecord.from_json(doc).line()}"
    if doc.get("pending_behavior_step") is not None:
        line += (
            f" [read at >= 0.5 from {doc['pending_behavior_step']:,.0f}, not yet held 2 "
            "checkpoints: "
            "one more confirms it there]"
        )
    info = doc.get("pool") or {}
    if info.get("runs"):
        line += f" [learned from {info['runs']} {info.get('source', 'pool')} runs]"
    return line


def watch(
    run: Path,
    every: float,
    horizon: float | None,
    pool: fm.Pool | None,
    label: str,
    out: Path | None,
    pool_info: dict | None = None,
    sleep=time.sleep,
    looks: int | None = None,
) -> int:
    """Forecast at each new checkpoint of a run in training (``looks``: stop after that many, for
    tests)."""
    log, seen = run / "trajectories.csv", None
    try:
        while looks is None or looks > 0:
            stamp = log.stat().st_mtime_ns if log.exists() else None
            if stamp is not None and stamp != seen:
                seen = stamp
                doc = forecast(run, None, horizon, pool, label, pool_info)
                print(f"{time.strftime('%H:%M:%S')} {summary(doc)}", flush=True)
                if out:
                    ForecastRecord.from_json(doc).write(out)
                if doc["observed_behavior_step"] is not None or doc["at"] >= doc["horizon"]:
                    return 0
            looks = None if looks is None else looks - 1
            sleep(every)
    except KeyboardInterrupt:
        print("stopped watching", file=sys.stderr)
    return 0


def _others(run: Path, pool: list[Path], label: str, mix: bool = False) -> list[dict]:
    """The pool's events, without the run: its folder, a copy of its log, a run of its seed at its
    separations. A pool run of another preset, resolution or concept set is refused unless
    ``mix``."""
    cfg, log = _config(run), (run / "trajectories.csv").read_bytes()
    mine = {"seed": cfg.get("seed"), "sep": dict(cfg["sep"])} if cfg.get("sep") else None
    kind = _kind(run)
    out = []
    for p in pool:
        copy = (p / "trajectories.csv").exists() and (p / "trajectories.csv").read_bytes() == log
        if p.resolve() == run.resolve() or copy:
            continue
        other = reference_pool.mismatch(kind, _kind(p))
        if other and not mix:
            yours = f" ({run} has no config.json: give runs of your own model)" if not cfg else ""
            raise cli.UsageError(
                f"--pool {p}: not a run like {run} ({other}){yours}; give runs of the same "
                "preset, resolution and concepts, or --mix-pool to learn from them anyway"
            )
        e = run_events(p, label, own=True)  # a run of the user's own model lacks config.json
        if mine is None or not fm.same_run(e, mine):
            out.append(e)
    return out


def _kind(run: Path) -> dict:
    """What a pool run must share with the run: its train config's preset, resolution and concepts;
    for a run without config.json (a model of the user's own) no preset or resolution, and the
    concepts its log's z_ columns name."""
    cfg = _config(run)
    if cfg:
        return reference_pool.describe(cfg)
    with open(run / "trajectories.csv", newline="") as f:
        header = next(csv.reader(f), [])
    return {
        "preset": None,
        "resolution": None,
        "concepts": [c[2:] for c in header if c.startswith("z_")],
    }


def default_pool(run: Path) -> tuple[fm.Pool | None, dict]:
    """The package's reference runs of the run's preset, resolution and concepts
    (fitting.analyses.reference_pool), without the run itself; (None, why) where there are none."""
    cfg = _config(run)
    if not cfg:
        return None, {
            "why": f"{run} has no config.json, so no reference runs match it: give --pool"
        }
    kind = reference_pool.describe(cfg)
    path = reference_pool.path_for(kind)
    if not path.exists():
        have = sorted(p.name for p in reference_pool.HERE.glob("*.json"))
        return None, {
            "why": f"no reference runs of preset {kind['preset']} at {kind['resolution']} px "
            "with concepts "
            f"{','.join(kind['concepts'])} (the package has {', '.join(have) or 'none'}): give "
            "--pool"
        }
    _, events = reference_pool.load(path)
    mine = {"seed": cfg.get("seed"), "sep": dict(cfg.get("sep") or {})}
    here = str(run.resolve())
    keep = [
        e
        for e in events
        if not fm.same_run(e, mine) and str((reference_pool.ROOT / e["run"]).resolve()) != here
    ]
    return fm.Pool(keep), {"source": f"reference {path.name}", "runs": len(keep), **kind}


def _table(doc: dict) -> None:
    """One line per method, then per baseline, on stderr."""
    for kind in ("methods", "baselines"):
        for m in doc[kind]:
            step = "none" if m["behavior_step"] is None else f"{m['behavior_step']:,.0f}"
            p = "?" if m["p_compose"] is None else f"{m['p_compose']:.2f}"
            tag = "" if kind == "methods" else " (baseline)"
            print(
                f"  {m['method'] + tag:<24} {step:>8}  P(by horizon) {p}  {m['note']}",
                file=sys.stderr,
            )


def _parser():
    parser = cli.parser()
    parser.add_argument("run", type=Path, help="the run folder (trajectories.csv)")
    parser.add_argument(
        "--at", type=float, help="read the logs up to this step (default: the last checkpoint)"
    )
    parser.add_argument(
        "--horizon",
        type=float,
        help="the step a forecast is for (default: the run's configured steps; required for a "
        "folder without config.json)",
    )
    parser.add_argument(
        "--pool",
        type=Path,
        nargs="+",
        help="other runs' folders to learn from (default: the package's reference runs of the "
        "run's preset, resolution and concepts; for a folder without config.json, a model of your "
        "own, give runs of that model logging the same concepts)",
    )
    parser.add_argument(
        "--mix-pool",
        action="store_true",
        help="learn from --pool runs of another preset, resolution or concept set (refused "
        "otherwise)",
    )
    parser.add_argument(
        "--class", dest="label", default="11", help="the held-out class (default 11)"
    )
    parser.add_argument("--json", type=Path, help="write the forecast here")
    parser.add_argument(
        "--watch",
        type=float,
        metavar="SECONDS",
        help="follow a training run: forecast again at each new checkpoint, looking every SECONDS",
    )
    return parser


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    out = cli.output_file(args.json, "--json", owns=("forecast.json",)) if args.json else None
    if args.watch is not None and not 1 <= args.watch <= 86400:
        raise cli.UsageError(
            f"--watch {args.watch:g}: give the seconds between looks, from 1 to 86,400 (a day)"
        )
    if args.watch is not None and args.at is not None:
        raise cli.UsageError("--watch follows the last checkpoint; leave --at out")
    if cli.checking(args):
        return 0
    if not (args.run / "trajectories.csv").exists():
        raise cli.UsageError(
            f"{args.run}: no trajectories.csv (a run folder of empirical.train or "
            "empirical.elicitation.walk)"
        )
    if args.pool:
        events = _others(args.run, args.pool, args.label, args.mix_pool)
        pool, info = fm.Pool(events), {"source": "--pool", "runs": len(events)}
    else:
        pool, info = default_pool(args.run)
    if args.watch is not None:
        return watch(args.run, args.watch, args.horizon, pool, args.label, out, info)
    doc = forecast(args.run, args.at, args.horizon, pool, args.label, info)
    _table(doc)
    print(summary(doc))
    if out:
        ForecastRecord.from_json(doc).write(out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
