"""Training and checking the probe: diverse training images over each setup's whole range of
separations, the augmentation, the training loop (concept heads on readable images, the readability
head on both kinds), the evaluation on a grid of separations (accuracy, calibration, the share
read), abstention on every unreadable kind, and saving the weights with their content hash and the
report (probe.pt, probe.json).
"""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from empirical.nets import tensorfile
from empirical.images.dgp import DataConfig, sample
from empirical.nets.probe_net import (
    READABLE,
    SETUPS,
    THRESHOLD,
    Probe,
    ProbeConfig,
    content_hash,
    probabilities,
)
from core.progress import bar as progress_bar


def diverse(cfg: ProbeConfig, per_class: int, rng: np.random.Generator, levels: int = 32):
    """Images of every class with separations spread over the setup's range (maximal diversity).

    Each of ``levels`` groups draws every concept's separation independently and uniformly from its
    range, so hard combinations (a faint color on a tiny object) are covered.
    """
    ranges = SETUPS[cfg.setup]["sep_range"]
    images, index = [], []
    for _ in range(levels):
        seps = {c: float(rng.uniform(lo, hi)) for c, (lo, hi) in ranges.items()}
        data = DataConfig(cfg.concepts, seps, resolution=cfg.resolution)
        counts = {label: max(1, per_class // levels) for label in data.classes}
        batch = sample(data, counts, rng)
        images.append(batch.images)
        index.append(batch.index)
    return np.concatenate(images), np.concatenate(index)


def eval_grid(cfg: ProbeConfig) -> list[dict[str, float]]:
    """The separations the probe is evaluated at: every combination of 4 values per concept over its
    range (or ``eval_seps``)."""
    ranges = SETUPS[cfg.setup]["sep_range"]
    seps = {
        c: cfg.eval_seps.get(c, list(np.round(np.linspace(lo, hi, 4), 3)))
        for c, (lo, hi) in ranges.items()
    }
    return [dict(zip(seps, combo)) for combo in itertools.product(*seps.values())]


def augment(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Readable images as a sampler may draw them: half get pixel noise of sd up to 0.05."""
    sd = rng.uniform(0, 0.05, (images.shape[0], 1, 1, 1)) * (
        rng.random((images.shape[0], 1, 1, 1)) < 0.5
    )
    return np.clip(images + sd * rng.standard_normal(images.shape), 0, 1).astype(np.float32)


def train(
    cfg: ProbeConfig, *, progress: bool = True, checkpoint: Path | None = None
) -> tuple[Probe, dict]:
    """Train a probe (AdamW) on a fixed set of diverse renders and unreadable images; returns
    (model, training report).

    Each batch is half readable renders (concept heads and the readable head learn from them) and
    half unreadable images of every kind in :mod:`empirical.probing.unreadable` (the readable head
    only).
    """
    from empirical.probing import unreadable

    rng = np.random.default_rng(cfg.seed)
    images, index = diverse(cfg, cfg.train_per_class, rng)
    x_all, y_all = torch.from_numpy(augment(images, rng)), torch.from_numpy(index)
    x_neg = torch.from_numpy(unreadable.negatives(x_all.shape[0], cfg.resolution, rng))
    return fit(cfg, x_all, y_all, x_neg, progress=progress, checkpoint=checkpoint)


SAVE_EVERY = 100  # probe training steps between the states it resumes from


def _resume(path: Path | None, cfg: ProbeConfig, model, opt, sched, gen) -> int:
    """The step a probe's interrupted training resumes from (its state restored in place); 0 where
    there is none, or it was saved for another config."""
    if path is None or not path.is_file():
        return 0
    state = tensorfile.load(path, "probe training state")
    if state.get("config") != asdict(cfg):
        return 0
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    gen.set_state(state["gen"])
    return int(state["step"])


def fit(
    cfg: ProbeConfig,
    x_all: torch.Tensor,
    y_all: torch.Tensor,
    x_neg: torch.Tensor,
    *,
    progress: bool,
    view: Callable[[torch.Tensor], torch.Tensor] | None = None,
    checkpoint: Path | None = None,
) -> tuple[Probe, dict]:
    """The training loop on readable images ``x_all`` (their concept values ``y_all``, (N, C)) and
    unreadable ones ``x_neg``; ``view`` turns a batch's readable rows into what the model sees
    (default: as stored). With ``checkpoint``, the state is saved there every SAVE_EVERY steps and
    an interrupted run resumes from it (to the same weights as one uninterrupted, on a CPU)."""
    torch.manual_seed(cfg.seed)
    model = Probe(cfg.concepts, [2] * len(cfg.concepts), cfg.channels, cfg.pool)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=cfg.lr, total_steps=cfg.steps, pct_start=0.1
    )
    start = time.perf_counter()
    gen = torch.Generator().manual_seed(cfg.seed)
    first = _resume(checkpoint, cfg, model, opt, sched, gen)
    bar = progress_bar(range(first, cfg.steps), desc="probe", unit="step", enabled=progress)
    half = cfg.batch // 2
    target = torch.cat([torch.ones(cfg.batch - half), torch.zeros(half)])
    model.train()
    loss = torch.tensor(float("nan"))
    for step in bar:
        rows = torch.randint(0, x_all.shape[0], (cfg.batch - half,), generator=gen)
        neg = torch.randint(0, x_neg.shape[0], (half,), generator=gen)
        seen = x_all[rows] if view is None else view(x_all[rows])
        logits = model(torch.cat([seen, x_neg[neg]]))
        loss = sum(
            F.cross_entropy(logits[c][: cfg.batch - half], y_all[rows, i])
            for i, c in enumerate(cfg.concepts)
        )
        loss = loss + F.binary_cross_entropy_with_logits(logits[READABLE], target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
        if checkpoint is not None and (step + 1) % SAVE_EVERY == 0 and step + 1 < cfg.steps:
            state = {"model": model.state_dict(), "opt": opt.state_dict()}
            state |= {"sched": sched.state_dict(), "gen": gen.get_state(), "step": step + 1}
            tensorfile.save(checkpoint, {**state, "config": asdict(cfg)})
    model.eval()
    return model, {
        "train_seconds": time.perf_counter() - start,
        "train_images": int(x_all.shape[0]),
        "train_unreadable_images": int(x_neg.shape[0]),
        "final_loss": float(loss.detach()),
    }


def ece(prob: np.ndarray, target: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error of the predicted class's probability."""
    conf = prob.max(-1)
    correct = prob.argmax(-1) == target
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (conf > lo) & (conf <= hi)
        if sel.any():
            total += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(total)


def evaluate(
    model: Probe, cfg: ProbeConfig, *, per_class: int = 256, seed: int = 12345
) -> list[dict]:
    """Per separation setting, on fresh images of every class: per-concept accuracy (an abstention
    counts as wrong), ECE, and the share of images the probe reads."""
    rng = np.random.default_rng(seed)
    rows = []
    for seps in eval_grid(cfg):
        data = DataConfig(cfg.concepts, seps, resolution=cfg.resolution)
        batch = sample(data, {label: per_class for label in data.classes}, rng)
        held = np.isin(batch.labels, data.held_out)
        rows.append({"sep": seps, **reading(model, batch.images, batch.index, held)})
    return rows


def reading(model: Probe, images, index: np.ndarray, held: np.ndarray) -> dict:
    """How the probe reads images of known concept values ``index`` (N, C): the share read, each
    concept's accuracy (a refusal counts as wrong) and ECE, and the joint accuracy on the ``held``
    rows (None: none)."""
    prob, p_read = probabilities(model, images)
    read = p_read >= THRESHOLD
    row: dict = {"readable": float(read.mean())}
    for i, c in enumerate(model.concepts):
        row[c] = {
            "accuracy": float(np.mean(read & (prob[:, i].argmax(-1) == index[:, i]))),
            "ece": ece(prob[:, i], index[:, i]),
        }
    correct = read & np.all(prob.argmax(-1) == index, axis=1)
    row["held_out_class_joint_accuracy"] = float(np.mean(correct[held])) if held.any() else None
    return row


def summary(rows: list[dict], concepts) -> dict:
    """The report's worst cases over the evaluation rows."""
    return {
        "evaluation": rows,
        "min_accuracy": {c: min(r[c]["accuracy"] for r in rows) for c in concepts},
        "min_readable": min(r["readable"] for r in rows),
        "max_ece": {c: max(r[c]["ece"] for r in rows) for c in concepts},
        "unreadable_threshold": THRESHOLD,
    }


def abstention(
    model: Probe, cfg: ProbeConfig, *, per_kind: int = 256, seed: int = 54321
) -> dict[str, float]:
    """kind -> the share of the validation suite's images of that kind the probe calls
    unreadable."""
    from empirical.probing import unreadable

    return {
        kind: float(np.mean(probabilities(model, images)[1] < THRESHOLD))
        for kind, images in unreadable.suite(per_kind, cfg.resolution, seed).items()
    }


def save(model: Probe, cfg: ProbeConfig, report: dict, out: Path) -> dict:
    """Write probe.pt (weights, config, hash; atomically) and probe.json (the report); returns the
    report."""
    from core.files import write_json

    digest = content_hash(model)
    tensorfile.save(
        out / "probe.pt", {"config": asdict(cfg), "state_dict": model.state_dict(), "hash": digest}
    )
    doc = {"config": asdict(cfg), "hash": digest, **report}
    write_json(out / "probe.json", doc)
    return doc


def train_evaluate_save(
    cfg: ProbeConfig, out: Path, *, progress: bool = True
) -> tuple[Probe, dict]:
    """Train a probe, evaluate it on the separation grid and the unreadable suite, save it with the
    report. An interrupted training resumes from ``out``/probe-train.pt (removed once the probe is
    saved)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = out / "probe-train.pt"
    model, report = train(cfg, progress=progress, checkpoint=state)
    if progress:  # minutes without a line otherwise
        print(
            "probe: evaluating on the separation grid and the unreadable kinds...", file=sys.stderr
        )
    report.update(summary(evaluate(model, cfg), cfg.concepts), abstention=abstention(model, cfg))
    doc = save(model, cfg, report, out)
    state.unlink(missing_ok=True)
    return model, doc
