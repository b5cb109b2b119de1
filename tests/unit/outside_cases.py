"""Synthetic registrations and test runs for the scoring rule of the registered outside-range test (fitting.outside):
one event (behavior) and one law (clock), the baselines at one value, the registered seeds, probe and length."""

from pathlib import Path

import numpy as np

from fitting.analyses.events import Event
from fitting.analyses.outside_score import TEST_PROBE, TEST_SEEDS
from fitting.estimators import event_laws as el

__all__ = ["TEST_PROBE", "fake_registration", "fake_runs", "valid_git"]
SEPS = [{"color": 0.8, "size": 0.15}, {"color": 0.15, "size": 0.4}]
STEPS = 15000
# what fitting.outside score finds in git when every run began after an unchanged registration
valid_git = {"registered_before": {"all_after": True, "unchanged": True}}


def fake_registration(pred, blind, delta=0.15, interval=(0.8, 1.25), corner=("10", "01")):
    """A registration with one event and one law (clock), the baselines all at ``blind``."""
    settings = []
    for sep, p, b, c in zip(SEPS, pred, blind, corner):
        events = {"behavior": {}}
        for m, v in [("clock", p)] + [(name, b) for name in el.BASELINES]:
            events["behavior"][m] = {"median": v, "interval80": [v * interval[0], v * interval[1]]}
        settings.append(
            {
                "sep": sep,
                "steps": STEPS,
                "corner": {"clock": c, "blind": "10", "nearest": "10"},
                "events": events,
            }
        )
    return {"settings": settings, "margins": {"behavior": {"delta_log": delta}}}


def fake_runs(medians, n=8, spread=0.05, corner=None):
    """n finished runs a setting (seeds 10, 11, ...), behavior around ``medians`` (censored past 15,000)."""
    runs = []
    for i, (m, sep) in enumerate(zip(medians, SEPS)):
        for s in range(n):
            step = m * float(np.exp(spread * (s - (n - 1) / 2) / n))
            ev = Event(step, float(STEPS)) if step < STEPS else Event(None, float(STEPS))
            runs.append(
                {
                    "run": f"t{i}{s}",
                    "seed": TEST_SEEDS[0] + s,
                    "sep": sep,
                    "steps": STEPS,
                    "finished": True,
                    "probe_hash": TEST_PROBE,
                    "corner": (corner or ["10", "01"])[i],
                    "behavior": ev,
                }
            )
    return runs


def registered_run(root: Path, path: str) -> Path:
    """A run the registration names (under docs/results, where results were on 2026-11-27; kept byte for byte) where
    it is now: under ``root``/results (issue #53; errata item 14)."""
    return root / "results" / Path(path).relative_to("docs/results")
