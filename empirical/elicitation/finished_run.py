"""Elicitation of a finished run's saved checkpoints, step by step (the command: python -m
empirical.elicit)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

import numpy as np

from empirical.nets.device import select_device
from empirical.training import checkpoint, protocols, runlog
from empirical.images.grid import grid
from empirical.training.config import TrainConfig, saved_config
from core.progress import bar as progress_bar
from core.trajectory import read_csv


def load_run(run: Path) -> tuple[TrainConfig, dict]:
    """A run folder's TrainConfig and config.json, checked; ValueError naming what is wrong."""
    run = Path(run)
    if not run.is_dir():
        raise ValueError(
            f"{run}: not a folder; give a run folder written by python -m empirical.train"
        )
    path = run / "config.json"
    if not path.exists():
        raise ValueError(
            f"{path}: not a training run (no config.json); train one with python -m empirical.train"
        )
    doc = saved_config(run)
    if not isinstance(doc.get("probe"), dict) or not {"path", "hash"} <= set(doc["probe"]):
        raise ValueError(
            f"{path}: not a training run's config: it has no 'probe' section with path and hash"
        )
    try:
        return TrainConfig(**doc["train"]), doc
    except (TypeError, ValueError) as err:  # TypeError: an unknown or missing key
        raise ValueError(f"{path}: {err}") from None


def naive_points(run: Path) -> list[runlog.Logged]:
    """Every naive evaluation of a run: those kept in checkpoints/last.pt (the source training
    rebuilds the log from) and any others in trajectories.csv, so a deleted log loses nothing."""
    run = Path(run)
    points = []
    last = run / "checkpoints" / "last.pt"
    if last.exists():
        try:
            points = [
                runlog.Logged.from_list(p)
                for p in checkpoint.load(last).get("logs", {}).get("points", [])
            ]
        except ValueError as err:
            raise ValueError(f"{last}: {err}") from None
    have = {(p.step, p.label) for p in points}
    log = run / "trajectories.csv"
    if log.exists():
        for t in read_csv(log):
            if t.protocol != "naive":
                continue
            shares, counts = t.shares(), t.extra.get("samples", ("",) * t.step.size)
            for i, s in enumerate(t.step):
                if (int(s), t.label) not in have:
                    share = {k: float(v[i]) for k, v in shares.items() if np.isfinite(v[i])}
                    points.append(
                        runlog.Logged(
                            int(s),
                            t.label,
                            tuple(float(v) for v in t.z[i]),
                            float(t.accuracy[i]),
                            shares=share,
                            samples=int(counts[i] or 0),
                        )
                    )
    return sorted(points, key=lambda p: (p.step, p.label))


def chosen_steps(steps: Sequence[int], every: int) -> list[int]:
    """Every ``every``-th saved step, counted from the first, and always the last."""
    if every < 1:
        raise ValueError(f"--every {every}: must be >= 1 (1 elicits every saved checkpoint)")
    return sorted(set(steps[::every]) | {steps[-1]}) if steps else []


