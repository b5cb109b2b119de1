"""The frozen classifier probe: turns any generated image into a point in concept space, or refuses to.

  python -m empirical.probe [--setup 2x2] [--steps 1500] [--out DIR]

A small U-Net-style network with no time or h input, followed by a global max-pool and one head
per concept (paper App. A.2), plus a readability head: P(readable), from the max- and mean-pooled
features. It is trained on the data-generating process over *all* classes, the held-out ones
included, with maximal diversity (each training image draws its separations from the setup's whole
range), and on as many images it must not read (:mod:`empirical.unreadable`: blank canvases, noise,
smooth blobs, partly denoised renders, specks, oversized objects, off-axis colors). It is then
evaluated on fresh images from a grid of separations and on a fresh draw of every unreadable kind,
plus samples of an untrained diffusion model (a kind it never saw). Saved as DIR/probe.pt (weights
and config) and DIR/probe.json (config; per separation: per-concept accuracy, calibration error and
the share read; per unreadable kind: the share refused (``abstention``); training time; content
hash). Anything that uses the probe records its hash.

Readings (:func:`coordinates`): a sample with P(readable) < 0.5 is *unreadable*. For a batch of images
of one class: the share read as each corner of concept space and the share unreadable; the point z,
the mean over the readable samples of each concept's expected value index / (n - 1) (P(value 1) for
two values), missing (NaN) when none is readable; and the joint accuracy, the share of all samples
read as the target class (unreadable counts as wrong).
"""

from __future__ import annotations

import hashlib
import itertools
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from empirical.data import DataConfig, sample
from empirical import tensorfile
from empirical.config import PROBE_DIR
from theory import cli

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
    eval_seps: dict = field(
        default_factory=dict
    )  # concept -> separations evaluated (default: 4 across the range)

    def __post_init__(self) -> None:
        if self.setup not in SETUPS:
            raise ValueError(f"unknown setup {self.setup!r}; valid: {', '.join(SETUPS)}")
        if self.steps < 1 or self.batch < 2 or self.train_per_class < 1 or self.channels < 4:
            raise ValueError(
                "steps, batch, train_per_class and channels must be positive (batch >= 2, channels >= 4)"
            )

    @property
    def concepts(self) -> tuple[str, ...]:
        """The setup's concepts, in label-digit order."""
        return SETUPS[self.setup]["concepts"]


# ---------------------------------------------------------------------------------------------
# network


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
    (down to R/4, back up to R/2 with a skip) works at reduced resolution, where it is cheap on a CPU.
    """

    def __init__(self, concepts: Sequence[str], n_values: Sequence[int], channels: int = 32):
        super().__init__()
        c = channels
        self.concepts = tuple(concepts)
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
        """Logits per concept, (B, n_values) each, and ``READABLE``: (B,) the logit of P(readable)."""
        h0 = self.stem(x)  # (B, c/2, R, R)
        h1 = self.down1(F.max_pool2d(h0, 2))  # (B, c, R/2, R/2)
        h2 = self.down2(F.avg_pool2d(h1, 2))  # (B, 2c, R/4, R/4)
        m = self.mid(h2)
        u1 = self.up1(torch.cat([F.interpolate(m, scale_factor=2.0), h1], 1))  # (B, c, R/2, R/2)
        pooled = u1.amax(dim=(2, 3))  # global max-pool: where the object is does not matter
        out = {name: head(pooled) for name, head in self.heads.items()}
        out[READABLE] = self.readable(torch.cat([pooled, u1.mean(dim=(2, 3))], 1))[:, 0]
        return out


# ---------------------------------------------------------------------------------------------
# data


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
    """The separations the probe is evaluated at: every combination of 4 values per concept over its range (or ``eval_seps``)."""
    ranges = SETUPS[cfg.setup]["sep_range"]
    seps = {
        c: cfg.eval_seps.get(c, list(np.round(np.linspace(lo, hi, 4), 3)))
        for c, (lo, hi) in ranges.items()
    }
    return [dict(zip(seps, combo)) for combo in itertools.product(*seps.values())]


# ---------------------------------------------------------------------------------------------
# train, evaluate, save, load


def augment(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Readable images as a sampler may draw them: half get pixel noise of sd up to 0.05."""
    sd = rng.uniform(0, 0.05, (images.shape[0], 1, 1, 1)) * (
        rng.random((images.shape[0], 1, 1, 1)) < 0.5
    )
    return np.clip(images + sd * rng.standard_normal(images.shape), 0, 1).astype(np.float32)


