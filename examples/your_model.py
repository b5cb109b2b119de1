"""Concept space for your own model, end to end on a CPU in seconds (the tutorial: docs/your-model.md).

    python examples/your_model.py [OUT]        # default runs/your-model

Three pieces are yours in real use; here each is a small stand-in you would replace:
1. the checkpoints: here steps 0 to 6,000 of a stand-in generator (yours: paths, state dicts or models);
2. the sampler (`StandIn`): given a checkpoint, a prompt and a seed, n images. The stand-in draws the
   package's synthetic images (empirical.images.dgp) with the behavior of a model that learns the held-out class 11
   late: it draws 11 as 10 (blue, large) first and turns to small around step 3,000; over-prompting (strength
   > 1) makes the turn show earlier, a hidden capability, by construction;
3. the reader (`PixelReader`): your classifier, images -> each concept's probability and whether the image
   could be read at all. This one measures two pixel features (how blue the object is, how much of the image
   it covers), calibrated on labelled images, and abstains on images without an object.

Then the package takes over: empirical.elicitation.walk writes the trajectory log, and the fitting and figure commands read
it: the turn (fitting.turn), capability against behavior (fitting.capability, drawn by figures.capability), each concept's switch with its
interval (fitting.fit), the concept-space figure (figures.training).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from empirical.images.dgp import DataConfig, sample
from empirical.elicitation.walk import Prompt, walk

CONFIG = DataConfig(("color", "size"), {"color": 0.6, "size": 0.4}, resolution=16)
CLASSES = ["00", "01", "10", "11"]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


class StandIn:
    """A stand-in generator: at checkpoint (step) t, each image of a class gets each concept's value right with a
    probability that rises over training; class 11's size turns late, and earlier under over-prompting."""

    def sample(self, checkpoint: int, prompt: Prompt, n: int, seed: int) -> np.ndarray:
        t, gen = checkpoint, np.random.default_rng(seed)
        want = np.array([int(d) for d in prompt.label])
        learned = sigmoid((t - 600) / 150)  # the training classes, learned by step ~1,000
        p_right = np.full(2, learned)
        if prompt.label == "11":  # color right early; size memorized as large (10), then turns
            turn = 3000 - 1200 * np.log2(prompt.strength)  # strength 2: 1,200 steps earlier
            p_right = np.array([learned, sigmoid((t - turn) / 250)])
        bits = np.where(gen.random((n, 2)) < p_right, want, 1 - want)
        corners = ["".join(map(str, b)) for b in bits]
        counts = {c: corners.count(c) for c in CLASSES if c in corners}
        return sample(CONFIG, counts, gen).images  # (n, 3, 16, 16) in [0, 1]


class PixelReader:
    """Your classifier: two pixel features per image, a logistic read-out per concept calibrated on labelled
    images; images where no object stands out from the background are unreadable."""

    concepts = ("color", "size")

    def __init__(self, config: DataConfig, n: int = 256, seed: int = 0):
        batch = sample(config, {c: n for c in CLASSES}, seed)
        feats, _ = self.features(batch.images)
        self.mid, self.scale = np.zeros(2), np.zeros(2)
        for i in range(2):
            value = batch.index[:, i]
            m0, m1 = feats[value == 0, i].mean(), feats[value == 1, i].mean()
            self.mid[i], self.scale[i] = (
                (m0 + m1) / 2,
                (m1 - m0) / 8,
            )  # signed: value 1 on the side of its mean

    @staticmethod
    def features(images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(blueness of the object, the share of the image it covers) per image, and whether an object was found."""
        border = np.concatenate(
            [images[..., 0, :], images[..., -1, :], images[..., :, 0], images[..., :, -1]], axis=-1
        )
        background = np.median(border, axis=-1)[..., None, None]  # (N, 3, 1, 1)
        mask = np.abs(images - background).max(axis=1) > 0.08  # (N, R, R)
        area = mask.mean(axis=(1, 2))
        blue_minus_red = ((images[:, 2] - images[:, 0]) * mask).sum(axis=(1, 2)) / np.maximum(
            mask.sum(axis=(1, 2)), 1
        )
        return np.stack([blue_minus_red, area], axis=1), area > 0.02

    def read(self, images) -> tuple[np.ndarray, np.ndarray]:
        feats, found = self.features(np.asarray(images))
        return sigmoid((feats - self.mid) / self.scale), found


def main(out: str = "runs/your-model") -> Path:
    checkpoints = [(step, step) for step in range(0, 6001, 250)]
    log = walk(
        checkpoints,
        StandIn(),
        PixelReader(CONFIG),
        out,
        classes=CLASSES,
        held_out=["11"],
        samples=32,
        strengths=[1.5, 2, 3],
    )
    print(f"wrote {log}")
    from figures.capability import main as capability_figure
    from figures.training import main as figure
    from fitting.capability import main as capability
    from fitting.fit import main as fit
    from fitting.turn import main as turn

    for command, argv in (
        (turn, [out]),
        (capability, [out]),
        (capability_figure, [out]),
        (fit, [str(log), "--class", "11"]),
        (figure, [out]),
    ):
        if command(argv) != 0:
            raise SystemExit(f"{command.__module__} failed on {out}")
    return log


def cli(argv=None) -> int:
    """The script's command line: OUT, or --help (issue #51: '--help' was taken as a folder to write)."""
    parser = argparse.ArgumentParser(
        prog="python examples/your_model.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "out",
        nargs="?",
        default="runs/your-model",
        help="the folder to write (default runs/your-model)",
    )
    main(parser.parse_args(argv).out)
    return 0


if __name__ == "__main__":
    sys.exit(cli())
