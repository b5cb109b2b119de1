"""The figures of fitting.predict, drawn from what it wrote: prediction.json, predicted.csv and the
logs.

  python -m fitting.predict runs/sweep/sweep.csv --covariates runs/sweep/covariates.csv \\
      --holdout sep_color=0.5
  python -m figures.predict runs/sweep/predict      # prediction.png beside prediction.json

DIR: fitting.predict's --out. prediction.png for DIR/prediction.json and for each
DIR/*/prediction.json (the levels of --leave-out); leave_out.png where DIR holds leave_out.json.
prediction.png: the held-out runs in concept space, observed (dots, from the logs prediction.json
names; --log where they moved) and predicted by the law (lines, predicted.csv); then the law's
curves (speed, switch, bias) as prediction.json holds them, with each training run's own eq1 fit
over them (not under the memorize and coupled laws: those fits assume the other order).
leave_out.png: per left-out level, the RMSE of the law, of the baselines, the seed floor and the
ceiling. Every number drawn was computed by fitting.predict.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import matplotlib
import numpy as np

from core import cli, plot
from fitting.records import LeaveOutRecord, PredictionRecord
from core.trajectory import Trajectory, read_csv

COVARIATE_AXES = {  # each concept's own covariate, on one axis for all concepts
    "signal": "concept signal (pixel MSE between the classes differing in it)",
    "sep": "concept separation Δ (Δcolor, Δsize, ...)",
}

COLORS = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]


def observed_runs(
    doc: PredictionRecord, logs: Sequence[Path] | None, where: Path
) -> dict[str, Trajectory]:
    """The held-out runs' logged trajectories, from ``logs`` or the logs ``doc`` names."""
    held, found = set(doc.holdout), {}
    for log in logs or [Path(p) for p in doc.log]:
        if not log.is_file():
            raise ValueError(
                f"{where} names the log {log}, which is not there; give the logs with --log "
                "LOG.csv ..."
            )
        for t in read_csv(log):
            if t.run in held and t.label == doc.label and t.protocol == doc.protocol:
                found[t.run] = t
    if held - set(found):
        raise ValueError(
            f"{where}: held-out run {sorted(held - set(found))[0]!r} is in no log given"
        )
    return found


def _square(ax, doc: PredictionRecord, observed: dict, predicted: dict) -> None:
    for j, (run, obs) in enumerate(observed.items()):
        col = COLORS[j % 10]
        ax.plot(obs.z[:, 0], obs.z[:, 1], "o", ms=3, color=col, alpha=0.6)
        pred = predicted[run].z
        ax.plot(pred[:, 0], pred[:, 1], "-", lw=2, color=col, label=f"{run}: predicted")
    plot.square(ax, doc.concepts, f"held-out runs, class {doc.label} (dots: observed)")
    ax.legend(fontsize=6, loc="best")


def _points(ax, fits: dict, cov: dict, concepts, key: str, label: str) -> None:
    """Each training run's own eq1 estimate of ``key`` against its covariate, one colour per
    concept."""
    for i, name in enumerate(concepts):
        pts = [
            (cov[r][i], f[key][i])
            for r, f in fits.items()
            if f and key in f and f[key][i] is not None
        ]
        if pts:
            ax.plot(*zip(*pts), "o", color=COLORS[i % 10], label=f"{label}: {name}")


def _speed(ax, doc: PredictionRecord, curves: dict, fits: dict, cov: dict, label: str) -> None:
    concepts, c = doc.concepts, doc.law["coefficients"]
    if curves["speed"] is None:  # compete: the speed follows the lead too, so the runs' own
        for i, name in enumerate(concepts):
            pts = sorted((cov[r][i], v["parameters"]["lam"][i]) for r, v in doc.train.items())
            law = f"law: {name} (lead exponent {c['c_lam']:.2f})"
            ax.plot(*zip(*pts), "-", color=COLORS[i % 10], label=law)
    else:
        speed = curves["speed"]
        ax.plot(speed["x"], speed["y"], "-", color="k", label=f"law: exponent {c['b_lam']:.2f}")
    _points(ax, fits, cov, concepts, "lam", "per-run fit")
    ax.set(xscale="log", yscale="log", xlabel=label, ylabel="speed λ (1/step)", title="speed")


