"""The underspecification experiment (paper Sec. 5): the analysis of a sweep of masked-prompt runs.

  python -m fitting.masking RUN_DIR [RUN_DIR ...] [--class 11] [--persist 2] [--out DIR]
  python -m figures.masking DIR/masking.json                  # then draw it

Each run is one training run of the sweep (e.g. --preset tiny-mask --set mask_p=P); its masking rate
and masked class are read from the run's log. Writes DIR/masking.json (default DIR: the first run's
parent folder), one record per p, sorted by p:

  first_step / settled_step   when naive prompting, each protocol and the capability (best protocol)
                              reach 50% and 80% (fitting.capability's rules, levels held for --persist)
  learned_step                the first checkpoint at which the training classes are drawn (mean
                              accuracy >= 0.5); the held-out path is read from there on
  steps_near_masked_class     checkpoints at which the held-out class is drawn as the masked class
                              (within 0.15 of its corner in concept space)
  left_masked_class           the step from which it stays away from that class (null: never left,
                              or never went there)
  max_accuracy, final_z       per protocol, and the last concept-space point
  path, curves                the naive path and every accuracy curve, for the figure
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.capability import analyse_run, runs_arguments
from fitting.curves import settled_step
from fitting.turn import learned_from
from theory import cli
from theory.files import write_json
from theory.trajectory import read_csv, read_meta, run_log

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
        start = learned_from(held[0], naive)  # before the training classes are drawn, the reading wanders
        learned = held[0].step[start] if start < held[0].step.size else None
        t = held[0].with_points()  # steps where something was readable
        start = int(np.searchsorted(t.step, learned)) if learned is not None else t.step.size
        near = distance(t.z[start:], masked) < NEAR
        res.update(p=p, masked_class=masked, learned_step=None if learned is None else float(learned),
                   steps_near_masked_class=t.step[start:][near].tolist(),
                   left_masked_class=left_corner(t.step[start:], t.z[start:], masked), concepts=list(t.concepts),
                   path={"step": t.step.tolist(), "z": t.z.tolist()}, final_z=t.z[-1].tolist(),
                   max_accuracy={k: float(np.max(v["accuracy"])) for k, v in res["curves"].items()})
        out.append(res)
    ps = [r["p"] for r in out]
    if len(set(ps)) != len(ps):
        raise ValueError(f"two runs share a masking rate (p = {sorted(ps)}); give one run per p")
    return sorted(out, key=lambda r: r["p"])


@cli.command("fitting.masking")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fitting.masking``: see the module docstring."""
    args = runs_arguments("fitting.masking", __doc__, argv, runs_help="run folders of the sweep, one per masking rate",
                          out_help="folder for masking.json (default: the first run's parent)")
    out = cli.output_dir(args.out or run_log(args.runs[0]).parent.parent, "--out")
    results = sweep(args.runs, args.label, args.persist)
    path = write_json(out / "masking.json", {"class": args.label, "persist": args.persist, "runs": results})
    for r in results:
        fs = r["first_step"]
        print(f"p = {r['p']:g}: naive 80% at {fs['naive']['80%']}, capability 80% at {fs.get('capability', {}).get('80%')}, "
              f"max naive {r['max_accuracy']['naive']:.2f}, final z {np.round(r['final_z'], 2).tolist()}, "
              f"{len(r['steps_near_masked_class'])} checkpoints at class {r['masked_class']}, left it at {r['left_masked_class']}")
    print(f"wrote {path}; draw it with python -m figures.masking {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
