"""Issue #57, item 2: does a covariate rank color against size the way the held-out class's memorized corner does?

  python results/study-small/outside/covariate_check.py     (writes covariate_check.json beside this file)

Two covariates per run: the concept clock (fitting.analyses.events: the step the training classes 00, 01, 10 learn each
concept; the faster concept is the stronger) and the pixel signal (empirical.images.dgp.concept_signal's mse of the run's
setting at 24 px). Each predicts the corner the held-out class memorizes first: the stronger concept's value right.
Over the validation runs (probe d82ef1d4188a7998, naive only) and the over-prompted runs of dcolor/, dsize/ and
weak-cpu/ (probe 93e98c6f35e88932), every run whose memorized corner is 01 or 10.
"""

import glob
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from empirical.images.dgp import DataConfig, concept_signal  # noqa: E402
from fitting.analyses.events import run_events  # noqa: E402

GROUPS = {
    "validation": "validation/runs/*",
    "dcolor": "dcolor/runs/*",
    "dsize": "dsize/runs/sep.size=0.[123]*",
    "weak-cpu": "weak-cpu/runs/*",
}


def main() -> None:
    signals, rows, totals = {}, [], {}
    for group, pattern in GROUPS.items():
        for run in sorted(glob.glob(str(HERE.parent / pattern))):
            e = run_events(run, as_registered=True)
            if e["corner"] not in ("01", "10"):
                continue
            key = (e["sep"]["color"], e["sep"]["size"])
            if key not in signals:
                cfg = DataConfig(
                    ("color", "size"), {"color": key[0], "size": key[1]}, resolution=24
                )
                signals[key] = {c: v["mse"] for c, v in concept_signal(cfg).items()}
            t = {c: e["concept_steps"][c].value for c in ("color", "size")}
            clock = "10" if t["color"] < t["size"] else "01"
            pixel = "10" if signals[key]["color"] > signals[key]["size"] else "01"
            rows.append(
                {
                    "group": group,
                    "run": Path(run).name,
                    "probe_hash": e["probe_hash"],
                    "corner": e["corner"],
                    "clock": t,
                    "clock_corner": clock,
                    "pixel": signals[key],
                    "pixel_corner": pixel,
                }
            )
            g = totals.setdefault(group, {"runs": 0, "clock_agrees": 0, "pixel_agrees": 0})
            g["runs"] += 1
            g["clock_agrees"] += clock == e["corner"]
            g["pixel_agrees"] += pixel == e["corner"]
    doc = {"totals": totals, "runs": rows}
    (HERE / "covariate_check.json").write_text(json.dumps(doc, indent=1) + "\n")
    for group, g in totals.items():
        print(
            f"{group}: {g['runs']} runs; the clock agrees in {g['clock_agrees']}, the pixel signal in {g['pixel_agrees']}"
        )


if __name__ == "__main__":
    main()