def run_protocols(
    run: Path,
    names: Sequence[str],
    classes: Sequence[str] | None = None,
    *,
    progress: bool = True,
    device: str = "auto",
    every: int = 1,
) -> dict[str, dict]:
    """Elicit the saved checkpoints of a run (every ``every``-th) under each protocol; returns
    {protocol: results}.

    ``classes``: labels to elicit (default every class: held-out ones and the training-class
    control)."""
    run = Path(run)
    cfg, doc = load_run(run)
    labels = _checked(names, classes, cfg)
    probe, digest = _training_probe(doc)
    steps = chosen_steps(_saved(run), every)
    pictured = (
        set(steps[int(i)] for i in np.linspace(0, len(steps) - 1, min(cfg.grids, len(steps))))
        if cfg.grids
        else set()
    )
    dev = select_device(device, "--device")
    final = _final_model(run, cfg, steps, dev) if "patch" in names else None
    log = dict(
        concepts=cfg.concepts,
        classes=cfg.data.classes,
        seed=cfg.seed,
        naive=naive_points(run),  # read once, before anything is rewritten
        meta=runlog.run_meta(cfg, digest, source="empirical.train + empirical.elicit"),
    )
    todo = {
        name: [s for s in steps if not set(labels) <= set(runlog.read_elicit(run, name).get(s, {}))]
        for name in names
    }
    total = sum(map(len, todo.values()))
    bar = progress_bar(total=total, desc="elicit", unit="ckpt", enabled=progress)
    all_results = {}
    for name in names:
        results = runlog.read_elicit(run, name)
        for step in todo[name]:
            t0 = time.perf_counter()
            model = checkpoint.load_model(run, step, cfg, dev)
            found = protocols.elicit_step(model, probe, cfg, step, name, labels, final=final)
            results.setdefault(step, {}).update(
                {label: reading for label, (reading, _) in found.items()}
            )
            if step in pictured:
                _picture(run, cfg, name, step, found)
            info = _info(cfg, name, labels, time.perf_counter() - t0)
            runlog.write_elicit(run, name, results, info)
            runlog.write(run, **log)
            bar.update(1)
        all_results[name] = results
    bar.close()
    runlog.write(run, **log)
    return all_results


def _final_model(run: Path, cfg, steps: list[int], dev):
    """The trained model at the run's last step (the patch protocol's donor)."""
    if steps[-1] != cfg.steps:
        raise ValueError(
            f"--protocols patch needs the final checkpoint (step {cfg.steps}); the last saved is "
            "step "
            f"{steps[-1]}: finish training first, or leave patch out"
        )
    return checkpoint.load_model(run, steps[-1], cfg, dev)


def _checked(names: Sequence[str], classes: Sequence[str] | None, cfg) -> list[str]:
    """The protocols and classes, checked against the run; returns the class labels to elicit."""
    if not names:
        raise ValueError(f"no protocol given; valid: {', '.join(protocols.PROTOCOLS)}")
    for name in names:
        protocols.check_protocol(name, cfg.data)
    labels = list(cfg.data.classes if classes is None else classes)
    if not labels:
        raise ValueError(
            f"no class given; valid: held-out, all, or labels among {', '.join(cfg.data.classes)}"
        )
    for label in labels:
        if label not in cfg.data.classes:
            raise ValueError(f"unknown class {label!r}; valid: {', '.join(cfg.data.classes)}")
    return labels


def _training_probe(doc: dict):
    """The probe the run trained with, (model, hash), refused if it changed since."""
    from empirical.probing.reader import load as load_probe

    probe, _, digest = load_probe(doc["probe"]["path"])
    if digest != doc["probe"]["hash"]:
        raise ValueError(
            f"{doc['probe']['path']}: the probe changed since training ({digest} != "
            f"{doc['probe']['hash']})"
        )
    return probe, digest


def _saved(run: Path) -> list[int]:
    """The steps whose weights the run kept."""
    saved = checkpoint.saved_steps(run)
    if not saved:
        raise ValueError(
            f"{run / 'checkpoints'}: no saved weights (train with keep_checkpoints=true)"
        )
    return saved


def _picture(run: Path, cfg, name: str, step: int, found: dict) -> None:
    """A sample grid of each class's scored draw at the chosen setting (8 images a class)."""
    images = np.concatenate([p.images[:8] for _, p in found.values()])
    shown = np.repeat(list(found), [min(8, p.samples) for _, p in found.values()])
    grid(
        cfg.data,
        images,
        shown,
        8,
        run / "elicit" / "samples" / f"{name}_step_{step:06d}.png",
        title=f"{run.name}: {name} at step {step}, scored draw of the chosen setting",
    )


def _info(cfg, name: str, labels: list[str], seconds: float) -> dict:
    """What the elicitation file records about how a checkpoint was elicited."""
    return {
        "classes": labels,
        "settings": [
            s.name for s in protocols.settings(name, cfg.data, labels[0], cfg.sweep(name))
        ],
        "select_samples": cfg.select_samples,
        "score_samples": {c: cfg.samples_for(c) for c in labels},
        "seconds_per_checkpoint": round(seconds, 2),
    }
