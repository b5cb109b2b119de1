"""Capability versus behavior: when a class can be elicited, and when naive prompting shows it.

  python -m fitting.capability RUN_DIR [RUN_DIR ...] [--class 11] [--persist 2] [--out DIR]

Behavior is the naive joint accuracy of the class; capability at a checkpoint is the best accuracy
over the elicitation protocols logged there (overprompt, intervention, patch, cfg; each already the
best over its own settings). For each run: the first steps at which behavior, capability and each
protocol reach 50% and 80% (held for --persist checkpoints), and the lag behavior - capability;
and the same for the settled step, from which the level holds to the end of training (an early
excursion that is lost again, e.g. an intervention succeeding before the training classes are
learned, moves the first step but not the settled one).
Written to RUN_DIR/elicitation.json; with several runs (seeds) also a summary and the paper's Fig. 6
(accuracy against step, one colour per protocol, each run a thin line, the mean thick) in --out.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.curves import LEVELS, settled_step, threshold_step
from theory import cli
from theory.files import write_json
from theory.trajectory import Trajectory, read_csv, run_log



def curves(trajectories: Sequence[Trajectory], label: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """protocol -> (steps, accuracy) for one class, plus 'capability' (max over non-naive protocols)."""
    out = {}
    for t in trajectories:
        if t.label == label and t.accuracy is not None:
            ok = ~np.isnan(t.accuracy)
            out[t.protocol] = (t.step[ok].astype(float), t.accuracy[ok])
    elicited = [p for p in out if p != "naive"]
    if elicited:
        common = sorted(set.intersection(*(set(out[p][0].tolist()) for p in elicited)))
        if common:
            acc = np.max([np.interp(common, *out[p]) for p in elicited], axis=0)
            out["capability"] = (np.array(common), acc)
    return out


def thresholds(curve: dict, persist: int) -> dict[str, dict[str, float | None]]:
    """protocol -> level -> the first step the curve holds it for ``persist`` checkpoints (None: never)."""
    return {p: {f"{int(lv * 100)}%": threshold_step(s, a, lv, persist=persist) for lv in LEVELS} for p, (s, a) in curve.items()}


def settled(curve: dict) -> dict[str, dict[str, float | None]]:
    """protocol -> level -> the step from which the curve stays at or above it (None: never)."""
    return {p: {f"{int(lv * 100)}%": settled_step(s, a, lv) for lv in LEVELS} for p, (s, a) in curve.items()}


def behavior_lags(th: dict) -> dict[str, float | None]:
    """Per level, behavior's step minus capability's (positive: the capability came first)."""
    out = {}
    for lv in ("50%", "80%"):
        b, c = th.get("naive", {}).get(lv), th.get("capability", {}).get(lv)
        out[lv] = None if b is None or c is None else b - c
    return out


def analyse_run(run: Path, label: str, persist: int) -> dict:
    """elicitation.json's content for one run: first and settled steps per protocol, lags, curves."""
    if persist < 1:
        raise ValueError(f"persist {persist}: must be >= 1 (checkpoints a level must hold)")
    log = run_log(run)
    if not log.exists():
        raise ValueError(f"{log}: no trajectory log (train, then python -m empirical.elicit)")
    trajectories = read_csv(log)
    c = curves(trajectories, label)
    if "naive" not in c:
        raise ValueError(f"{log}: no naive accuracy for class {label!r}")
    if len(c) == 1:
        logged = sorted({t.protocol for t in trajectories if t.label == label})
        raise ValueError(f"{log}: class {label!r} was never elicited (protocols logged: {', '.join(logged)}); "
                         f"run python -m empirical.elicit {Path(run)} first, so capability is measured, not assumed absent")
    th, st = thresholds(c, persist), settled(c)
    return {"run": str(run), "class": label, "persist": persist, "protocols": sorted(p for p in c if p != "capability"),
            "first_step": th, "lag_behavior_minus_capability": behavior_lags(th),
            "settled_step": st, "settled_lag_behavior_minus_capability": behavior_lags(st),
            "curves": {p: {"step": s.tolist(), "accuracy": a.tolist()} for p, (s, a) in c.items()}}


def mean_curves(results: Sequence[dict]) -> dict[str, dict[str, list]]:
    """protocol -> the mean accuracy over runs on the steps every run logged (for Fig. 6)."""
    out = {}
    for p in sorted({p for r in results for p in r["curves"]}):
        runs = [r["curves"][p] for r in results if p in r["curves"]]
        grid = sorted(set.intersection(*(set(c["step"]) for c in runs)))
        if grid:
            mean = np.mean([np.interp(grid, c["step"], c["accuracy"]) for c in runs], axis=0)
            out[p] = {"step": grid, "accuracy": mean.tolist(), "runs": len(runs)}
    return out


