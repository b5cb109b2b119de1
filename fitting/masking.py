"""The underspecification experiment (paper Sec. 5): the analysis of a sweep of masked-prompt runs.

  python -m fitting.masking RUN_DIR [RUN_DIR ...] [--class 11] [--persist 2] [--out DIR]
  python -m figures.masking DIR/masking.json                  # then draw it

Each run is one training run of the sweep (e.g. --preset tiny-mask --set mask_p=P); its masking
rate, masked class and seed are read from the run's log, so a sweep may hold several seeds per p
(two runs with the same p and seed are an error). Writes DIR/masking.json (default DIR: the first
run's parent folder): ``runs``, one record per run sorted by (p, seed):

  first_step / settled_step   when naive prompting, each protocol and the capability (best protocol)
                              reach 50% and 80% (fitting.capability's rules, levels held for
                              --persist)
  learned_step                the first checkpoint at which the training classes are drawn (mean
                              accuracy >= 0.5); the held-out path is read from there on
  steps_near_masked_class     checkpoints at which the held-out class is drawn as the masked class
                              (within 0.15 of its corner in concept space)
  left_masked_class           the step from which it stays away from that class (null: never left,
                              or never went there)
  max_accuracy, final_z       per protocol, and the last concept-space point
  final_shares                what the held-out class's samples were read as at the last checkpoint
                              (share per corner and unreadable; {} for logs without shares)
  peak_share_masked_class     the highest share of its samples read as the masked class once the
                              training classes are drawn, and its step (null without shares): a
                              mixture of two corners can sit far from both in concept space
  path, curves                the naive path and every accuracy curve, for the figure

and ``levels``, one per p over its seeds: each time above as the median and range of the seeds that
got there and how many did not (``n_censored``: never within the run, a lower bound, not a number),
the checkpoints near the masked class, the final point, the highest share read as the masked class,
the share read as the masked class and as the held-out class itself at the end, and each protocol's
highest accuracy (median and range).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.analyses.capability_readings import analyse_run, runs_arguments
from fitting.analyses.study_levels import steps_text, summarise
from fitting.estimators.trajectory_turn import NEAR, distance, learned_from, left_corner
from core import cli
from fitting.records import MaskingRecord
from core.sidecar import read_meta, run_log
from core.trajectory import Trajectory, read_csv


def mask_rate(run: Path) -> tuple[float, str, int | None]:
    """The run's masking rate p, masked class and seed (None when not recorded), from its log's meta
    (config)."""
    config = (read_meta(run_log(run)) or {}).get("config")
    p = config.get("mask_p") if isinstance(config, dict) else None
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
        raise ValueError(
            f"{run_log(run)}: its meta has no config.mask_p in [0, 1] (was it trained with "
            "empirical.train?)"
        )
    classes = config.get("mask_classes") or ["10"]
    masked = classes[0] if isinstance(classes, list) else None
    if not isinstance(masked, str) or not masked or set(masked) - {"0", "1"}:
        raise ValueError(
            f"{run_log(run)}: its meta's config.mask_classes {classes!r} is not a list of labels "
            "like ['10']"
        )
    seed = config.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError(f"{run_log(run)}: its meta's config.seed {seed!r} is not an integer")
    return float(p), masked, seed


def final_shares(traj: Trajectory) -> dict[str, float]:
    """What the class's samples were read as at its last checkpoint: corner (or unreadable) ->
    share."""
    return {corner: float(v[-1]) for corner, v in traj.shares().items() if np.isfinite(v[-1])}


def peak_share(traj: Trajectory, corner: str, start: int) -> dict | None:
    """The highest share of the class's samples read as ``corner`` from row ``start`` on, and its
    step (None without shares). A mixture of samples read as two corners can sit far from both in
    concept space; the share sees it."""
    share = traj.shares().get(corner)
    if share is None or start >= share.size or not np.isfinite(share[start:]).any():
        return None
    i = start + int(np.nanargmax(share[start:]))
    return {"value": float(share[i]), "step": float(traj.step[i])}


def analyse(run: Path, label: str, persist: int) -> dict:
    """One run's record (see the module docstring)."""
    log = run_log(Path(run))
    if not log.exists():
        raise ValueError(f"{log}: no trajectory log here (train with python -m empirical.train)")
    naive = [t for t in read_csv(log) if t.protocol == "naive"]
    held = next((t for t in naive if t.label == label), None)
    if held is None:
        raise ValueError(f"{log}: no naive trajectory for class {label!r}")
    p, masked, seed = mask_rate(Path(run))
    res = analyse_run(Path(run), label, persist)
    start = learned_from(held, naive)  # before the training classes are drawn, the reading wanders
    learned = held.step[start] if start < held.step.size else None
    peak = peak_share(held, masked, start)
    t = held.with_points()  # steps where something was readable
    start = int(np.searchsorted(t.step, learned)) if learned is not None else t.step.size
    near = distance(t.z[start:], masked) < NEAR
    res.update(
        p=p,
        seed=seed,
        masked_class=masked,
        learned_step=None if learned is None else float(learned),
        last_step=float(held.step[-1]),
        steps_near_masked_class=t.step[start:][near].tolist(),
        left_masked_class=left_corner(t.step[start:], t.z[start:], masked),
        concepts=list(t.concepts),
        path={"step": t.step.tolist(), "z": t.z.tolist()},
        final_z=t.z[-1].tolist(),
        final_shares=final_shares(held),
        peak_share_masked_class=peak,
        max_accuracy={k: float(np.max(v["accuracy"])) for k, v in res["curves"].items()},
    )
    return res


