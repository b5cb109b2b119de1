"""A training run as an object: opened from its folder (refusing another run's folder before writing
anything), resumed from ``checkpoints/last.pt``, and driven by :func:`empirical.training.loop.train`
through named steps. Also the pieces that make resuming exact: the batch of a step is a pure
function of (seed, step), and last.pt holds the model, optimizer, EMA, RNG states and every log.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from empirical.nets.device import autocast, device_name, resolve_precision, select_device
from empirical.training import checkpoint, evaluate, protocols, runlog
from empirical.nets import unet
from empirical.nets.ema import ema_decay
from empirical.training.config import TrainConfig, check_folder, saved_config
from empirical.training.probes import load_probe, provide_probe
from empirical.images.dgp import mask, sample
from empirical.images.faces import batch_faces, training_faces
from empirical.images.grid import grid
from core.stamp import stamp
from core.files import write_json
from core.trajectory import UNREADABLE


def training_set(
    cfg: TrainConfig, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Images, conditioning vectors (masked where the config says) and which rows were masked. Faces
    stay uint8 on the CPU (:meth:`Run.batch` augments each batch and moves it to the device)."""
    data = cfg.data
    if cfg.celeba:
        images, h = training_faces(cfg.celeba, data, cfg.per_class)
        return torch.from_numpy(images), torch.from_numpy(h).to(device), np.zeros(len(h), bool)
    batch = sample(data, {label: cfg.per_class for label in data.train_classes}, cfg.seed)
    h, hit = mask(
        batch.h,
        batch.labels,
        concepts=cfg.mask_concepts,
        classes=cfg.mask_classes,
        p=cfg.mask_p,
        rng=cfg.seed + 1,
    )
    return torch.from_numpy(batch.images).to(device), torch.from_numpy(h).to(device), hit


def batch_rows(step: int, n: int, size: int, seed: int) -> torch.Tensor:
    """Rows of the batch of update ``step``: consecutive slices of per-epoch permutations.

    A pure function of (step, seed), so a resumed run draws exactly the batches it would have.
    """
    start = step * size
    rows, need = [], size
    while need:
        epoch, offset = divmod(start, n)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 7919 + epoch))
        take = perm[offset : offset + need]
        rows.append(take)
        need -= take.numel()
        start += take.numel()
    return torch.cat(rows)


def optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW, with torch's fused kernel where this torch has one for the device (CPU: torch >= 2.4;
    3x faster than the per-parameter loop on the tiny net); the same update up to rounding, and the
    same state to resume."""
    try:
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
    # an older torch, or a device without the fused kernel
    except (
        RuntimeError,
        TypeError,
        ValueError,
    ):
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def previous_stamps(out: Path) -> list[dict]:
    """The stamps of the earlier starts of a run (config.json's ``stamps``; one per start, resumes
    included)."""
    stamps = saved_config(out, required=False).get("stamps", [])
    return [s for s in stamps if isinstance(s, dict)] if isinstance(stamps, list) else []


class Diverged(ValueError):
    """Training produced a non-finite loss, gradient or evaluation; nothing after the last good save
    is kept."""

    def __init__(self, cfg: TrainConfig, step: int, what: str, saved: int | None):
        kept = (
            f"checkpoints/last.pt still holds step {saved}, the last good state"
            if saved is not None
            else "nothing was saved"
        )
        super().__init__(
            f"training diverged at step {step} ({what}); {kept}. Rerunning resumes there but "
            "diverges again at the same "
            "step (batches are fixed by seed and step): start again in another --out with a "
            "smaller lr or clip "
            f"(now lr={cfg.lr:g}, clip={cfg.clip:g})"
        )


class Run:
    """One training run, opened from its folder: model, optimizer, EMA, data, probe and logs, with
    the steps of the loop named (``train_step``, ``evaluate``, ``save``). Opening refuses a folder
    that holds another run before anything is written, reads the probe (which must exist:
    :func:`provide_probe`), then writes config.json and resumes from checkpoints/last.pt if any.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        out: Path,
        *,
        command: Sequence[str] | None = None,
    ):
        self.cfg, self.out = cfg, Path(out)
        self.device = select_device(cfg.device, "device=")
        check_folder(self.out, cfg)
        state = checkpoint.resume_state(self.out, cfg)
        self.probe, probe_dir, probe_hash = load_probe(cfg, self.out)
        self.meta = runlog.run_meta(cfg, probe_hash, source="empirical.train")
        self.out.mkdir(parents=True, exist_ok=True)
        now = {
            **stamp(device=device_name(self.device), command=command),
            "step": 0 if state is None else state["step"],
            "precision": resolve_precision(cfg.precision, self.device),
        }
        write_json(
            self.out / "config.json",
            {
                "train": cfg.to_json(),
                "probe": {"path": probe_dir, "hash": probe_hash},
                "concepts": list(cfg.concepts),
                "classes": cfg.data.classes,
                "held_out": cfg.data.held_out,
                "stamps": previous_stamps(self.out) + [now],
            },
        )
        # model init, then dropout and time sampling draw from this stream
        torch.manual_seed(cfg.seed)
        self.vdm = checkpoint.build_model(cfg).to(self.device)
        self.opt = optimizer(self.vdm.parameters(), cfg)
        self.ema = copy.deepcopy(self.vdm).requires_grad_(False) if cfg.ema > 0 else None
        self.x, self.h, _ = training_set(cfg, self.device)
        self.clipped = list((self.vdm.net if cfg.clip_scope == "net" else self.vdm).parameters())
        self.logs, self.step, self.wall, self.saved = runlog.Logs(), 0, 0.0, None
        self.streams: dict[str, torch.Generator | None] | None = None  # an ensemble member's own
        self.evals = cfg.eval_schedule()
        self.grid_steps = (
            {self.evals[int(i)] for i in np.linspace(0, len(self.evals) - 1, cfg.grids)}
            if cfg.grids
            else set()
        )
        if state is not None:
            self.resume(state)

    @property
    def last(self) -> Path:
        """checkpoints/last.pt: everything needed to resume."""
        return self.out / "checkpoints" / "last.pt"

    @property
    def model_eval(self) -> nn.Module:
        """The weights evaluated and saved per checkpoint: the EMA's when EMA is on."""
        return self.ema if self.ema is not None else self.vdm

    def resume(self, state: dict) -> None:
        """Restore model, optimizer, EMA, RNG states, step, wall time and logs from last.pt's
        state."""
        checkpoint.load_weights(self.vdm, state, self.last)
        self.opt.load_state_dict(state["optimizer"])
        if self.ema is not None:
            checkpoint.load_weights(self.ema, state, self.last, key="ema")
        torch.set_rng_state(state["rng"]["cpu"])
        if self.device.type == "cuda" and state["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state(state["rng"]["cuda"])
        self.logs, self.step, self.wall = runlog.Logs(**state["logs"]), state["step"], state["wall"]
        self.saved = self.step
        # in case the last run died between saving and writing
        self.logs.write(self.out, self.cfg, self.meta)
        print(f"train: resuming {self.out} from step {self.step}", file=sys.stderr)

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The images and h of this step's batch (a pure function of seed and step) on the device;
        faces flipped and jittered (empirical.images.faces.batch_faces)."""
        cfg = self.cfg
        rows = batch_rows(self.step, self.x.shape[0], cfg.batch, cfg.seed)
        if not cfg.celeba:
            rows = rows.to(self.device)
            return self.x[rows], self.h[rows]
        x = batch_faces(self.x[rows.cpu()], cfg.seed, self.step).to(self.device)
        return x, self.h[rows.to(self.device)]

    def train_step(self) -> dict[str, float]:
        """One AdamW update on the batch of this step (a pure function of seed and step); returns
        its loss terms."""
        cfg = self.cfg
        x, h = self.batch()
        own = self.stream
        with autocast(self.device, cfg.precision), unet.drawing_from(own):
            terms = self.vdm.loss(x, h, generator=own)
        loss = terms["total"].mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(self.clipped, cfg.clip)
        # one device-to-host copy per update, not one per number (each is a sync that stalls a
        # shared GPU)
        values = torch.stack(
            [t.detach().mean().float() for t in (loss, norm, *terms.values())]
        ).tolist()
        loss_value, grad_norm, logged = values[0], values[1], dict(zip(terms, values[2:]))
        # before the update poisons the weights
        if not (math.isfinite(loss_value) and math.isfinite(grad_norm)):
            raise Diverged(
                cfg, self.step + 1, f"loss {loss_value:g}, gradient norm {grad_norm:g}", self.saved
            )
        self.opt.step()
        if self.ema is not None:
            decay = ema_decay(cfg.ema, self.step, cfg.ema_warmup)
            torch._foreach_lerp_(
                list(self.ema.parameters()), list(self.vdm.parameters()), 1 - decay
            )
        self.step += 1
        return logged | {"grad_norm": grad_norm}

    def evaluate(
        self, images: dict[str, np.ndarray] | None = None, elicited: dict[str, dict] | None = None
    ) -> None:
        """Every class's reading from the naive prompt (and the in-training protocols), logged.
        ``images``: the naive samples already drawn, ``elicited``: protocols' readings already made
        ({protocol: {label: reading}}; an ensemble draws its members' at once), else drawn here."""
        cfg, s, model = self.cfg, self.step, self.model_eval
        t0 = time.perf_counter()
        try:
            points = evaluate.naive(
                model,
                self.probe,
                cfg.data,
                samples={c: cfg.samples_for(c) for c in cfg.data.classes},
                steps=cfg.sample_steps,
                guidance=cfg.guidance,
                seed=cfg.seed,
                step=s,
                precision=cfg.precision,
                images=images,
            )
        except FloatingPointError as err:
            raise Diverged(cfg, s, f"the evaluation failed: {err}", self.saved) from None
        self.logs.points += [p.logged(s) for p in points]
        record = {
            "kind": "eval",
            "step": s,
            "classes": {
                p.label: {
                    "z": [None if math.isnan(v) else round(float(v), 6) for v in p.z],
                    "accuracy": p.accuracy,
                    UNREADABLE: p.shares.get(UNREADABLE),
                }
                for p in points
            },
        }
        if len(cfg.concepts) == 2:
            record["disentanglement"] = protocols.disentanglement(model, cfg.data)
        self._elicit(elicited or {})
        self.logs.metrics.append({**record, "eval_s": round(time.perf_counter() - t0, 3)})
        if s in self.grid_steps:
            images = np.concatenate([p.images[:8] for p in points])
            labels = np.repeat([p.label for p in points], [min(8, len(p.images)) for p in points])
            grid(
                cfg.data,
                images,
                labels,
                8,
                self.out / "samples" / f"step_{s:06d}.png",
                title=f"{self.out.name}: step {s}",
            )

    def _elicit(self, elicited: dict[str, dict]) -> None:
        """The in-training protocols' readings of the held-out classes at this step (those in
        ``elicited`` already made), each protocol's file rewritten: keyed by step, a resumed run
        overwrites, never duplicates."""
        cfg, s = self.cfg, self.step
        for name in cfg.protocols:
            results = runlog.read_elicit(self.out, name)
            found = elicited.get(name)
            if found is None:
                try:
                    drawn = protocols.elicit_step(
                        self.model_eval, self.probe, cfg, s, name, cfg.data.held_out
                    )
                except FloatingPointError as err:
                    raise Diverged(
                        cfg, s, f"the {name} protocol failed: {err}", self.saved
                    ) from None
                found = {label: r for label, (r, _) in drawn.items()}
            results[s] = found
            runlog.write_elicit(
                self.out, name, results, {"classes": cfg.data.held_out, "during_training": True}
            )

    def save(self, evaluated: bool) -> None:
        """last.pt (everything to resume), the evaluated weights when asked, then the logs rebuilt
        from it."""
        cfg, s = self.cfg, self.step
        state = {
            "model": self.vdm.state_dict(),
            "optimizer": self.opt.state_dict(),
            "ema": None if self.ema is None else self.ema.state_dict(),
            "rng": self.rng_state(),
            "step": s,
            "wall": self.wall,
            "logs": self.logs.state(),
            "config": cfg.to_json(),
        }
        if evaluated and cfg.keep_checkpoints:
            checkpoint.save(
                checkpoint.step_path(self.out, s),
                {"step": s, "model": self.model_eval.state_dict(), "config": cfg.to_json()},
            )
        checkpoint.save(self.last, state)
        self.saved = s
        self.logs.write(self.out, cfg, self.meta)

    @property
    def stream(self) -> torch.Generator | None:
        """The generator the run's training draws from: its own (an ensemble member's), or None:
        torch's global stream, seeded at opening and saved in last.pt (a run alone). The same draws
        either way."""
        if self.streams is None:
            return None
        return self.streams["cuda"] or self.streams["cpu"]

    def rng_state(self) -> dict:
        """The random streams to resume from: the process's (a run alone), or the run's own
        generators (a member of an ensemble, empirical.ensemble: ``streams``); the same keys either
        way."""
        if self.streams is not None:
            return {k: None if g is None else g.get_state() for k, g in self.streams.items()}
        cuda = self.device.type == "cuda"
        return {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state() if cuda else None}

    def point(self, label: str) -> list[float]:
        """The latest logged concept-space point of a class."""
        return list(next(p.z for p in reversed(self.logs.points) if p.label == label))


def open_run(
    cfg: TrainConfig, out: Path, *, progress: bool = True, command: Sequence[str] | None = None
) -> Run:
    """Open (or resume) a run to train: its folder, device and checkpoint checked first, then its
    probe provided (trained where it does not exist yet), then the run opened."""
    # refused before a probe trains for it: a folder holding another run, a device this machine
    # lacks, a
    # checkpoint of another config
    check_folder(Path(out), cfg)
    select_device(cfg.device, "device=")
    checkpoint.resume_state(Path(out), cfg)
    provide_probe(cfg, Path(out), progress=progress)
    return Run(cfg, out, command=command)
