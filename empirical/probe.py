"""The frozen classifier probe: turns any generated image into a point in concept space, or refuses to.

  python -m empirical.probe [--setup 2x2] [--res 32] [--steps 3000] [--out DIR]

A small U-Net-style network with no time or h input, followed by a global max-pool and one head
per concept (paper App. A.2), plus a readability head: P(readable), from the max- and mean-pooled
features. It is trained on the data-generating process over *all* classes, the held-out ones
included, with maximal diversity (each training image draws its separations from the setup's whole
range), and on as many images it must not read (:mod:`empirical.probing.unreadable`: blank canvases, noise,
smooth blobs, partly denoised renders, specks, oversized objects, off-axis colors). It is then
evaluated on fresh images from a grid of separations and on a fresh draw of every unreadable kind,
plus samples of an untrained diffusion model (a kind it never saw). Saved as DIR/probe.pt (weights
and config) and DIR/probe.json (config; per separation: per-concept accuracy, calibration error and
the share read; per unreadable kind: the share refused (``abstention``); training time; content
hash). Anything that uses the probe records its hash.

Readings (:func:`empirical.probing.probe.coordinates`): a sample with P(readable) < 0.5 is *unreadable*. For a batch of images
of one class: the share read as each corner of concept space and the share unreadable; the point z,
the mean over the readable samples of each concept's expected value index / (n - 1) (P(value 1) for
two values), missing (NaN) when none is readable; and the joint accuracy, the share of all samples
read as the target class (unreadable counts as wrong).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from empirical.images.data import DataConfig
from empirical.training.config import PROBE_DIR
from empirical.nets.probe_net import SETUPS, ProbeConfig
from empirical.probing.probe_train import train_evaluate_save
from core import cli


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
