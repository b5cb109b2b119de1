"""The frozen classifier probe: turns any generated image into a point in concept space, or refuses to.

  python -m empirical.probe [--setup 2x2] [--res 32] [--steps 3000] [--out DIR]

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

import itertools
from pathlib import Path
from typing import Sequence

import numpy as np

from empirical.data import DataConfig
from empirical import tensorfile
from empirical.config import PROBE_DIR
from empirical.probe_net import SETUPS, THRESHOLD, Probe, ProbeConfig, content_hash, probabilities
from empirical.probe_train import train_evaluate_save
from core import cli
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
        "--out",
        type=Path,
        default=None,
        help="output folder (default runs/probe/<concepts>-<res>px, where training looks for it)",
    )
    args = parser.parse_args(argv)
    cli.nonnegative_seed(args.seed)
    cfg = ProbeConfig(setup=args.setup, steps=args.steps, resolution=args.res, seed=args.seed)
    DataConfig(
        cfg.concepts,
        {c: hi for c, (lo, hi) in SETUPS[cfg.setup]["sep_range"].items()},
        resolution=args.res,
    )
    # where training looks
    default = Path(PROBE_DIR.format(concepts="-".join(cfg.concepts), resolution=cfg.resolution))
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
