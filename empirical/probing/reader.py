"""The concept-space probe: load a saved probe and read images as concept coordinates (the command:
python -m empirical.probe)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from empirical.nets import tensorfile
from empirical.nets.probe_net import THRESHOLD, Probe, ProbeConfig, content_hash, probabilities
from core.trajectory import UNREADABLE


def load(path: str | Path) -> tuple[Probe, ProbeConfig, str]:
    """A saved probe, frozen (eval mode, no gradients), with its config and verified hash."""
    path = Path(path)
    if path.is_dir():
        path = path / "probe.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no probe here (train one with python -m empirical.probe)")
    blob = tensorfile.load(path, "probe")
    try:
        cfg = ProbeConfig(**blob["config"])
        model = Probe(cfg.concepts, [2] * len(cfg.concepts), cfg.channels, cfg.pool)
        if not any(k.startswith("readable.") for k in blob["state_dict"]):
            raise ValueError(
                f"{path}: this probe was trained before probes could abstain (it has no "
                "'unreadable' "
                "outcome, so it reads noise as a class); train a new one with python -m "
                "empirical.probe"
            )
        model.load_state_dict(blob["state_dict"])
    except (KeyError, TypeError, RuntimeError) as err:
        raise ValueError(
            f"{path}: not a probe saved by python -m empirical.probe ({type(err).__name__}: "
            f"{str(err).splitlines()[0][:200]})"
        ) from None
    model.eval().requires_grad_(False)
    digest = content_hash(model)
    if digest != blob["hash"]:
        raise ValueError(
            f"{path}: the weights do not match the recorded hash ({digest} != {blob['hash']})"
        )
    return model, cfg, digest


class ProbeReader:
    """A saved probe as the reader of :func:`empirical.elicitation.walk.walk`: per image each
    concept's P(value 1), and whether the probe reads it (P(readable) >= THRESHOLD); the walk's
    readings then equal :func:`coordinates`'.

    A probe reads images at the resolution it was trained at; elsewhere it is a biased instrument
    (the 24 px probe reads 32 px images at joint accuracy 0.87 and 16 px at 0.63), so images of
    another size are refused, or, with ``resample=True``, resized to it (bilinear, antialiased) with
    a note on stderr once."""

    def __init__(self, path: str | Path, *, resample: bool = False):
        self.path, self.resample, self._said = Path(path), resample, False
        self.model, self.config, self.hash = load(path)
        self.concepts = tuple(self.config.concepts)

    def read(self, images) -> tuple[np.ndarray, np.ndarray]:
        prob, p_read = probabilities(self.model, self._at_resolution(images))
        return prob[..., 1], p_read >= THRESHOLD

    def _at_resolution(self, images):
        side = self.config.resolution
        shape = tuple(np.shape(images))
        if len(shape) != 4 or shape[1] != 3:
            raise ValueError(f"images must be (N, 3, H, W), got shape {shape}")
        if shape[2:] == (side, side):
            return images
        if not self.resample:
            raise ValueError(
                f"images of {shape[2]}x{shape[3]} px, but the probe {self.path} reads "
                f"{side}x{side} px (off its resolution it is a biased instrument): give {side} px "
                f"images, train a probe at {shape[2]} px (python -m empirical.probe --res "
                f"{shape[2]}), or read with ProbeReader(..., resample=True)"
            )
        if not self._said:
            print(
                f"note: resampling {shape[2]}x{shape[3]} px images to the probe's {side}x{side} px",
                file=sys.stderr,
            )
            self._said = True
        x = torch.as_tensor(images, dtype=torch.float32)
        return F.interpolate(x, size=(side, side), mode="bilinear", antialias=True).clamp(0, 1)


def corners(n_values: Sequence[int]) -> list[str]:
    """Every corner of concept space as a class label, e.g. ['00', '01', '10', '11'] for two
    2-valued concepts."""
    return ["".join(map(str, idx)) for idx in itertools.product(*(range(n) for n in n_values))]


def coordinates(model: Probe, images, target: Sequence[int] | None = None) -> dict:
    """Concept-space reading of a batch of images of one class.

    Returns a dict with
        ``z``: (C,) the mean over the *readable* samples of each concept's expected value index / (n
        - 1) (P(value 1) for two values); NaN when no sample is readable, never invented;
        ``per_sample``: (N, C) the same per sample, NaN rows where unreadable;
        ``shares``: corner label -> the share of all N samples read as that corner (every concept's
        most likely value), and ``"unreadable"`` -> the share the probe refused; they sum to 1;
        ``joint_accuracy``: the share of all N samples read as ``target`` in every concept (an
        unreadable sample counts as wrong; None without a target);
        ``readable``, ``n``: how many samples were read, and how many there were.
    """
    prob, p_read = probabilities(model, images)  # (N, C, n), (N,)
    read = p_read >= THRESHOLD
    n = prob.shape[-1]
    per_sample = (prob * np.arange(n)).sum(-1) / (n - 1)
    per_sample[~read] = np.nan
    z = per_sample[read].mean(0) if read.any() else np.full(prob.shape[1], np.nan)
    values = prob.argmax(-1)
    read_as = (
        np.array(["".join(map(str, v)) for v in values]) if len(values) else np.array([], dtype=str)
    )
    shares = {
        corner: float(np.mean(read & (read_as == corner)))
        for corner in corners([n] * prob.shape[1])
    }
    shares[UNREADABLE] = float(np.mean(~read))
    joint = None
    if target is not None:
        target = np.asarray(target)
        if target.shape != (prob.shape[1],):
            raise ValueError(
                f"target needs one value index per concept {model.concepts}, got {target.tolist()}"
            )
        joint = float(np.mean(read & np.all(values == target, axis=1)))
    return {
        "z": z,
        "per_sample": per_sample,
        "joint_accuracy": joint,
        "shares": shares,
        "readable": int(read.sum()),
        "n": int(prob.shape[0]),
    }
