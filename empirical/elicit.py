"""Run the hidden-capability protocols on a run's saved checkpoints.

  python -m empirical.elicit RUN_DIR [--protocols overprompt,intervention,patch,cfg] [--classes \\
      all] [--every 1]

For every saved checkpoint (or every --every-th, always with the last) and every chosen class, each
protocol picks the best setting of the run's grid on one noise draw and scores it on an independent
one (see empirical.training.protocols): the logged accuracy is that score, with its 95% interval,
next to the shares of samples read as each corner and as unreadable. By default every class is
elicited: the held-out classes, and the training classes as a control (a protocol that "elicits" a
class the model cannot yet draw, or that breaks one it can, shows there). Results go to
RUN_DIR/elicit/<protocol>.json after every checkpoint; the scored samples of a few checkpoints are
saved as RUN_DIR/elicit/samples/<protocol>_step_NNNNNN.png (what "capable" looks like); and
RUN_DIR/trajectories.csv is rebuilt with one trajectory per (class, protocol) next to the naive
ones (column ``setting`` says which setting was chosen). Interrupt it at any time and rerun:
finished checkpoints are skipped, no row is lost or duplicated. Then
``python -m fitting.capability RUN_DIR`` compares capability with behavior.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from empirical.training import protocols
from empirical.training.config_checks import protocol_unsupported
from core import cli
from empirical.elicitation.finished_run import chosen_steps, load_run, run_protocols


def _protocol_names(text: str | None) -> list[str]:
    """--protocols as a list of known protocols (None: all of them)."""
    given = text if text is not None else ",".join(protocols.PROTOCOLS)
    names = [p.strip() for p in given.split(",") if p.strip()]
    valid = ", ".join(protocols.PROTOCOLS)
    if not names:
        raise ValueError(f"--protocols {text!r}: give at least one of {valid}")
    unknown = [n for n in names if n not in protocols.PROTOCOLS]
    if unknown:
        raise ValueError(
            f"--protocols {text!r}: unknown protocol {', '.join(map(repr, unknown))}; valid: "
            f"{valid}"
        )
    return names


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument("run", type=Path, help="a run folder written by python -m empirical.train")
    parser.add_argument(
        "--protocols",
        default=None,
        help=f"comma-separated (default all: {', '.join(protocols.PROTOCOLS)}; "
        "cfg only where the run trained with p_cfg > 0)",
    )
    parser.add_argument(
        "--classes",
        default="all",
        help="all (default: the held-out classes and the training classes as a control), "
        "held-out, or labels like 11,01",
    )
    parser.add_argument(
        "--every",
        type=int,
        default=1,
        help="elicit every N-th saved checkpoint (and the last); default 1",
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    args = parser.parse_args(argv)
    names = _protocol_names(args.protocols)
    chosen_steps([0], args.every)  # checks --every before any work
    if args.classes not in ("all", "held-out") and not [
        c for c in args.classes.split(",") if c.strip()
    ]:
        raise ValueError(
            f"--classes {args.classes!r}: give held-out, all, or class labels like 11,01"
        )
    if cli.checking(args):
        return 0
    cfg, _ = load_run(args.run)
    if args.protocols is None:  # by default, every protocol the run supports
        names = [n for n in names if not protocol_unsupported(n, cfg)]
    cli.output_dir(args.run / "elicit", "RUN")
    if args.classes == "held-out":
        classes = cfg.data.held_out
    elif args.classes == "all":
        classes = None
    else:
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
    for name in names:
        why = protocol_unsupported(name, cfg)
        if why:
            raise ValueError(f"--protocols {name}: {args.run}: {why}; drop {name}")
    results = run_protocols(args.run, names, classes, device=args.device, every=args.every)
    for name, res in results.items():
        last = max(res)
        best = {label: f"{r.accuracy:.2f} ({r.setting})" for label, r in res[last].items()}
        print(f"{name}: {len(res)} checkpoints; at step {last}: {best}")
    print(f"wrote {args.run / 'elicit'} and {args.run / 'trajectories.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