def train(cfg: ProbeConfig, *, progress: bool = True) -> tuple[Probe, dict]:
    """Train a probe (AdamW) on a fixed set of diverse renders and unreadable images; returns (model, training report).

    Each batch is half readable renders (concept heads and the readable head learn from them) and half
    unreadable images of every kind in :mod:`empirical.unreadable` (the readable head only).
    """
    from empirical import unreadable

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    images, index = diverse(cfg, cfg.train_per_class, rng)
    x_all, y_all = torch.from_numpy(augment(images, rng)), torch.from_numpy(index)
    x_neg = torch.from_numpy(unreadable.negatives(x_all.shape[0], cfg.resolution, rng))
    model = Probe(cfg.concepts, [2] * len(cfg.concepts), cfg.channels)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=cfg.lr, total_steps=cfg.steps, pct_start=0.1
    )
    from tqdm import tqdm

    start = time.perf_counter()
    gen = torch.Generator().manual_seed(cfg.seed)
    bar = tqdm(range(cfg.steps), desc="probe", unit="step", disable=None if progress else True)
    half = cfg.batch // 2
    target = torch.cat([torch.ones(cfg.batch - half), torch.zeros(half)])
    model.train()
    for _ in bar:
        rows = torch.randint(0, x_all.shape[0], (cfg.batch - half,), generator=gen)
        neg = torch.randint(0, x_neg.shape[0], (half,), generator=gen)
        logits = model(torch.cat([x_all[rows], x_neg[neg]]))
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
    model.eval()
    return model, {
        "train_seconds": time.perf_counter() - start,
        "train_images": int(x_all.shape[0]),
        "train_unreadable_images": int(x_neg.shape[0]),
        "final_loss": float(loss.detach()),
    }


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
    """Per separation setting, on fresh images of every class: per-concept accuracy (an abstention counts as
    wrong), ECE, and the share of images the probe reads."""
    rng = np.random.default_rng(seed)
    rows = []
    for seps in eval_grid(cfg):
        data = DataConfig(cfg.concepts, seps, resolution=cfg.resolution)
        batch = sample(data, {label: per_class for label in data.classes}, rng)
        prob, p_read = probabilities(model, batch.images)
        read = p_read >= THRESHOLD
        row = {"sep": seps, "readable": float(read.mean())}
        for i, c in enumerate(cfg.concepts):
            row[c] = {
                "accuracy": float(np.mean(read & (prob[:, i].argmax(-1) == batch.index[:, i]))),
                "ece": ece(prob[:, i], batch.index[:, i]),
            }
        held = np.isin(batch.labels, data.held_out)
        correct = read & np.all(prob.argmax(-1) == batch.index, axis=1)
        row["held_out_class_joint_accuracy"] = float(np.mean(correct[held]))
        rows.append(row)
    return rows


def abstention(
    model: Probe, cfg: ProbeConfig, *, per_kind: int = 256, seed: int = 54321
) -> dict[str, float]:
    """kind -> the share of the validation suite's images of that kind the probe calls unreadable."""
    from empirical import unreadable

    return {
        kind: float(np.mean(probabilities(model, images)[1] < THRESHOLD))
        for kind, images in unreadable.suite(per_kind, cfg.resolution, seed).items()
    }