def sweep(runs: Sequence[Path], label: str, persist: int) -> list[dict]:
    """One record per run, sorted by (p, seed): the run's capability analysis plus its naive
    path."""
    out = [analyse(Path(run), label, persist) for run in runs]
    seen: dict[tuple, str] = {}
    for r in out:
        key = (r["p"], r["seed"])
        if key in seen:
            seed = "no seed recorded" if r["seed"] is None else f"seed {r['seed']}"
            raise ValueError(
                f"two runs share a masking rate and seed (p = {r['p']:g}, {seed}): {seen[key]} "
                f"and {r['run']}; "
                "give one run per (p, seed)"
            )
        seen[key] = r["run"]
    return sorted(out, key=lambda r: (r["p"], -1 if r["seed"] is None else r["seed"]))


def spread(values: Sequence[float]) -> dict | None:
    """Median and range of numbers (None for none)."""
    return (
        {"median": float(np.median(values)), "range": [float(min(values)), float(max(values))]}
        if len(values)
        else None
    )


def levels(records: Sequence[dict]) -> list[dict]:
    """One summary per masking rate over its seeds (see the module docstring)."""
    out = []
    for p in sorted({r["p"] for r in records}):
        group = [r for r in records if r["p"] == p]
        masked, label = group[0]["masked_class"], group[0]["class"]
        protocols = sorted({k for r in group for k in r["first_step"]})
        times = {
            k: {
                lv: summarise(
                    [r["first_step"].get(k, {}).get(lv) for r in group],
                    [
                        r["last_step"] if r["first_step"].get(k, {}).get(lv) is None else None
                        for r in group
                    ],
                )
                for lv in ("50%", "80%")
            }
            for k in protocols
        }
        went = [r for r in group if r["steps_near_masked_class"]]
        out.append(
            {
                "p": p,
                "runs": [r["run"] for r in group],
                "seeds": [r["seed"] for r in group],
                "first_step": times,
                "checkpoints_near_masked_class": spread(
                    [len(r["steps_near_masked_class"]) for r in group]
                ),
                "went_to_masked_class": len(went),
                "left_masked_class": summarise(
                    [r["left_masked_class"] for r in went],
                    [r["last_step"] for r in went if r["left_masked_class"] is None],
                ),
                "final_z": {
                    c: spread([r["final_z"][i] for r in group])
                    for i, c in enumerate(group[0]["concepts"])
                },
                "peak_share_masked_class": spread(
                    [
                        r["peak_share_masked_class"]["value"]
                        for r in group
                        if r.get("peak_share_masked_class")
                    ]
                ),
                "final_share": {
                    k: spread([r["final_shares"][k] for r in group if k in r["final_shares"]])
                    for k in (masked, label)
                },
                "max_accuracy": {
                    k: spread([r["max_accuracy"][k] for r in group if k in r["max_accuracy"]])
                    for k in protocols
                },
            }
        )
    return out


