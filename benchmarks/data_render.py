"""Benchmark: rendering synthetic concept images (target: 10,000 images at 32x32 in <= 1 s on 2 cores).

    python benchmarks/data_render.py [--repeats 5]

Times ``empirical.images.dgp.sample`` (values, rendering, noise, h) for the 2x2 color x size setup, best of
--repeats, at 16, 32 and 64 px. The baseline, side by side: the same images drawn one at a time
(a Python loop over images, as a per-image renderer does).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from empirical.images.dgp import DataConfig, sample, sample_values  # noqa: E402
from empirical.images.render import render  # noqa: E402
from timing import best_time  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(
        f"{'resolution':>10} {'10,000 images':>14} {'one at a time (1,000, scaled)':>30} {'speed-up':>9}"
    )
    for res in (16, 32, 64):
        cfg = DataConfig(("color", "size"), {"color": 0.3, "size": 0.4}, resolution=res)
        counts = {c: 2500 for c in cfg.classes}
        batched = best_time(lambda: sample(cfg, counts, 0), args.repeats)
        values = sample_values(cfg, np.zeros((1000, 2), dtype=int), np.random.default_rng(0))
        rows = [{k: v[i : i + 1] for k, v in values.items()} for i in range(1000)]
        loop = best_time(lambda: [render(r, res, noise=1e-3) for r in rows], 1) * 10
        print(f"{res:>8}px {batched:>12.3f} s {loop:>28.3f} s {loop / batched:>8.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
