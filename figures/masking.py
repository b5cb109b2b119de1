"""The underspecification experiment (paper Sec. 5) from a sweep of masked-prompt runs.

  python -m figures.masking RUN_DIR [RUN_DIR ...] [--class 11] [--detail 0.5] [--out DIR]

Each run is one training run of the sweep (e.g. --preset tiny-mask --set mask_p=P); its masking
rate is read from the run's log. Writes to --out (default: the first run's parent folder):

  masking.png   (a) the held-out class's naive path in concept space, one line per p (Fig. 9a);
                (b) the first step at which naive prompting and the best elicitation protocol
                    reach 80% (and 50%) accuracy against p, with runs that never get there drawn
                    on the top edge (Fig. 8); and the step from which the held-out path stays
                    away (> 0.15) from the masked class it drew (open: never left), counted once
                    the training classes are drawn (mean accuracy >= 0.5);
                (c) naive against overprompt accuracy over training at the p nearest --detail
                    (Fig. 10).
  masking.json  per p: those steps, the checkpoints spent at the masked class, the maximum
                accuracies and the final concept-space point.

Reads only saved outputs; the thresholds are fitting.capability's (levels held for --persist
checkpoints).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib import colormaps

from figures.training import learned_from, run_log
from fitting.capability import COLORS, analyse_run, threshold_options
from fitting.curves import settled_step
from theory import cli
from theory.plot import save, square, subplots
from theory.files import write_json
from theory.trajectory import read_csv, read_meta

NEAR = 0.15  # concept-space distance within which the held-out class counts as drawing the masked class


def mask_rate(run: Path) -> tuple[float, str]:
    """The run's masking rate p and masked class, from its trajectory log's meta (config)."""
    config = (read_meta(run_log(run)) or {}).get("config")
    p = config.get("mask_p") if isinstance(config, dict) else None
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
        raise ValueError(f"{run_log(run)}: its meta has no config.mask_p in [0, 1] (was it trained with empirical.train?)")
    classes = config.get("mask_classes") or ["10"]
    masked = classes[0] if isinstance(classes, list) else None
    if not isinstance(masked, str) or not masked or set(masked) - {"0", "1"}:
        raise ValueError(f"{run_log(run)}: its meta's config.mask_classes {classes!r} is not a list of labels like ['10']")
    return float(p), masked


def distance(z: np.ndarray, corner: str) -> np.ndarray:
    """Distance of each point of a path from a class's corner of concept space ("10" -> (1, 0))."""
    return np.linalg.norm(z - np.array([float(c) for c in corner]), axis=1)


def left_corner(step: np.ndarray, z: np.ndarray, corner: str) -> float | None:
    """The step from which the path stays farther than NEAR from ``corner`` (it went there first), or None.

    None also when the path never came near the corner. A path still there at the end has not left.
    """
    dist = distance(z, corner)
    if not np.any(dist < NEAR):
        return None
    return settled_step(step, dist, NEAR)


def sweep(runs: Sequence[Path], label: str, persist: int) -> list[dict]:
    """One record per run, sorted by p: the run's capability analysis plus its naive path."""
    out = []
    for run in runs:
        log = run_log(Path(run))
        if not log.exists():
            raise ValueError(f"{log}: no trajectory log here (train with python -m empirical.train)")
        naive = [t for t in read_csv(log) if t.protocol == "naive"]
        held = [t for t in naive if t.label == label]
        if not held:
            raise ValueError(f"{log}: no naive trajectory for class {label!r}")
        p, masked = mask_rate(Path(run))
        res = analyse_run(Path(run), label, persist)
        t = held[0]
        start = learned_from(t, naive)  # before the training classes are drawn, the reading wanders
        near = distance(t.z[start:], masked) < NEAR
        res.update(p=p, masked_class=masked, learned_step=float(t.step[start]) if start < t.step.size else None,
                   steps_near_masked_class=t.step[start:][near].tolist(),
                   left_masked_class=left_corner(t.step[start:], t.z[start:], masked), concepts=list(t.concepts), path={"step": t.step.tolist(), "z": t.z.tolist()},
                   final_z=t.z[-1].tolist(), max_accuracy={k: float(np.max(v["accuracy"])) for k, v in res["curves"].items()})
        out.append(res)
    ps = [r["p"] for r in out]
    if len(set(ps)) != len(ps):
        raise ValueError(f"two runs share a masking rate (p = {sorted(ps)}); give one run per p")
    return sorted(out, key=lambda r: r["p"])


