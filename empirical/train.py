"""Train the conditional VDM on the concept data and log concept-space trajectories.

  python -m empirical.train [--preset NAME] [--set KEY=VALUE ...] [--out DIR]   (presets below)

At every checkpoint of a schedule that is dense early (quadratic spacing), the model generates
``samples`` images for every class from the class's mean prompt; the frozen probe turns them into a
point in concept space and a joint accuracy. Outputs in DIR:

  config.json         the full configuration (and the probe's hash)
  trajectories.csv    one trajectory per class, protocol=naive, accuracy = joint accuracy
  metrics.jsonl       training records (step, loss terms in bits/dim, γ(0), γ(1), grad norm, wall
                      time, images/s) and evaluation records (per class z and accuracy)
  samples/            sample grids (PNG) at a few checkpoints
  checkpoints/        last.pt (for resuming) and the evaluated weights per checkpoint

Running the same command again resumes from the last checkpoint, even after kill -9: model,
optimizer, EMA, RNG states and step are restored, and the logs are rewritten from the checkpoint,
so nothing is lost or duplicated. On a CPU the resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from empirical.training.config import TRAIN_PRESETS, make_config
from empirical.training.config_help import describe_keys
from empirical.training.presets import describe
from core import cli
from empirical.training import lock
from empirical.training.loop import train
from empirical.training.probes import check_probe


def _locked_train(cfg, out: Path) -> dict:
    """train() under the run lock the sweep takes: two trainings of one folder at once (two batches,
    a batch and a sweep) would write one run's checkpoints and logs in turn. A run refused before it
    began leaves no folder."""
    new = not out.exists()
    try:
        with lock.hold(out):
            return train(cfg, out)
    except lock.Busy as err:
        raise cli.UsageError(f"--out {err}; wait for it, or train another folder") from None
    except ValueError:
        if new and {p.name for p in out.iterdir()} <= {lock.NAME}:
            (out / lock.NAME).unlink(missing_ok=True)
            out.rmdir()
        raise


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser(
        epilog="presets:\n" + describe() + "\n\nkeys for --set:\n" + describe_keys(),
    )
    parser.add_argument(
        "--preset", default="tiny", help=f"one of {', '.join(TRAIN_PRESETS)} (default tiny)"
    )
    cli.add_set(
        parser, "override a config field, e.g. --set steps=2000 --set sep.color=0.6 (repeatable)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run folder (default runs/train/<preset>-color<Δ>-size<Δ>-seed<seed>); rerun to "
        "resume",
    )
    args = parser.parse_args(argv)
    cfg = make_config(args.preset, args.overrides)
    out = args.out or Path("runs/train") / (
        f"{cfg.preset}-" + "-".join(f"{c}{v:g}" for c, v in cfg.sep.items()) + f"-seed{cfg.seed}"
    )
    cli.output_dir(out, "--out")
    check_probe(cfg, out)
    if cli.checking(args):
        return 0
    try:
        summary = _locked_train(cfg, out)
    except KeyboardInterrupt:
        print(
            "train: interrupted; run the same command again to resume from the last checkpoint",
            file=sys.stderr,
        )
        return 130
    final = "; ".join(
        f"{k}: ({', '.join(f'{v:.3f}' for v in z)})" for k, z in summary["final"].items()
    )
    print(
        f"trained {summary['step']} steps in {summary['wall_s']:.0f} s of training; final points "
        f"{final}"
    )
    print(f"wrote {out / 'trajectories.csv'}, {out / 'metrics.jsonl'}, {out / 'samples'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
