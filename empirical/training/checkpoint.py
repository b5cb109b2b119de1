"""A run folder's checkpoints: the model a config describes, atomic saves, loading weights back,
and the saved state a run resumes from (checked against its config before anything is written).

Layout of ``RUN/checkpoints/``:

- ``last.pt``: everything needed to resume (model, optimizer, EMA, RNG states, step, the logs so
  far, cumulative wall time); replaced atomically at every evaluation and every ``save_every``
  steps.
- ``step_NNNNNN.pt``: the weights evaluated at that checkpoint (the EMA weights when EMA is on),
  kept when ``keep_checkpoints`` is true; the elicitation protocols load these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from empirical.nets import tensorfile
from empirical.training import runlog
from empirical.training.config import TrainConfig

# checkpoint.save is the run folder's writer
from empirical.nets.tensorfile import save  # noqa: F401
from empirical.images.dgp import H_DIM, MASK_FILL
from empirical.nets.unet import UNet
from empirical.nets.vdm import VDM


def build_model(cfg: TrainConfig) -> VDM:
    """The VDM (and its U-Net) a config describes, freshly initialised."""
    net = UNet(cfg.channels, cfg.blocks, h_dim=H_DIM, dropout=cfg.dropout)
    return VDM(
        net,
        gamma_min=cfg.gamma_min,
        gamma_max=cfg.gamma_max,
        data_noise=cfg.data_noise,
        p_cfg=cfg.p_cfg,
        null_fill=MASK_FILL,
    )


def load(path: Path) -> dict[str, Any]:
    """A checkpoint file's dict, loaded safely (weights_only); ValueError naming a bad file."""
    return tensorfile.load(path, "checkpoint")


def step_path(run: Path, step: int) -> Path:
    """``RUN/checkpoints/step_NNNNNN.pt``: the weights evaluated at ``step``."""
    return Path(run) / "checkpoints" / f"step_{step:06d}.pt"


def saved_steps(run: Path) -> list[int]:
    """Steps with saved weights, ascending."""
    folder = Path(run) / "checkpoints"
    return sorted(int(p.stem[5:]) for p in folder.glob("step_*.pt") if p.stem[5:].isdigit())


def load_model(run: Path, step: int, cfg: TrainConfig, device: torch.device | str = "cpu") -> VDM:
    """The model evaluated at ``step`` of a run, in eval mode."""
    path = step_path(run, step)
    if not path.exists():
        have = saved_steps(run)
        raise FileNotFoundError(
            f"{path}: no weights for step {step}; saved steps: {have or 'none'}"
        )
    model = build_model(cfg)
    load_weights(model, load(path), path)
    return model.to(device).eval()


def load_weights(
    model: torch.nn.Module, state: dict[str, Any], path: Path, key: str = "model"
) -> None:
    """``model.load_state_dict(state[key])``, with a one-line error when the file is for another
    architecture."""
    try:
        model.load_state_dict(state[key])
    except (KeyError, TypeError, RuntimeError) as err:
        lines = str(err).strip().splitlines()
        detail = next(
            (line.strip() for line in lines if "size mismatch" in line or "Missing" in line),
            lines[0] if lines else "",
        )
        raise ValueError(
            f"{path}: these weights do not fit the configured model ({detail[:160]}); was it "
            "saved by a run "
            "with other channels/blocks/resolution?"
        ) from None


def resume_state(out: Path, cfg: TrainConfig) -> dict | None:
    """The saved state to resume from (checkpoints/last.pt), checked against the config before
    anything is written."""
    last = out / "checkpoints" / "last.pt"
    if not last.exists():
        return None
    state = load(last)
    missing = [k for k in ("model", "optimizer", "rng", "step", "wall", "logs") if k not in state]
    if missing:
        raise ValueError(
            f"{last}: not a resumable checkpoint (missing {', '.join(missing)}); use another --out"
        )
    saved = state.get("config") or {}
    diff = [k for k, v in cfg.to_json().items() if k != "device" and k in saved and saved[k] != v]
    if diff:
        raise ValueError(
            f"{last}: saved by a run with another config "
            f"({', '.join(f'{k}={saved[k]!r}' for k in diff)}); "
            "use another --out, or the same settings to resume it"
        )
    try:
        points = [runlog.Logged.from_list(p) for p in state["logs"].get("points", [])]
    except ValueError as err:
        raise ValueError(f"{last}: {err}; use another --out") from None
    bad = [
        p
        for p in points
        if not np.isfinite(p.accuracy) or (not p.shares and not np.all(np.isfinite(p.z)))
    ]
    if bad:
        raise ValueError(
            f"{last}: step {state['step']} holds non-finite concept points (first at step "
            f"{bad[0].step}): the "
            "run diverged before this version checked for it; start it again in another --out"
        )
    return state
