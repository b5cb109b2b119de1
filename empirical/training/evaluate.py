"""Generate images for prompts and score them with the frozen probe: a point in concept space.

Used at every training checkpoint (protocol ``naive``) and by the elicitation protocols, which
change the prompt h, the guidance scale, or the network, and call the same two functions.

The naive prompt of a class is its mean conditioning vector (the class means of the active
concepts; the official runs prompted the held-out class the same way). Generation draws from its own
``torch.Generator`` seeded per (run seed, step, purpose), so evaluating never disturbs the training
random stream, and the same checkpoint always gives the same samples. Each class has its own
stream, so a protocol that prompts one class draws the same noise as the naive evaluation of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from empirical.nets.device import autocast
from empirical.images.dgp import DataConfig, conditioning, parse_label, sample_values
from empirical.images.faces import FacesConfig
from empirical.probing.reader import coordinates
from empirical.training.runlog import Logged
from empirical.nets.vdm import VDM


@dataclass(frozen=True)
class Point:
    """One class under one protocol at one checkpoint: its reading by the probe, and its images."""

    label: str
    z: np.ndarray  # (C,) in [0, 1]; NaN when no sample was readable
    accuracy: float  # the share of all samples read as the class (unreadable counts as wrong)
    images: np.ndarray  # (N, 3, R, R) in [0, 1]
    # corner or "unreadable" -> share of the samples
    shares: dict[str, float] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        """How many images the reading is made of."""
        return int(self.images.shape[0])

    def logged(self, step: int, setting: str = "", selection_accuracy: float = math.nan):
        """The reading as a row of the run's log."""
        return Logged(
            step,
            self.label,
            tuple(float(v) for v in self.z),
            self.accuracy,
            setting,
            dict(self.shares),
            self.samples,
            selection_accuracy,
        )


def class_prompts(config: DataConfig, labels: list[str] | None = None) -> dict[str, np.ndarray]:
    """label -> (11,) mean conditioning vector of the class."""
    labels = config.classes if labels is None else labels
    index = np.array([parse_label(config, lab) for lab in labels], dtype=np.int64)
    if isinstance(config, FacesConfig):  # faces: each attribute's value in its slot
        h = config.conditioning(index)
    else:
        h = conditioning(
            sample_values(config, index, np.random.default_rng(0), mode="mean"), config
        )
    return {lab: h[i] for i, lab in enumerate(labels)}


# noise streams: the naive evaluation (and every score), and the draw that chooses a setting
SCORE, SELECT = (
    0,
    1,
)


def generator_for(
    seed: int, step: int, label: str, device: torch.device, stream: int = SCORE
) -> torch.Generator:
    """A generator that depends only on (seed, step, class, stream): reproducible, independent of
    training.

    ``SCORE`` (0) is the naive evaluation's stream; ``SELECT`` (1) an independent one on which
    elicitation chooses its setting, so no setting is scored on the samples that chose it.
    """
    if stream == SCORE:
        return torch.Generator(device=device).manual_seed(score_seed(seed, step, label))
    state = np.random.SeedSequence([seed, step, len(label), int(label), stream]).generate_state(
        2, dtype=np.uint32
    )
    return torch.Generator(device=device).manual_seed(int(state[0]) << 31 | int(state[1]) >> 1)


def score_seed(seed: int, step: int, label: str) -> int:
    """The integer seed of the naive evaluation's draw of a class at a step (:func:`generator_for`'s
    SCORE stream)."""
    return (seed * 1_000_003 + step) * 10 ** len(label) + int(label)


@torch.no_grad()
def generate(
    vdm: VDM,
    prompts: np.ndarray,
    resolution: int,
    *,
    steps: int,
    guidance: float = 0.0,
    generator: torch.Generator,
    precision: str,
    batch: int = 256,
) -> np.ndarray:
    """(N, 3, R, R) images in [0, 1] for (N, 11) prompts; guidance 0 means plain conditioning;
    ``precision`` as in :func:`autocast` (the run's own, so a checkpoint is sampled the way its run
    evaluated it)."""
    device = next(vdm.parameters()).device
    h_all = torch.as_tensor(np.asarray(prompts), dtype=torch.float32, device=device)
    out = []
    was_training = vdm.training
    vdm.eval()
    with autocast(device, precision):
        for start in range(0, h_all.shape[0], batch):
            x = vdm.sample(
                h_all[start : start + batch],
                (3, resolution, resolution),
                steps=steps,
                guidance=guidance or None,
                generator=generator,
            )
            out.append(x.float().clamp(0, 1).cpu())
    vdm.train(was_training)
    return torch.cat(out).numpy()


def score(probe, config: DataConfig, label: str, images: np.ndarray) -> Point:
    """The probe's reading of a class's images: point (NaN if none is readable), joint accuracy,
    shares."""
    if not np.isfinite(images).all():
        raise FloatingPointError(f"class {label}: the generated images hold non-finite values")
    res = coordinates(probe, images, parse_label(config, label))
    return Point(
        label, np.clip(res["z"], 0.0, 1.0), float(res["joint_accuracy"]), images, res["shares"]
    )


def naive(
    vdm: VDM,
    probe,
    config: DataConfig,
    *,
    samples: int | dict[str, int],
    steps: int,
    guidance: float,
    seed: int,
    step: int,
    precision: str,
    images: dict[str, np.ndarray] | None = None,
) -> list[Point]:
    """Every class prompted with its own mean h: the behavior a user sees. ``samples``: per class,
    or one number. ``images``: each class's samples, already drawn as this function draws them
    (empirical.training.batched_sampling draws many runs' at once); only scored here."""
    if images is None:
        counts = samples if isinstance(samples, dict) else dict.fromkeys(config.classes, samples)
        prompts, gens = naive_requests(config, counts, seed, step, next(vdm.parameters()).device)
        images = {
            label: generate(
                vdm,
                h,
                config.resolution,
                steps=steps,
                guidance=guidance,
                generator=gens[label],
                precision=precision,
            )
            for label, h in prompts.items()
        }
    return [score(probe, config, label, images[label]) for label in config.classes]


def naive_requests(
    config: DataConfig, samples: dict[str, int], seed: int, step: int, device: torch.device
) -> tuple[dict[str, np.ndarray], dict[str, torch.Generator]]:
    """What :func:`naive` samples: each class's prompts (n rows of its mean h) and the generator it
    draws from."""
    prompts = {
        label: np.repeat(h[None], samples[label], axis=0)
        for label, h in class_prompts(config).items()
    }
    return prompts, {label: generator_for(seed, step, label, device) for label in prompts}
