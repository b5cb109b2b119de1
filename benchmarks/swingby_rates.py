"""How often random starts show the swing-by paper's figures, under both conventions (issue #33).

    python benchmarks/swingby_rates.py [--starts 200] [--json FILE]

For each figure setting of theory.cli.swingby_presets.FIGURES (the authors' mu, sigma, dimension, start scale and
time span), the symmetric two-layer model is integrated from --starts random starts (seeds 0..N-1 of
numpy's default_rng) under each combination of the signal convention (``a``: the printed equations;
``a2``: the authors' scripts) and the start law (``gaussian`` N(0, scale^2/d); ``uniform-positive``
in [0, scale), the scripts'). Printed per setting: the share of starts whose OOD loss rises at least
as often as the figure shows (Fig. 5: 1, Fig. 8: 2, Fig. 9: 3), and for Fig. 10 the share that
plateaus above zero for more than half the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from theory.models.identity_mapping import (
    SIGNALS,
    STARTS,
    Task,
    ood_loss,
    plateau,
    rises,
)  # noqa: E402
from theory.solvers.two_layer import two_layer  # noqa: E402
from theory.cli.swingby_presets import FIGURES  # noqa: E402

WANT = {"5": 1, "8": 2, "9": 3}  # rises of the OOD loss each figure shows; Fig. 10: a plateau


def shows(fig: str, t: np.ndarray, ood: np.ndarray) -> bool:
    """Whether one OOD loss curve has the figure's shape."""
    if fig in WANT:
        return rises(ood) >= WANT[fig]
    return plateau(t, ood) > 0.5 * t[-1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None, help="also write the shares here")
    args = parser.parse_args(argv)
    out: dict = {"starts": args.starts, "figures": {}}
    print(f"share of {args.starts} random starts showing each figure's shape")
    print(
        f"{'figure':<8} {'shape':<22} "
        + " ".join(f"{s + ', ' + st:>26}" for s in SIGNALS for st in STARTS)
    )
    for fig, (mu, sigma, d, scale, t_end, _) in FIGURES.items():
        task = Task(mu, sigma, d)
        t = (
            np.r_[np.linspace(0, 1, 200), np.geomspace(1, t_end, 801)[1:]]
            if t_end >= 50
            else np.linspace(0, t_end, 1001)
        )
        shares = {}
        for signal in SIGNALS:
            for start in STARTS:
                hits = sum(
                    shows(
                        fig,
                        t,
                        ood_loss(
                            task, two_layer(task.rates(signal), t, task.initial(scale, seed, start))
                        ),
                    )
                    for seed in range(args.starts)
                )
                shares[f"{signal},{start}"] = hits / args.starts
        shape = f">= {WANT[fig]} rise(s)" if fig in WANT else "plateau > half the run"
        print(f"Fig. {fig:<3} {shape:<22} " + " ".join(f"{v:>26.1%}" for v in shares.values()))
        out["figures"][fig] = {"shape": shape, "shares": shares}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