def content_hash(model: Probe) -> str:
    """sha256 of the weights (parameter names, shapes and values), 16 hex digits."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(np.ascontiguousarray(tensor.detach().cpu().numpy()).tobytes())
    return h.hexdigest()[:16]


def save(model: Probe, cfg: ProbeConfig, report: dict, out: Path) -> dict:
    """Write probe.pt (weights, config, hash; atomically) and probe.json (the report); returns the report."""
    from theory.files import write_json

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
    """Train a probe, evaluate it on the separation grid and the unreadable suite, save it with the report."""
    model, report = train(cfg, progress=progress)
    rows = evaluate(model, cfg)
    report.update(
        evaluation=rows,
        min_accuracy={c: min(r[c]["accuracy"] for r in rows) for c in cfg.concepts},
        min_readable=min(r["readable"] for r in rows),
        max_ece={c: max(r[c]["ece"] for r in rows) for c in cfg.concepts},
        unreadable_threshold=THRESHOLD,
        abstention=abstention(model, cfg),
    )
    return model, save(model, cfg, report, Path(out))


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
        model = Probe(cfg.concepts, [2] * len(cfg.concepts), cfg.channels)
        if not any(k.startswith("readable.") for k in blob["state_dict"]):
            raise ValueError(
                f"{path}: this probe was trained before probes could abstain (it has no 'unreadable' "
                "outcome, so it reads noise as a class); train a new one with python -m empirical.probe"
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


UNREADABLE = "unreadable"  # the share key of the samples the probe refuses to read


class ProbeReader:
    """A saved probe as the reader of :func:`empirical.walk.walk`: per image each concept's P(value 1), and whether
    the probe reads it (P(readable) >= THRESHOLD); the walk's readings then equal :func:`coordinates`'."""

    def __init__(self, path: str | Path):
        self.model, self.config, self.hash = load(path)
        self.concepts = tuple(self.config.concepts)

    def read(self, images) -> tuple[np.ndarray, np.ndarray]:
        prob, p_read = probabilities(self.model, images)
        return prob[..., 1], p_read >= THRESHOLD


def corners(n_values: Sequence[int]) -> list[str]:
    """Every corner of concept space as a class label, e.g. ['00', '01', '10', '11'] for two 2-valued concepts."""
    return ["".join(map(str, idx)) for idx in itertools.product(*(range(n) for n in n_values))]


def coordinates(model: Probe, images, target: Sequence[int] | None = None) -> dict:
    """Concept-space reading of a batch of images of one class.

    Returns a dict with
        ``z``: (C,) the mean over the *readable* samples of each concept's expected value index / (n - 1)
        (P(value 1) for two values); NaN when no sample is readable, never invented;
        ``per_sample``: (N, C) the same per sample, NaN rows where unreadable;
        ``shares``: corner label -> the share of all N samples read as that corner (every concept's most
        likely value), and ``"unreadable"`` -> the share the probe refused; they sum to 1;
        ``joint_accuracy``: the share of all N samples read as ``target`` in every concept (an unreadable
        sample counts as wrong; None without a target);
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


@cli.command("empirical.probe")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m empirical.probe``: see the module docstring."""
    parser = cli.parser("empirical.probe", __doc__)
    parser.add_argument(
        "--setup", default="2x2", help=f"concept setup (valid: {', '.join(SETUPS)})"
    )
    parser.add_argument(
        "--steps", type=int, default=ProbeConfig.steps, help="training steps (default %(default)s)"
    )
    parser.add_argument("--res", type=int, default=32, help="resolution in pixels (default 32)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default runs/probe/<setup>)"
    )
    args = parser.parse_args(argv)
    cli.nonnegative_seed(args.seed)
    cfg = ProbeConfig(setup=args.setup, steps=args.steps, resolution=args.res, seed=args.seed)
    DataConfig(
        cfg.concepts,
        {c: hi for c, (lo, hi) in SETUPS[cfg.setup]["sep_range"].items()},
        resolution=args.res,
    )
    default = Path(
        PROBE_DIR.format(concepts="-".join(cfg.concepts), resolution=cfg.resolution)
    )  # where training looks
    out = cli.output_dir(args.out or default, "--out")
    if cli.checking(args):
        return 0
    _, doc = train_evaluate_save(cfg, out)
    for r in doc["evaluation"]:
        accs = ", ".join(f"{c} {r[c]['accuracy']:.4f}" for c in cfg.concepts)
        print(
            f"  sep {r['sep']}: {accs}; read {r['readable']:.4f}; held-out class joint {r['held_out_class_joint_accuracy']:.4f}"
        )
    print(
        "  unreadable: "
        + ", ".join(f"{kind} {rate:.3f}" for kind, rate in doc["abstention"].items())
    )
    print(
        f"trained in {doc['train_seconds']:.0f} s; worst per-concept accuracy {doc['min_accuracy']}; "
        f"worst readable share {doc['min_readable']:.4f}; hash {doc['hash']}"
    )
    print(f"wrote {out / 'probe.pt'} and {out / 'probe.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
