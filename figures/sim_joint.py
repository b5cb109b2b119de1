"""The joint sim2 fit against per-class eq1, drawn from fitting.sim_joint's sim_joint.json.

  python -m fitting.sim_joint LOG.csv --out DIR          # the analysis, once: DIR/sim_joint.json
  python -m figures.sim_joint DIR/sim_joint.json [--out DIR]

One figure per run (sim_joint-<run>-seed<seed>.png, default beside sim_joint.json): a column per
class (01, 10, 11, ...), a row per concept; the logged coordinates as dots, sim2 with one W(t) for
all classes as a solid line and Eq. 1 fitted to each class on its own as a dashed line. The title
gives each model's AIC over all classes. Reads sim_joint.json only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from figures.fit import slug
from core import cli
from fitting.records import SimJointRecord
from core.plot import save, subplots

FITS = (  # the fitted paths drawn: key in curves, line style, colour, legend
    ("sim2 joint", "-", "C0", "sim2, one W(t)"),
    ("eq1 per class", "--", "C3", "eq1 per class"),
)


def load(path: Path) -> list[dict]:
    """The run records of a sim_joint.json written by python -m fitting.sim_joint (checked on
    reading)."""
    return SimJointRecord.rows_of(path, "runs")


def draw(run: dict, out: Path) -> Path:
    """One run's figure: classes by concepts, data and both fits."""
    concepts, classes, curves = run["concepts"], run["classes"], run["curves"]
    fig, axes = subplots(
        len(concepts),
        len(classes),
        figsize=(3.2 * len(classes), 2.4 * len(concepts)),
        squeeze=False,
    )
    grid = np.asarray(curves["step"])
    for j, label in enumerate(classes):
        seen = curves["observed"][label]
        for i, concept in enumerate(concepts):
            ax = axes[i, j]
            ax.plot(
                seen["step"], np.asarray(seen["z"])[:, i], ".", color="0.35", ms=4, label="logged"
            )
            for model, style, color, name in FITS:
                ax.plot(
                    grid, np.asarray(curves[model][label])[:, i], style, color=color, label=name
                )
            ax.set_ylim(-0.1, 1.15)
            ax.set_title(f"class {label}: {concept}", fontsize=9)
            if i == len(concepts) - 1:
                ax.set_xlabel("step")
    axes[0, 0].legend(fontsize=7, loc="best")
    scores = ", ".join(f"{m} {v['aic']:.0f} (k={v['n_params']})" for m, v in run["models"].items())
    fig.suptitle(f"{run['run']} seed {run['seed']}: AIC {scores}", fontsize=9)
    fig.tight_layout()
    return save(fig, out)


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.reader_parser(
        "analysis",
        "sim_joint.json (or its folder), from python -m fitting.sim_joint",
        "folder for the figures (default: beside the json)",
    )
    args = parser.parse_args(argv)
    out = cli.output_dir(cli.out_or_beside(args.out, args.analysis), "--out")
    if cli.checking(args):
        return 0
    for run in load(args.analysis):
        path = draw(run, out / f"sim_joint-{slug(run['run'])}-seed{run['seed']}.png")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