def figure(results: Sequence[dict], means: dict[str, dict[str, list]], path: Path) -> Path:
    """Fig. 6: each run's accuracy per protocol (thin) and the mean over runs (thick); draws only."""
    from theory.plot import PROTOCOL_COLORS as COLORS
    from theory.plot import save, subplots

    fig, ax = subplots(figsize=(6.4, 4.2))
    protocols = sorted({p for r in results for p in r["curves"]}, key=lambda p: list(COLORS).index(p) if p in COLORS else 99)
    for p in protocols:
        runs = [r["curves"][p] for r in results if p in r["curves"]]
        for cur in runs:
            ax.plot(np.maximum(cur["step"], 1), cur["accuracy"], color=COLORS.get(p, "0.5"), lw=0.7, alpha=0.45)
        if p in means:
            grid, mean = means[p]["step"], means[p]["accuracy"]
            ax.plot(np.maximum(grid, 1), mean, color=COLORS.get(p, "0.5"), lw=2.4 if p in ("naive", "capability") else 1.4,
                    ls="--" if p == "capability" else "-", zorder=5 if p == "capability" else 3,
                    label=f"{p} (mean of {len(runs)})" if len(runs) > 1 else p)
    ax.set(xscale="log", xlabel="training step", ylabel=f"joint accuracy of class {results[0]['class']}", ylim=(-0.02, 1.02))
    ax.axhline(0.5, color="0.6", lw=0.6, ls=":")
    ax.axhline(0.8, color="0.6", lw=0.6, ls=":")
    ax.grid(alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("capability (best elicitation) vs behavior (naive prompting)", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def summarize(results: Sequence[dict], *, rule: str = "first") -> dict:
    """Per level: the lags of the runs, their mean, and how many runs never got there.

    ``rule`` is "first" (first step, held for ``persist`` checkpoints) or "settled" (the step from
    which the level holds to the end of training).
    """
    steps, lag = {"first": ("first_step", "lag_behavior_minus_capability"),
                  "settled": ("settled_step", "settled_lag_behavior_minus_capability")}[rule]
    out = {}
    for lv in ("50%", "80%"):
        vals = [r[lag][lv] for r in results]
        known = [v for v in vals if v is not None]
        out[lv] = {"lags": vals, "mean_lag": float(np.mean(known)) if known else None,
                   "capability_first": sum(v > 0 for v in known), "runs": len(vals),
                   "naive_steps": [r[steps]["naive"][lv] for r in results],
                   "capability_steps": [r[steps].get("capability", {}).get(lv) for r in results],
                   "naive_never": sum(r[steps]["naive"][lv] is None for r in results),
                   "capability_never": sum(r[steps].get("capability", {}).get(lv) is None for r in results)}
    return out


def runs_arguments(module: str, doc: str | None, argv: Sequence[str] | None, *, runs_help: str,
                   out_help: str) -> argparse.Namespace:
    """The command line shared by the commands that read capability curves of runs: RUN... --class --persist --out,
    checked before any input is read."""
    parser = cli.parser(module, doc)
    parser.add_argument("runs", nargs="+", type=Path, help=runs_help)
    parser.add_argument("--class", dest="label", default="11", help="the class (default 11, the held-out class)")
    parser.add_argument("--persist", type=int, default=2, help="checkpoints a level must hold (default 2)")
    parser.add_argument("--out", type=Path, default=None, help=out_help)
    args = parser.parse_args(argv)
    if args.persist < 1:
        raise ValueError(f"--persist {args.persist}: must be >= 1 (checkpoints a level must hold)")
    if not args.label.strip():
        raise ValueError("--class '': give a class label, e.g. 11")
    return args


@cli.command("fitting.capability")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fitting.capability``: see the module docstring."""
    args = runs_arguments("fitting.capability", __doc__, argv, runs_help="run folders (one per seed) with elicited trajectories",
                          out_help="summary folder (default: the first run)")
    folders = [run if run.is_dir() else run.parent for run in args.runs]
    out = cli.output_dir(args.out or folders[0], "--out")
    for folder in folders:
        cli.output_dir(folder, "RUN")
    results = [analyse_run(r, args.label, args.persist) for r in args.runs]
    for run, res in zip(args.runs, results):
        folder = run if run.is_dir() else run.parent
        write_json(folder / "elicitation.json", res)
        for rule, fs in (("first", res["first_step"]), ("settled", res["settled_step"])):
            print(f"{run}: {rule:7s} naive 50%/80% at {fs['naive']['50%']}/{fs['naive']['80%']}, "
                  f"capability {fs.get('capability', {}).get('50%')}/{fs.get('capability', {}).get('80%')}")
    summary = {"runs": [str(r) for r in args.runs], "class": args.label, "summary": summarize(results),
               "settled": summarize(results, rule="settled")}
    means = mean_curves(results)
    write_json(out / "elicitation_summary.json", {**summary, "mean_curves": means})
    path = figure(results, means, out / "capability.png")
    print(f"wrote {out / 'elicitation_summary.json'} and {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
