"""The concept-space probe of faces (the paper's appendix C.3): an attribute classifier trained on a
CelebA selection written by ``python -m empirical.celeba``, one head per attribute (independent
cross-entropy), its features mean-pooled (a face fills the image), with the readability head every
probe of the package has (trained against the same unreadable kinds: blank canvases, noise, blobs,
...), so it reads a generated face as a point in the two attributes' square, or refuses to.

Training images are flipped and colour-jittered per batch as the paper's
(``empirical.images.celeba_layout.augment``); a share of each class is kept out of training and the
report (probe.json) gives, on those, each attribute's accuracy (a refusal counts as wrong), its
calibration error, the share read and the joint accuracy on class 11, and the share of every
unreadable kind refused. Saved as the synthetic probes are (probe.pt, probe.json), so training,
elicitation and every reading take it by its folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from empirical.images.celeba_layout import augment, read_selection
from empirical.nets.probe_net import Probe, ProbeConfig
from empirical.probing.probe_train import abstention, fit, reading, save, summary

TEST_SHARE = 0.1  # of each class, kept out of training for the report
ABSTENTION_PER_KIND = 256  # images of each unreadable kind in the report


def split(
    labels: np.ndarray, seed: int, share: float = TEST_SHARE
) -> tuple[np.ndarray, np.ndarray]:
    """(training rows, test rows): of each class, ``share`` of its rows (at least one) drawn for the
    test."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for label in sorted(set(labels)):
        rows = rng.permutation(np.flatnonzero(labels == label))
        if rows.size < 2:
            raise ValueError(
                f"class {label} has {rows.size} image(s) in the selection; the probe needs at "
                "least 2 "
                "a class (one to train on, one to test); choose more with --per-class"
            )
        k = max(1, int(round(share * rows.size)))
        test.append(rows[:k])
        train.append(rows[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def values_of(labels: np.ndarray) -> np.ndarray:
    """(N, 2) int64: each label's two digits ('10' -> [1, 0])."""
    return np.array([[int(d) for d in label] for label in labels], dtype=np.int64)


def train_evaluate_save(
    cfg: ProbeConfig, out: Path, *, progress: bool = True
) -> tuple[Probe, dict]:
    """Train the face probe on ``cfg.data``'s selection, report on its held-out share and the
    unreadable suite, and save it (probe.pt, probe.json) in ``out``."""
    from empirical.probing import unreadable

    images, labels, concepts = read_selection(Path(cfg.data), cfg.resolution)
    if tuple(concepts) != cfg.concepts:
        raise ValueError(
            f"{cfg.data}: the selection's concepts are {list(concepts)}, the probe's "
            f"{list(cfg.concepts)}"
        )
    train_rows, test_rows = split(labels, cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    negatives = unreadable.negatives(len(train_rows), cfg.resolution, rng)
    looks = np.random.default_rng([cfg.seed, 1])  # the augmentation's own stream

    def view(batch: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(augment(batch.numpy().astype(np.float32) / 255, looks))

    model, report = fit(
        cfg,
        torch.from_numpy(images[train_rows]),
        torch.from_numpy(values_of(labels[train_rows])),
        torch.from_numpy(negatives),
        progress=progress,
        view=view,
    )
    test = labels[test_rows]
    row = reading(model, images[test_rows].astype(np.float32) / 255, values_of(test), test == "11")
    row = {"images": "held-out share of the selection", "n": int(len(test)), **row}
    report.update(
        summary([row], cfg.concepts),
        abstention=abstention(model, cfg, per_kind=ABSTENTION_PER_KIND),
    )
    return model, save(model, cfg, report, Path(out))
