"""The probe's network and what defines it: the concept setups it can read, its config, a small
U-Net-style classifier with one head per concept and a readability head (paper App. A.2), its
probabilities on a batch, and the content hash that identifies a trained probe.
empirical.probing.probe_train trains it; empirical.probing.reader reads samples with it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

READABLE = (
    "readable"  # the key of the readability logit in the network's output (not a concept name)
)
THRESHOLD = 0.5  # a sample is read when P(readable) >= THRESHOLD, else it is "unreadable"
SETUPS = {
    "2x2": {"concepts": ("color", "size"), "sep_range": {"color": (0.1, 0.8), "size": (0.2, 0.4)}},
    "shape-color": {"concepts": ("shape", "color"), "sep_range": {"color": (0.1, 0.8)}},
    "2x2x2": {
        "concepts": ("color", "size", "bg"),
        "sep_range": {"color": (0.1, 0.8), "size": (0.2, 0.4), "bg": (0.1, 0.6)},
    },
}
# the setup of a probe trained on a CelebA selection (its concepts: two attributes)
CELEBA = "celeba"
POOLS = ("max", "mean")


def check_pool(pool: str) -> str:
    """``pool`` where it is one the probe knows; ValueError naming the valid ones."""
    if pool not in POOLS:
        raise ValueError(f"pool {pool!r}: valid: {', '.join(POOLS)}")
    return pool


@dataclass(frozen=True)
class ProbeConfig:
    """What determines a probe: the concept setup, resolution, network widths and training."""

    setup: str = "2x2"
    resolution: int = 32
    channels: int = 32
    steps: int = 3000
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    train_per_class: int = 2048
    seed: int = 0
    # concept -> separations evaluated (default: 4 across the range)
    eval_seps: dict = field(default_factory=dict)
    # setup "celeba": the two attributes read (e.g. ["!Male", "Smiling"]) and the selection trained
    # on
    attributes: tuple = ()
    data: str = ""
    # how the concept heads pool the features: "max" or "mean" ("": the setup's, max; celeba's,
    # mean)
    pool: str = ""

    def __post_init__(self) -> None:
        if self.setup == CELEBA:
            if len(self.attributes) != 2 or not self.data:
                raise ValueError(
                    "setup 'celeba' needs its two attributes and the selection folder it reads "
                    "(python -m empirical.probe --celeba SELECTION)"
                )
            object.__setattr__(self, "attributes", tuple(self.attributes))
        elif self.setup not in SETUPS:
            valid = ", ".join([*SETUPS, CELEBA])
            raise ValueError(f"unknown setup {self.setup!r}; valid: {valid}")
        elif self.attributes or self.data:
            raise ValueError(
                f"setup {self.setup!r} takes no attributes or data (setup 'celeba' does)"
            )
        if not self.pool:
            object.__setattr__(self, "pool", "mean" if self.setup == CELEBA else "max")
        check_pool(self.pool)
        if self.steps < 1 or self.batch < 2 or self.train_per_class < 1 or self.channels < 4:
            raise ValueError(
                "steps, batch, train_per_class and channels must be positive (batch >= 2, "
                "channels >= 4)"
            )

    @property
    def concepts(self) -> tuple[str, ...]:
        """The setup's concepts, in label-digit order."""
        return self.attributes if self.setup == CELEBA else SETUPS[self.setup]["concepts"]


class Block(nn.Module):
    """Conv -> GroupNorm -> GELU, twice, with a residual connection."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.norm1 = nn.GroupNorm(4, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.norm2 = nn.GroupNorm(4, c_out)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x):
        h = F.gelu(self.norm1(self.conv1(x)))
        h = F.gelu(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class Probe(nn.Module):
    """U-Net-style backbone, global max-pool, one MLP head per concept.

    One full-resolution stage reads colors (a small object may cover only a few pixels); the U-Net
    (down to R/4, back up to R/2 with a skip) works at reduced resolution, where it is cheap on a
    CPU.
    """

    def __init__(
        self,
        concepts: Sequence[str],
        n_values: Sequence[int],
        channels: int = 32,
        pool: str = "max",
    ):
        super().__init__()
        c = channels
        self.concepts, self.pool = tuple(concepts), check_pool(pool)
        self.stem = nn.Sequential(
            nn.Conv2d(3, c // 2, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(c // 2, c // 2, 3, padding=1),
            nn.GELU(),
        )
        self.down1 = Block(c // 2, c)  # R/2
        self.down2 = Block(c, 2 * c)  # R/4
        self.mid = Block(2 * c, 2 * c)
        self.up1 = Block(3 * c, c)  # R/2, with the skip from down1
        self.heads = nn.ModuleDict(
            {
                name: nn.Sequential(nn.Linear(c, c), nn.GELU(), nn.Linear(c, n))
                for name, n in zip(concepts, n_values)
            }
        )
        # the "unreadable" outcome: a logit of P(readable) from the max- and mean-pooled features
        self.readable = nn.Sequential(nn.Linear(2 * c, c), nn.GELU(), nn.Linear(c, 1))

    def forward(self, x) -> dict[str, torch.Tensor]:
        """Logits per concept, (B, n_values) each, and ``READABLE``: (B,) the logit of
        P(readable)."""
        h0 = self.stem(x)  # (B, c/2, R, R)
        h1 = self.down1(F.max_pool2d(h0, 2))  # (B, c, R/2, R/2)
        h2 = self.down2(F.avg_pool2d(h1, 2))  # (B, 2c, R/4, R/4)
        m = self.mid(h2)
        u1 = self.up1(torch.cat([F.interpolate(m, scale_factor=2.0), h1], 1))  # (B, c, R/2, R/2)
        peak, mean = u1.amax(dim=(2, 3)), u1.mean(dim=(2, 3))
        # global max-pool: where a small object is does not matter; a face fills the image: mean
        pooled = peak if self.pool == "max" else mean
        out = {name: head(pooled) for name, head in self.heads.items()}
        out[READABLE] = self.readable(torch.cat([peak, mean], 1))[:, 0]
        return out


@torch.no_grad()
def probabilities(
    model: Probe, images: np.ndarray | torch.Tensor, *, batch: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """((N, C, n_values) softmax per concept, (N,) P(readable))."""
    x = torch.as_tensor(images, dtype=torch.float32)
    model.eval()
    out, readable = [], []
    for start in range(0, x.shape[0], batch):
        logits = model(x[start : start + batch])
        out.append(torch.stack([F.softmax(logits[c], -1) for c in model.concepts], 1))
        readable.append(torch.sigmoid(logits[READABLE]))
    return torch.cat(out).numpy(), torch.cat(readable).numpy()


def content_hash(model: Probe) -> str:
    """sha256 of the weights (parameter names, shapes and values), 16 hex digits."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(np.ascontiguousarray(tensor.detach().cpu().numpy()).tobytes())
    return h.hexdigest()[:16]
