"""The frozen classifier probe: turns any generated image into a point in concept space, or refuses
to.

  python -m empirical.probe [--setup 2x2] [--res 32] [--steps 3000] [--out DIR]
  python -m empirical.probe --celeba SELECTION [--res 64] [--steps 3000] [--out DIR]

A small U-Net-style network with no time or h input, followed by a global max-pool and one head
per concept (paper App. A.2), plus a readability head: P(readable), from the max- and mean-pooled
features. It is trained on the data-generating process over *all* classes, the held-out ones
included, with maximal diversity (each training image draws its separations from the setup's whole
range), and on as many images it must not read (:mod:`empirical.probing.unreadable`: blank canvases,
noise, smooth blobs, partly denoised renders, specks, oversized objects, off-axis colors). It is
then evaluated on fresh images from a grid of separations and on a fresh draw of every unreadable
kind, plus samples of an untrained diffusion model (a kind it never saw). Saved as DIR/probe.pt
(weights and config) and DIR/probe.json (config; per separation: per-concept accuracy, calibration
error and the share read; per unreadable kind: the share refused (``abstention``); training time;
content hash). Anything that uses the probe records its hash.

Readings (:func:`empirical.probing.reader.coordinates`): a sample with P(readable) < 0.5 is
*unreadable*. For a batch of images of one class: the share read as each corner of concept space and
the share unreadable; the point z, the mean over the readable samples of each concept's expected
value index / (n - 1) (P(value 1) for two values), missing (NaN) when none is readable; and the
joint accuracy, the share of all samples read as the target class (unreadable counts as wrong).

--celeba SELECTION trains the probe of faces instead (:mod:`empirical.probing.celeba_probe`): on the
images a ``python -m empirical.celeba DIR --concepts A,B --out SELECTION`` chose, its two attributes
as the concepts, mean-pooled, flipped and jittered per batch as the paper's; its report is on a
tenth of each class kept out of training (default --out runs/probe/celeba-<A>-<B>-<res>px, "!"
written "not").
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from empirical.images.celeba_layout import selection_doc
from empirical.images.dgp import DataConfig
from empirical.training.config import PROBE_DIR
from empirical.nets.probe_net import CELEBA, SETUPS, ProbeConfig
from empirical.probing import celeba_probe
from empirical.probing.probe_train import train_evaluate_save
from core import cli


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument(
        "--setup", default=None, help=f"concept setup (valid: {', '.join(SETUPS)}; default 2x2)"
    )
    parser.add_argument(
        "--steps", type=int, default=ProbeConfig.steps, help="training steps (default %(default)s)"
    )
    parser.add_argument(
        "--res", type=int, default=None, help="resolution in pixels (default 32; --celeba: 64)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default runs/probe/<concepts>-<res>px, where training looks for it)",
    )
    parser.add_argument(
        "--celeba",
        type=Path,
        default=None,
        metavar="SELECTION",
        help="train the probe of faces on this CelebA selection (the --out of python -m "
        "empirical.celeba)",
    )
    args = parser.parse_args(argv)
    cli.nonnegative_seed(args.seed)
    cfg = _config(args)
    # where training looks
    name = ("celeba-" if args.celeba else "") + "-".join(cfg.concepts).replace("!", "not")
    default = Path(PROBE_DIR.format(concepts=name, resolution=cfg.resolution))
    out = cli.output_dir(args.out or default, "--out")
    if cli.checking(args):
        return 0
    train = celeba_probe.train_evaluate_save if args.celeba else train_evaluate_save
    _, doc = train(cfg, out)
    for r in doc["evaluation"]:
        accs = ", ".join(f"{c} {r[c]['accuracy']:.4f}" for c in cfg.concepts)
        joint = r["held_out_class_joint_accuracy"]
        print(
            f"  {'sep ' + str(r['sep']) if 'sep' in r else r['images']}: {accs}; read "
            f"{r['readable']:.4f}; "
            f"held-out class joint {'none' if joint is None else f'{joint:.4f}'}"
        )
    print(
        "  unreadable: "
        + ", ".join(f"{kind} {rate:.3f}" for kind, rate in doc["abstention"].items())
    )
    print(
        f"trained in {doc['train_seconds']:.0f} s; worst per-concept accuracy "
        f"{doc['min_accuracy']}; "
        f"worst readable share {doc['min_readable']:.4f}; hash {doc['hash']}"
    )
    print(f"wrote {out / 'probe.pt'} and {out / 'probe.json'}")
    return 0


def _config(args) -> ProbeConfig:
    """The probe's config from the flags: a synthetic setup, or the faces of a CelebA selection."""
    if args.celeba is None:
        res = args.res or 32
        setup = args.setup or "2x2"
        cfg = ProbeConfig(setup=setup, steps=args.steps, resolution=res, seed=args.seed)
        DataConfig(
            cfg.concepts,
            {c: hi for c, (lo, hi) in SETUPS[cfg.setup]["sep_range"].items()},
            resolution=res,
        )
        return cfg
    if args.setup is not None:
        raise cli.UsageError(
            "--setup: not with --celeba (the selection's two attributes are the concepts)"
        )
    concepts = selection_doc(args.celeba)["concepts"]
    return ProbeConfig(
        setup=CELEBA,
        attributes=tuple(concepts),
        data=str(args.celeba.resolve()),
        steps=args.steps,
        resolution=args.res or 64,
        seed=args.seed,
    )


if __name__ == "__main__":
    raise SystemExit(main())
