"""The data-generating process: synthetic images whose concepts and concept signal are controlled.

  python -m empirical.data --concepts color,size --sep color=0.3,size=0.4 [--res 32] [--n 16] \\
      [--out DIR]

writes DIR/samples.png (a grid of samples per class, the held-out classes marked, like the paper's
Fig. 2) and DIR/signals.json (the measured concept signal of each concept, the class means, the
held-out classes and the slot layout of h).

Concepts (any subset active, each with 2 or more values; the classes are their product):

| concept | values (index 0 ... n-1) | separation ``sep`` | within-class spread |
|---|---|---|---|
| shape | circle, triangle (same area) | none | none |
| x, y | centre positions -sep/2 ... +sep/2 (image spans [-1, 1]) | (0, 1] | uniform ± sep/8 |
| color | red (½+s, ½-s, ½-s) to blue (½-s, ½-s, ½+s), s = sep/2 | (0, 0.8] | ± sep/8 per channel |
| size | radius from large 0.45+sep/2 to small 0.45-sep/2 | (0, 0.4] | ± 3 sep/8 (floor 0.1) |
| bg | gray from light 0.5+sep/2 to dark 0.5-sep/2 | (0, 0.8] | uniform ± sep/8 per channel |

With more than 2 values, the means are evenly spaced between the two ends. Inactive concepts:
circle; centre uniform in [-0.5, 0.5]²; color mid-gray-blue (0.5, 0.5, 0.5); radius 0.45;
background uniform in [0.8, 1.0] per channel. The spread scales with the separation, as in the
paper's App. A.1. Class labels are one digit per active concept, in the order the concepts were
given: with ``color,size``, 01 is red and small. The held-out classes are those with more than one
non-zero index (2x2: 11; 2x2x2: 011, 101, 110, 111).

The conditioning vector h has 11 slots and carries the *sampled* values:

    0-1 shape one-hot   2 x   3 y   4-6 color RGB   7 size (radius)   8-10 background RGB

Inactive concepts' slots are 0. Masked slots (underspecification, paper Sec. 5) hold ``MASK_FILL``
= -1, a value no concept takes.

Images are rendered by :mod:`empirical.images.render` (anti-aliased, resolution-agnostic); Gaussian
pixel noise (sd ``noise``) is added and the result clipped to [0, 1]. :func:`concept_signal`
measures each concept's signal; :mod:`empirical.images.grid` draws the sample grid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from core import cli

from empirical.images.dgp import class_means, concept_signal, sample
from empirical.images.data_config import CONCEPTS, MASK_FILL, SLOTS, DataConfig


def _parse_seps(text: str) -> dict[str, float]:
    seps = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, value = cli.assignment(item, "--sep", "CONCEPT=VALUE, e.g. color=0.3")
        seps[name] = cli.numbers(value, "--sep", name)[0]
    return seps


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument(
        "--concepts",
        default="color,size",
        help=f"active concepts, comma-separated (valid: {', '.join(CONCEPTS)})",
    )
    parser.add_argument(
        "--sep",
        action="append",
        default=None,
        metavar="CONCEPT=VALUE",
        help="a separation, repeatable (or comma-separated); default color=0.3 and size=0.4; "
        "valid ranges above",
    )
    parser.add_argument("--res", type=int, default=32, help="resolution in pixels (default 32)")
    parser.add_argument(
        "--n", type=int, default=16, help="samples per class in the grid (default 16)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out", type=Path, default=Path("runs/data"), help="output folder (default runs/data)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 64:
        raise ValueError(f"--n {args.n}: samples per class must be between 1 and 64")
    cli.nonnegative_seed(args.seed)
    concepts = tuple(c.strip() for c in args.concepts.split(",") if c.strip())
    config = DataConfig(
        concepts, _parse_seps(",".join(args.sep or ["color=0.3,size=0.4"])), resolution=args.res
    )
    cli.output_dir(args.out, "--out")
    if cli.checking(args):
        return 0
    from empirical.images.grid import grid
    from core.files import write_json

    batch = sample(config, {label: args.n for label in config.classes}, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    grid(config, batch.images, batch.labels, args.n, args.out / "samples.png")
    signals = concept_signal(config)
    doc = {
        "concepts": list(config.concepts),
        "sep": config.sep,
        "resolution": config.resolution,
        "classes": config.classes,
        "held_out": config.held_out,
        "signal": signals,
        "class_means": class_means(config),
        "h_slots": {c: [s.start, s.stop] for c, s in SLOTS.items()},
        "mask_fill": MASK_FILL,
    }
    write_json(args.out / "signals.json", doc)
    for c, v in signals.items():
        grad = "-" if v["grad_rms"] is None else f"{v['grad_rms']:.4f}"
        print(f"{c:>6}: sep {v['sep']}, pixel MSE between classes {v['mse']:.5f}, |dG/dz| {grad}")
    print(f"wrote {args.out / 'samples.png'} and {args.out / 'signals.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
