"""Training a run: the loop, its progress lines and its summary (the command: python -m
empirical.train)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from empirical.training.config import TrainConfig
from empirical.training.run import Run, open_run
from core.sidecar import headline_class


class Meter:
    """Averages of the training records between two flushes."""

    def __init__(self):
        self.sums, self.count, self.start = {}, 0, time.perf_counter()

    def add(self, values: dict[str, float]) -> None:
        """Add one update's loss terms."""
        for k, v in values.items():
            self.sums[k] = self.sums.get(k, 0.0) + v
        self.count += 1

    def flush(self, step: int, batch: int, wall: float, gamma: nn.Module) -> dict:
        """The averaged training record since the last flush (with γ(0), γ(1), wall time, images/s);
        resets."""
        elapsed = time.perf_counter() - self.start
        with torch.no_grad():
            dev = gamma.b.device
            g0, g1 = (
                float(gamma(torch.zeros((), device=dev))),
                float(gamma(torch.ones((), device=dev))),
            )
        rec = {
            "kind": "train",
            "step": step,
            **{k: v / max(self.count, 1) for k, v in self.sums.items()},
            "gamma_0": g0,
            "gamma_1": g1,
            "wall_s": round(wall, 3),
            "images_per_s": round(self.count * batch / max(elapsed, 1e-9), 1),
        }
        self.__init__()
        return rec


def train(
    cfg: TrainConfig,
    out: Path,
    *,
    progress: bool = True,
    stop_after: int | None = None,
    command: Sequence[str] | None = None,
) -> dict:
    """Run (or resume) training; returns a summary. ``stop_after`` stops after that many updates
    (tests); ``command``: the command line for the reproducibility stamp (default: this
    process's)."""
    from tqdm import tqdm

    run = open_run(cfg, out, progress=progress, command=command)
    if run.step == 0 and 0 in run.evals and not run.logs.points:  # the untrained model, once
        run.evaluate()
        run.save(evaluated=True)
    held, evals, meter = headline(cfg), set(run.evals), Meter()
    bar = tqdm(
        total=cfg.steps,
        initial=run.step,
        desc=f"train {cfg.preset}",
        unit="step",
        disable=None if progress else True,
    )
    run.vdm.train()
    plain, start = progress and not sys.stderr.isatty(), (run.step, run.wall)
    tick = time.perf_counter()
    try:
        while run.step < cfg.steps and (stop_after is None or stop_after > 0):
            meter.add(run.train_step())
            now = time.perf_counter()
            run.wall, tick = run.wall + now - tick, now
            is_eval = run.step in evals
            is_save = run.step % cfg.save_every == 0 or run.step == cfg.steps
            if run.step % cfg.log_every == 0 or is_eval or is_save:
                record = meter.flush(run.step, cfg.batch, run.wall, run.vdm.gamma)
                run.logs.metrics.append(record)
                bar.set_postfix(loss=f"{record['total']:.3f}", refresh=False)
            if is_eval:
                run.evaluate()
                bar.set_postfix(
                    loss=f"{record['total']:.3f}",
                    **{f"z{held}": ",".join(f"{v:.2f}" for v in run.point(held))},
                    refresh=False,
                )
                if plain:  # tqdm draws no bar into a log file: one line per checkpoint instead
                    print(checkpoint_line(run, held, start), file=sys.stderr, flush=True)
            if is_eval or is_save:
                run.save(evaluated=is_eval)
                tick = time.perf_counter()  # evaluation and saving are not training time
            bar.update(1)
            if stop_after is not None:
                stop_after -= 1
    finally:
        bar.close()
    return summary(run)


def headline(cfg) -> str:
    """The class a run's progress lines follow: the held-out class with every concept present (11,
    111)."""
    return headline_class(cfg.data.classes, {"held_out": cfg.data.held_out})


def checkpoint_line(run: Run, held: str, start: tuple[int, float]) -> str:
    """A checkpoint in one line of a log: step, training speed since ``start`` (step, training
    seconds), loss, the held-out class's point and accuracy, and the training time left at that
    speed."""
    cfg, metrics = run.cfg, run.logs.metrics
    loss = next(m["total"] for m in reversed(metrics) if m["kind"] == "train")
    reading = next(m for m in reversed(metrics) if m["kind"] == "eval")["classes"][held]
    z = ", ".join("nan" if v is None else f"{v:.2f}" for v in reading["z"])
    rate = (run.step - start[0]) / max(run.wall - start[1], 1e-9)
    left = f"{(cfg.steps - run.step) / rate / 60:.0f} min" if rate > 0 else "unknown"
    return (
        f"train {cfg.preset}: step {run.step:,}/{cfg.steps:,}, {rate:.2f} steps/s, loss "
        f"{loss:.3f}; "
        f"class {held} at ({z}), accuracy {reading['accuracy']:.2f}; training left {left}"
    )


def summary(run: Run) -> dict:
    """What train() returns: the step reached, training seconds, folder, probe hash and final
    points."""
    return {
        "step": run.step,
        "wall_s": run.wall,
        "out": str(run.out),
        "probe_hash": run.meta["probe_hash"],
        "final": {p.label: list(p.z) for p in run.logs.points if p.step == run.step},
    }