def _switch(
    ax, doc: PredictionRecord, curves: dict, fits: dict, cov: dict, label: str, memorize: bool
) -> None:
    c, switch = doc.law["coefficients"], curves["switch"]
    if switch["gate"] == "time":
        on = c.get("t_on", 0.0)
        text = f"law: exponent {c['b_t']:.2f}" + (f", from the onset {on:,.0f}" if on else "")
        ax.plot(switch["x"], switch["y"], "-", color="k", label=text)
        _points(ax, fits, cov, doc.concepts, "t_switch", "per-run switch")
        title = "switch time (to memorizing)" if memorize else "switch time"
        ax.set(xscale="log", yscale="log", xlabel=label, ylabel="switch step", title=title)
        return
    text = f"law: threshold {c['theta']:.2f}, sharpness {c['kappa']:.3g}"
    ax.plot(switch["x"], switch["y"], "-", color="k", label=text)
    ax.axvline(c["theta"], color="0.6", lw=1, ls=":")
    ax.set(
        xlabel="the other concepts' progress 1 - (z_j - ẑ_j)²",
        ylabel="switch to the memorized bias",
        ylim=(-0.03, 1.03),
        title="switch (thrown by the other concepts)",
    )


def _bias(ax, doc: PredictionRecord, curves: dict, fits: dict, cov: dict, memorize: bool) -> None:
    c, bias = doc.law["coefficients"], curves["bias"]
    text = f"law: depth {c['m']:.2f}, sharpness {c['gamma']:.1f}"
    ax.plot(bias["x"], bias["y"], "-", color="k", label=text)
    for i, name in enumerate(doc.concepts):
        pts = []
        for r, f in fits.items():
            if f and "z_bias" in f:
                ell = np.log(cov[r])
                others = np.delete(ell, i).max() if len(ell) > 1 else ell[i]
                pts.append((ell[i] - others, abs(f["z_bias"][i] - 1.0)))  # from the target 1
        if pts:
            ax.plot(*zip(*pts), "o", color=COLORS[i % 10], label=f"per-run fit: {name}")
    ax.set(
        xlabel="log signal lead over the other concept",
        ylabel="bias |z̃ - ẑ|",
        ylim=(-0.03, 1.03),
        title="memorized bias after the switch"
        if memorize
        else "bias toward the stronger concept's training class",
    )


def draw(
    doc: PredictionRecord, observed: dict[str, Trajectory], predicted: dict[str, Trajectory], path
) -> Path:
    """prediction.png from a prediction.json record (with its law curves) and the runs' paths."""
    concepts, curves = doc.concepts, doc.law["curves"]
    two = len(concepts) == 2
    fig, axes = plot.subplots(
        1, 3 + two, figsize=(4.8 * (3 + two), 4.4), squeeze=False, layout="constrained"
    )
    axes = list(axes[0])
    if two:
        _square(axes.pop(0), doc, observed, predicted)
    cov = {r: np.array([v["covariates"][k] for k in concepts]) for r, v in doc.train.items()}
    memorize = doc.model in ("memorize", "coupled")
    fits = {} if memorize else doc.per_run_fits or {}
    label = COVARIATE_AXES.get(doc.covariate, f"{doc.covariate} (covariate)")
    _speed(axes[0], doc, curves, fits, cov, label)
    _switch(axes[1], doc, curves, fits, cov, label, memorize)
    _bias(axes[2], doc, curves, fits, cov, memorize)
    for ax in fig.axes:
        ax.grid(alpha=0.25)
        if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    delta = doc.law.get("discrepancy")
    extra = (
        f"; + the {'shared' if delta['kind'] == 'mean' else 'local'} discrepancy, mean rms "
        + ", ".join(f"{k} {v:.3f}" for k, v in delta["rms"].items())
        if delta
        else ""
    )
    fig.suptitle(f"pooled {doc.model} law: {doc.law['text']}{extra}", fontsize=9)
    return plot.save(fig, path)


def _paired(row: dict) -> float | None:
    """The law's RMSE at the points of the baseline it is compared with (a summary written before
    the paired scoring, results/study/dcolor-preliminary, has the law on every point)."""
    key = "law_at_interpolation" if row["interpolation"] is not None else "law_at_nearest"
    return row.get(key, row["law"])


def _leave_out_title(doc: LeaveOutRecord) -> str:
    gaps = [
        f"\nlaw - {what} {g['text']}"
        for what, key in (
            ("interpolation inside", "law_minus_interpolation_inside"),
            ("nearest outside", "law_minus_nearest_outside"),
            ("linear outside", "law_minus_linear_outside"),
            ("trend outside", "law_minus_trend_outside"),
        )
        if (g := doc.differences.get(key)) is not None and "text" in g
    ]
    k = doc.train_per_level
    scarce = (
        f"\ntrained on {k} run{'s' if k > 1 else ''} a level (mean of {doc.draws} draws)"
        if k
        else ""
    )
    column = plot.covariate_label(doc.column)
    return f"leave one {column} out (grey band: outside the training range){scarce}" + "".join(gaps)


