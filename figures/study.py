"""The study's figures, from a collected sweep and its study.json (``python -m fitting.study``).

  python -m figures.study SWEEP_DIR [--study FILE] [--out DIR]

Writes into DIR (default SWEEP_DIR):

  learning.png   paper Fig. 3: the step at which each concept is learned (80% of the readable
                 samples carry the class's value of it, model-free) against its measured concept
                 signal, one point per run: left by the training classes, right by the held-out
                 class (the paper's measure);
                 a run that never got there within its budget is an open triangle at its last step
                 (a lower bound), never a number. The solid line joins the medians of the seeds per
                 level, a seed that never got there counted as later than any that did (a level
                 where half or more never did has no median, and the line skips it); the dashed one,
                 the same of where a sigmoid fitted to the same curve crosses 80%.
  timing.png     capability against behavior: for each run, the step the held-out class can be
                 elicited (capability, 50% accuracy held 2 checkpoints) against the step naive
                 prompting shows it (behavior), coloured by the swept covariate; a time never
                 reached within the run is drawn at the run's last step with an arrow pointing
                 past it (censored). Only runs that were elicited (python -m empirical.elicit)
                 appear; with none, the figure says so.
  held_out.png   paper Fig. 4: the held-out class's path in concept space under naive prompting, one
                 panel per seed, coloured by the swept covariate, its turn marked (a star) where
                 fitting.turn finds one; below, what its samples were read as at the last
                 checkpoint. Of three concepts, the class 111 and one panel per face of the cube (as
                 figures.cube).

Reads only saved outputs (sweep.csv, study.json) and computes nothing: the medians are study.json's
level summaries (``median_all``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.ticker import NullLocator

from core import cli
from fitting.records import StudyRecord
from core.plot import covariate_label, save, square, subplots
from core.trajectory import UNREADABLE, read_csv
from figures.class_paths import class_color
from figures.cube import FACES, corner_names

CONCEPT_COLORS = ("tab:red", "tab:green", "tab:blue")


def learning_figure(doc: StudyRecord, out: Path) -> Path:
    """learning.png: learned step against concept signal, the training classes and the held-out
    class (see the module docstring)."""
    label = doc.headline
    fig, axes = subplots(1, 2, figsize=(12.4, 4.8), sharey=True)
    _learning_panel(
        axes[0],
        doc,
        lambda r: r["learning"],
        lambda lev: lev["learned_step"],
        lambda lev: lev["learned_fit"],
        "the training classes",
    )
    _learning_panel(  # a study written before the held-out class's fits has none: no dashed line
        axes[1],
        doc,
        lambda r: r["held_out"][label]["learning"],
        lambda lev: lev["held_learned_step"][label],
        lambda lev: lev.get("held_learned_fit", {}).get(label),
        f"class {label}, held out (the paper's measure)",
    )
    axes[0].set_ylabel("step the concept is learned (80% of readable samples)")
    fig.tight_layout()
    return save(fig, out)


def _learning_panel(ax, doc: StudyRecord, records, steps, fits, title: str) -> None:
    """One panel of learning.png: records(run) are a run's per-concept records, steps(level) and
    fits(level) the level's summaries of their model-free and fitted steps (fits None: no dashed
    line)."""
    for color, concept in zip(CONCEPT_COLORS, doc.runs[0]["learning"]):
        for r in doc.runs:
            rec, x = records(r)[concept], r["signal"][concept]
            if rec["learned_step"] is not None:
                ax.plot(x, rec["learned_step"], "o", color=color, alpha=0.55, ms=6)
            else:
                ax.plot(x, rec["censored_at"], "^", mfc="none", color=color, ms=8)
        med = _medians(doc, lambda lev: steps(lev)[concept], concept)
        if med:  # a marker too: a median at one level only is still drawn
            ax.plot(
                *zip(*med), "-s", ms=4, color=color, lw=1.5, label=f"{concept}: median of the seeds"
            )
        if all(fits(lev) for lev in doc.levels):
            fit = _medians(doc, lambda lev: fits(lev)[concept], concept)
            if fit:
                ax.plot(
                    *zip(*fit),
                    "--",
                    color=color,
                    lw=1.2,
                    label=f"{concept}: fitted sigmoid, median",
                )
    ax.plot([], [], "^", mfc="none", color="k", label="not learned within the run (lower bound)")
    ax.set(
        xscale="log",
        xlabel="concept signal (pixel MSE between the classes that differ in the concept)",
        title=title,
    )
    _swept_axis(ax, doc)
    ax.grid(alpha=0.25, which="both")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))


def _swept_axis(ax, doc: StudyRecord) -> None:
    """A top axis naming the swept setting (Δcolor, say) at its levels' measured signals, where the
    sweep varies one concept's separation: the bottom axis is the signal it gives, the top one the
    setting."""
    concept = doc.by.removeprefix("sep_")
    if concept == doc.by or any(concept not in lev["signal"] for lev in doc.levels):
        return
    top = ax.secondary_xaxis("top")
    ticks = sorted({(lev["signal"][concept], lev[doc.by]) for lev in doc.levels})
    top.set_xticks([x for x, _ in ticks], labels=[f"{v:g}" for _, v in ticks], fontsize=7)
    top.xaxis.set_minor_locator(NullLocator())
    top.set_xlabel(
        f"swept: {covariate_label(doc.by)} (at its levels' {concept} signal)", fontsize=8
    )


def _medians(doc: StudyRecord, summary, concept: str) -> list[tuple[float, float]]:
    """Per level, (signal, the median over all its seeds), a seed that never got there counted as
    later than any that did (fitting.study's ``median_all``); a level where half or more never got
    there, or where a run stopped short of the median without getting there, has none."""
    medians = [(lev["signal"][concept], summary(lev)["median_all"]) for lev in doc.levels]
    return [(x, m) for x, m in medians if m is not None]


def timing_figure(doc: StudyRecord, out: Path) -> Path:
    """timing.png: capability step against behavior step per run, censored times as arrows (see the
    module docstring)."""
    label, by = doc.headline, doc.by
    runs = [
        r for r in doc.runs if r["held_out"].get(label, {}).get("capability_unbiased") is not None
    ]
    fig, ax = subplots(figsize=(5.6, 5.0))
    if not runs:
        ax.set_axis_off()
        ax.text(
            0.5,
            0.5,
            "no run of this sweep was elicited yet\n(python -m empirical.elicit RUN, or --then "
            "elicit)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        return save(fig, out)
    values = [r[by] for r in doc.runs]
    mapper = ScalarMappable(
        norm=Normalize(min(values), max(values) if max(values) > min(values) else min(values) + 1),
        cmap="viridis",
    )
    top = max(r["held_out"][label]["last_step"] for r in runs)
    for r in runs:
        h = r["held_out"][label]
        x = (
            h["capability_step"]
            if h["capability_step"] is not None
            else h["capability_censored_at"]
        )
        y = h["behavior_step"] if h["behavior_step"] is not None else h["behavior_censored_at"]
        color = mapper.to_rgba(r[by])
        ax.plot(
            x, y, "o", color=color, ms=7, mfc=color if h["behavior_step"] is not None else "none"
        )
        if h["behavior_step"] is None:
            ax.annotate(
                "", (x, y + 0.08 * top), (x, y), arrowprops={"arrowstyle": "->", "color": color}
            )
        if h["capability_step"] is None:
            ax.annotate(
                "", (x + 0.08 * top, y), (x, y), arrowprops={"arrowstyle": "->", "color": color}
            )
    ax.plot([0, top], [0, top], ":", color="0.5", label="behavior = capability")
    _line(ax, doc, label)
    ax.set(
        xlim=(0, 1.12 * top),
        ylim=(0, 1.12 * top),
        xlabel=f"capability step (class {label} elicited, 50%)",
        ylabel=f"behavior step (class {label} under naive prompting, 50%)",
        title="Capability vs behavior (arrows: not within the run)",
    )
    fig.colorbar(mapper, ax=ax, label=covariate_label(by))
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.grid(alpha=0.25)
    fig.tight_layout()
    return save(fig, out)


def _line(ax, doc: StudyRecord, label: str) -> None:
    """The line fitted through the fully observed (capability, behavior) pairs, over their range,
    with its resampled slope interval in the legend (none with fewer than 3 pairs)."""
    rel = next((r for r in doc.relations.get(label, []) if r["y"] == "behavior_step"), None)
    line = None if rel is None else rel.get("line")
    if line is None:
        return
    xs = [p["x"] for p in rel["pairs"] if not (p["x_censored"] or p["y_censored"])]
    x = np.array([min(xs), max(xs)])
    ci = line.get("slope_ci")
    slope = f"slope {line['slope']:.2f}" + ("" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]")
    ax.plot(
        x, line["slope"] * x + line["intercept"], "-", color="0.3", lw=1.2, label=f"fit: {slope}"
    )


def held_out_figure(doc: StudyRecord, log: Path, out: Path) -> Path:
    """held_out.png: the held-out class's paths per seed, coloured by the swept covariate, and its
    last readings; in three concepts one row for each face of the cube (figures.cube)."""
    label, by = doc.headline, doc.by
    trajectories = {t.run: t for t in read_csv(log) if t.label == label and t.protocol == "naive"}
    seeds = sorted({r["seed"] for r in doc.runs})
    values = [r[by] for r in doc.runs]
    norm = Normalize(min(values), max(values) if max(values) > min(values) else min(values) + 1)
    d = len(next(iter(trajectories.values())).concepts) if trajectories else 2
    faces = FACES if d == 3 else ((0, 1),)
    fig, axes = subplots(
        len(faces) + 1,
        len(seeds),
        figsize=(4.4 * len(seeds) + 1.0, 5.3 * len(faces) + 2.3),
        squeeze=False,
        gridspec_kw={"height_ratios": [1.3] * len(faces) + [0.7]},
        layout="constrained",
    )
    for col, seed in enumerate(seeds):
        runs = sorted((r for r in doc.runs if r["seed"] == seed), key=lambda r: r[by])
        for r in runs:
            if r["run"] not in trajectories:
                raise ValueError(
                    f"{log}: run {r['run']!r} of study.json has no naive trajectory of class "
                    f"{label}"
                )
        paths = [trajectories[r["run"]] for r in runs]
        names = run_names(runs, by)
        concepts = paths[-1].concepts if paths else ("", "")
        for row, dims in enumerate(faces):
            ax = axes[row, col]
            _paths(ax, runs, paths, names, label, by, norm, dims)
            square(
                ax,
                [concepts[i] for i in dims],
                f"seed {seed}: class {label} (naive)" if row == 0 else "",
                names=corner_names(d, dims) if d > 2 else None,
            )
        _final_shares(axes[-1, col], runs, names, label)
    mapper = ScalarMappable(norm=norm, cmap="viridis")
    fig.colorbar(mapper, ax=axes[:-1, :].ravel().tolist(), label=covariate_label(by), shrink=0.9)
    return save(fig, out)


def run_names(runs: list[dict], by: str) -> list[str]:
    """Each run's name in a seed's panel: its value of the covariate, or its run id where another
    run of the panel shares that value (a pool that varies another covariate too, e.g. Δsize within
    Δcolor 0.5)."""
    values = [r[by] for r in runs]
    name = covariate_label(by)
    return [r["run"] if values.count(r[by]) > 1 else f"{name} {r[by]:g}" for r in runs]


def _paths(
    ax,
    runs: list[dict],
    paths: list,
    names: list[str],
    label: str,
    by: str,
    norm: Normalize,
    dims: tuple[int, int] = (0, 1),
) -> None:
    """One seed's held-out paths in the plane of concepts ``dims``, coloured by the covariate, with
    each run's turn (star)."""
    i, j = dims
    star = None
    for r, t, name in zip(runs, paths, names):
        if not t.missing.all():
            path = t.with_points()
            c = ScalarMappable(norm=norm, cmap="viridis").to_rgba(r[by])
            ax.plot(path.z[:, i], path.z[:, j], "-o", color=c, ms=2.5, lw=1.4, label=name)
        turn = r["held_out"].get(label, {})
        if turn.get("turn_step") is not None:
            point = turn["turn_point"]
            (star,) = ax.plot(point[i], point[j], "k*", ms=11, zorder=5)
    if star is not None:  # the stars say what they are; the colour bar names the paths
        ax.legend([star], ["a run's turn (fitting.turn)"], fontsize=6, loc="lower right")


def _final_shares(ax, runs: list[dict], names: list[str], label: str) -> None:
    """One seed's last readings of the held-out class: the share read as each corner, and
    unreadable."""
    corners = sorted(
        {k for r in runs for k in r["held_out"].get(label, {}).get("final_shares", {})},
        key=lambda k: (k == UNREADABLE, k),
    )
    left = np.zeros(len(runs))
    for corner in corners:
        widths = np.array([r["held_out"][label]["final_shares"].get(corner, 0.0) for r in runs])
        ax.barh(
            range(len(runs)),
            widths,
            left=left,
            color=class_color(corner) if corner != UNREADABLE else "0.82",
            label=corner if corner == UNREADABLE else f"read as {corner}",
        )
        left += widths
    ax.set(
        yticks=range(len(runs)),
        yticklabels=names,
        xlim=(0, 1),
        xlabel=f"share of class {label}'s samples, last checkpoint",
    )
    ax.legend(fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.28))


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument(
        "sweep",
        type=Path,
        help="a collected sweep folder with study.json (python -m fitting.study)",
    )
    parser.add_argument("--study", type=Path, help="the study's JSON (default SWEEP/study.json)")
    parser.add_argument(
        "--out", type=Path, help="folder for the figures (default: the sweep folder)"
    )
    args = parser.parse_args(argv)
    if args.out is not None:
        cli.output_dir(args.out, "--out")
    if cli.checking(args):
        return 0
    path = args.study or args.sweep / "study.json"
    if not path.is_file():
        raise ValueError(f"{path}: not found; run python -m fitting.study {args.sweep} first")
    doc = StudyRecord.read(path)
    out = cli.output_dir(args.out or cli.default_out(args.sweep), "--out")
    written = [
        learning_figure(doc, out / "learning.png"),
        timing_figure(doc, out / "timing.png"),
        held_out_figure(doc, args.sweep / "sweep.csv", out / "held_out.png"),
    ]
    print("wrote " + ", ".join(map(str, written)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