def _steps_panel(ax, results: Sequence[dict]) -> None:
    ps = np.array([r["p"] for r in results])
    horizon = max(max(r["path"]["step"]) for r in results)
    for key, marker in (("naive", "o"), ("capability", "s")):
        for level, ls in (("80%", "-"), ("50%", ":")):
            y = np.array([np.nan if r["first_step"].get(key, {}).get(level) is None else r["first_step"][key][level]
                          for r in results], dtype=float)
            ax.plot(ps, y, ls, marker=marker, color=COLORS[key], ms=6 if level == "80%" else 4,
                    label=f"{key} {level}", mfc="none" if level == "50%" else COLORS[key])
            never = ~np.isfinite(y)
            ax.plot(ps[never], np.full(never.sum(), horizon * (1.1 if key == "naive" else 1.18)), marker="^" if level == "80%" else "2",
                    ls="none", color=COLORS[key], ms=8)
    left = np.array([np.nan if r["left_masked_class"] is None else r["left_masked_class"] for r in results], dtype=float)
    went = np.array([bool(r["steps_near_masked_class"]) for r in results])
    ax.plot(ps[went], left[went], "D-", color="0.45", ms=5, label=f"left class {results[0]['masked_class']} for good")
    stays = went & ~np.isfinite(left)
    ax.plot(ps[stays], np.full(stays.sum(), horizon * 1.02), "D", color="0.45", ms=5, mfc="none")
    ax.axhline(horizon, color="0.5", lw=0.7, ls="--")
    ax.text(ps.min(), horizon * 1.02, f"end of training ({horizon:,.0f}); markers above: never", fontsize=7, va="bottom")
    ax.set(xlabel="masking rate p (share of 'red triangle' prompts without their color)",
           ylabel="training step", ylim=(0, horizon * 1.25))
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("(b) steps to 80% / 50% accuracy, and leaving the masked class, vs p (Fig. 8)", fontsize=10)


def draw(results: Sequence[dict], out: Path, *, detail: float) -> Path:
    fig, axes = subplots(1, 3, figsize=(15.5, 4.8))
    cmap = colormaps["viridis"]
    for r in results:
        z = np.array(r["path"]["z"])
        color = cmap(0.9 * r["p"])
        axes[0].plot(z[:, 0], z[:, 1], "-", color=color, lw=1.6, label=f"p = {r['p']:g}")
        axes[0].plot(*z[-1], "o", color=color, ms=6, mec="k")
    square(axes[0], results[0]["concepts"], f"(a) class {results[0]['class']}, naive prompting (Fig. 9a)")
    axes[0].legend(fontsize=7, loc="upper right")
    _steps_panel(axes[1], results)
    near = min(results, key=lambda r: abs(r["p"] - detail))
    for key in ("naive", "overprompt", "capability"):
        cur = near["curves"].get(key)
        if cur is not None:
            axes[2].plot(np.maximum(cur["step"], 1), cur["accuracy"], marker="o", ms=2.5, color=COLORS[key],
                         ls="--" if key == "capability" else "-", label=key if key != "capability" else "best protocol")
    axes[2].set(xscale="log", xlabel="training step", ylabel=f"joint accuracy of class {near['class']}", ylim=(-0.02, 1.02))
    axes[2].grid(alpha=0.25)
    axes[2].legend(fontsize=8, loc="upper left")
    axes[2].set_title(f"(c) naive vs overprompt at p = {near['p']:g} (Fig. 10)", fontsize=10)
    fig.tight_layout()
    return save(fig, out)


@cli.command("figures.masking")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m figures.masking", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="run folders of the sweep, one per masking rate")
    threshold_options(parser)
    parser.add_argument("--detail", type=float, default=0.5, help="p of panel (c): the run nearest it (default 0.5)")
    parser.add_argument("--out", type=Path, default=None, help="folder for masking.png/json (default: the first run's parent)")
    args = parser.parse_args(argv)
    if not 0 <= args.detail <= 1:
        raise ValueError(f"--detail {args.detail}: a masking rate in [0, 1]")
    out = cli.output_dir(args.out or run_log(args.runs[0]).parent.parent, "--out")
    results = sweep(args.runs, args.label, args.persist)
    keep = ("p", "run", "class", "persist", "protocols", "first_step", "lag_behavior_minus_capability", "settled_step",
            "max_accuracy", "final_z", "learned_step", "masked_class", "steps_near_masked_class", "left_masked_class")
    write_json(out / "masking.json", {"runs": [{k: r[k] for k in keep} for r in results]})
    path = draw(results, out / "masking.png", detail=args.detail)
    for r in results:
        fs = r["first_step"]
        print(f"p = {r['p']:g}: naive 80% at {fs['naive']['80%']}, capability 80% at {fs.get('capability', {}).get('80%')}, "
              f"max naive {r['max_accuracy']['naive']:.2f}, final z {np.round(r['final_z'], 2).tolist()}, "
              f"{len(r['steps_near_masked_class'])} checkpoints at class {r['masked_class']}, left it at {r['left_masked_class']}")
    print(f"wrote {out / 'masking.json'} and {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