def leave_out_figure(doc: LeaveOutRecord, path) -> Path:
    """leave_out.png: per left-out level, the RMSE of the law, of the baselines, the seed floor and
    the law's ceiling (lines: the level's mean; dots: the law on each held-out run); shaded: the
    levels outside the training range). The law is scored at the points of the baseline it is
    compared with: interpolation's inside the range, the nearest level's outside it."""
    levels = doc.levels
    fig, ax = plot.subplots(figsize=(8.6, 4.2), layout="constrained")
    x = np.arange(len(levels))
    law = doc.law_name or doc.model + "".join(
        f"+{k}" for k in ("onset", "compete") if getattr(doc, k)
    )
    if doc.discrepancy and doc.law_name is None:
        law += "+" + ("local" if doc.discrepancy == "local" else "mean")
    for key, style, label in (
        ("law", "o-", f"law {law}"),
        ("interpolation", "s--", "interpolation"),
        ("nearest", "^:", "nearest level"),
        ("mean", "v:", "mean of all training runs (no covariates)"),
        ("linear", "P--", "line through the two nearest levels"),
        ("trend", "*:", "nearest level + the levels' per-step trend"),
        ("seed_floor", "x-.", "seed floor (other seeds, same level)"),
        ("ceiling", "d-", "ceiling (the law fitted to the held-out runs)"),
    ):
        y = [_paired(lv) if key == "law" else lv.get(key) for lv in levels]
        y = np.array([np.nan if v is None else v for v in y], dtype=float)
        color = {"law": "k", "ceiling": "0.6"}.get(key)
        ax.plot(x, y, style, label=label, ms=6, lw=1.5, color=color)
    for i, lv in enumerate(levels):
        runs = [v for r in lv["per_run"] if (v := _paired(r)) is not None]
        ax.plot(np.full(len(runs), i), runs, ".", color="0.55", ms=5, zorder=0)
        if lv["interpolation"] is None:
            ax.axvspan(i - 0.4, i + 0.4, color="0.92", zorder=-1)
    ax.set(
        xticks=x,
        xticklabels=[plot.covariate_label(lv["left_out"]) for lv in levels],
        ylabel="RMSE of the held-out path\n(the law's at its baseline's points)",
        title=_leave_out_title(doc),
    )
    ax.title.set_fontsize(9)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return plot.save(fig, path)


def targets(folder: Path) -> tuple[list[Path], Path | None]:
    """The prediction.json files under fitting.predict's --out (its own and its levels'), and
    leave_out.json."""
    if folder.is_file():
        return ([folder], None) if folder.name == "prediction.json" else ([], folder)
    found = sorted(
        p for p in [folder / "prediction.json", *folder.glob("*/prediction.json")] if p.is_file()
    )
    leave = folder / "leave_out.json"
    if not found and not leave.is_file():
        raise ValueError(
            f"{folder}: no prediction.json or leave_out.json; write them with python -m "
            "fitting.predict ... "
            f"--out {folder}"
        )
    return found, leave if leave.is_file() else None


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument(
        "analysis", type=Path, help="fitting.predict's --out (or one of its JSON files)"
    )
    parser.add_argument(
        "--log",
        type=Path,
        nargs="+",
        default=None,
        metavar="LOG.csv",
        help="the logs fitting.predict read (default: the paths prediction.json names)",
    )
    args = parser.parse_args(argv)
    if cli.checking(args):
        return 0
    found, leave = targets(args.analysis)
    if leave is not None:
        leave_out_figure(LeaveOutRecord.read(leave), leave.with_suffix(".png"))
        print(f"wrote {leave.with_suffix('.png')}")
    for path in found:
        doc = PredictionRecord.read(path)
        if "curves" not in doc.law:
            print(
                f"python -m figures.predict: skipped {path}: no law curves (written before they "
                "were saved; "
                "rerun fitting.predict)",
                file=sys.stderr,
            )
            continue
        observed = observed_runs(doc, args.log, path)
        predicted = {t.run: t for t in read_csv(path.parent / "predicted.csv")}
        print(f"wrote {draw(doc, observed, predicted, path.with_suffix('.png'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