def _spread_text(v: dict | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    lo, hi = v["range"]
    text = f"{v['median']:.{digits}f}"
    return text if lo == hi else text + f" [{lo:.{digits}f}, {hi:.{digits}f}]"


def table(doc: MaskingRecord) -> str:
    """masking.json's levels as a markdown table (results/study-notebook.md quotes it): medians
    [range] over the seeds."""
    lv = doc.levels
    masked, label = doc.runs[0]["masked_class"], doc.label
    concepts = doc.runs[0]["concepts"]
    protocols = [
        k for k in ("naive", "overprompt", "capability") if any(k in x["first_step"] for x in lv)
    ]
    head = (
        ["p", "seeds"]
        + [f"{k} 50%" for k in protocols]
        + [f"checkpoints at {masked}", f"left {masked}"]
        + [f"final z_{c}" for c in concepts]
        + [
            f"highest share read as {masked}",
            f"final share read as {masked}",
            f"final share read as {label}",
        ]
        + [f"highest accuracy, {k}" for k in protocols]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for x in lv:
        left = x["left_masked_class"]
        cells = (
            [f"{x['p']:g}", ", ".join("-" if s is None else str(s) for s in x["seeds"])]
            + [
                steps_text(x["first_step"][k]["50%"]) if k in x["first_step"] else "-"
                for k in protocols
            ]
            + [
                _spread_text(x["checkpoints_near_masked_class"], 0),
                "never went there"
                if not x["went_to_masked_class"]
                else f"{steps_text(left)}; {x['went_to_masked_class']}/{len(x['runs'])} went there",
            ]
            + [_spread_text(x["final_z"][c]) for c in concepts]
            + [
                _spread_text(x["peak_share_masked_class"]),
                _spread_text(x["final_share"][masked]),
                _spread_text(x["final_share"][label]),
            ]
            + [_spread_text(x["max_accuracy"].get(k)) for k in protocols]
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    args = runs_arguments(
        argv,
        runs_help="run folders of the sweep, one per (masking rate, seed)",
        out_help="folder for masking.json (default: the first run's parent)",
    )
    out = cli.output_dir(args.out or cli.default_out(run_log(args.runs[0]).parent.parent), "--out")
    if cli.checking(args):
        return 0
    results = sweep(args.runs, args.label, args.persist)
    doc = MaskingRecord(
        label=args.label, persist=args.persist, runs=results, levels=levels(results)
    )
    path = doc.write(out / MaskingRecord.FILE)
    for r in results:
        fs = r["first_step"]
        seed = "" if r["seed"] is None else f", seed {r['seed']}"
        print(
            f"p = {r['p']:g}{seed}: naive 80% at {fs['naive']['80%']}, capability 80% at "
            f"{fs.get('capability', {}).get('80%')}, "
            f"max naive {r['max_accuracy']['naive']:.2f}, final z "
            f"{np.round(r['final_z'], 2).tolist()}, "
            f"{len(r['steps_near_masked_class'])} checkpoints at class {r['masked_class']}, left "
            f"it at {r['left_masked_class']}"
        )
    print(table(doc))
    print(f"wrote {path}; draw it with python -m figures.masking {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
