"""The pool of the registered outside-range test (fitting.outside): its runs' events, one probe, the
longest run of each (setting, seed); every law and baseline fitted to it and predicting new
settings; and the level-clustered bootstrap of it all.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from fitting.estimators import event_laws as el
from fitting.analyses.events import TIME_EVENTS, run_events


def pool_events(runs: Sequence[str | Path], probe: str | None) -> tuple[list[dict], dict]:
    """The pool: every run's events, one probe, the longest run of each (setting, seed)."""
    events = []
    for run in runs:
        ev = run_events(run, as_registered=True)
        if sorted(ev["sep"]) != sorted(el.CONCEPTS):
            raise ValueError(
                f"{run}: a {', '.join(ev['sep'])} run; the test's pool is {' x '.join(el.CONCEPTS)}"
            )
        events.append(ev)
    hashes = Counter(e["probe_hash"] for e in events)
    chosen = probe or hashes.most_common(1)[0][0]
    if chosen not in hashes:
        raise ValueError(
            f"--probe {probe}: no run was read by it; the runs' probes: {dict(hashes)}"
        )
    kept: dict[tuple, dict] = {}
    for e in events:
        if e["probe_hash"] != chosen:
            continue
        key = (e["sep"]["color"], e["sep"]["size"], e["seed"])
        if key not in kept or e["behavior"].censored_at > kept[key]["behavior"].censored_at:
            kept[key] = e
    pool = sorted(kept.values(), key=lambda e: (e["sep"]["color"], e["sep"]["size"], e["seed"]))
    return pool, {
        "probe_hash": chosen,
        "probes_given": dict(hashes),
        "runs_given": len(events),
        "runs_kept": len(pool),
    }


def arrays(pool: list[dict]):
    seps = np.array([[e["sep"][c] for c in el.CONCEPTS] for e in pool], float)
    ends = np.array([e["behavior"].censored_at for e in pool], float)
    steps = np.array(
        [[e["concept_steps"][c].value for c in el.CONCEPTS] for e in pool],
        float,
    )
    cens = np.array([[e["concept_steps"][c].step is None for c in el.CONCEPTS] for e in pool], bool)
    return seps, steps, cens, ends


def event_steps(pool: list[dict], name: str):
    """(mask of runs with the event defined, steps, censored)."""
    have = np.array([e[name] is not None for e in pool])
    y = np.array([e[name].value if e[name] else np.nan for e in pool], float)
    c = np.array([bool(e[name] and e[name].step is None) for e in pool])
    return have, y, c


def fit_all(pool: list[dict], new_seps: np.ndarray, methods: Sequence[str]):
    """Calibrate, fit every method to every event, predict at ``new_seps``: {event: {method:
    (median, sd, θ)}}."""
    seps, steps, cens, _ = arrays(pool)
    coef = el.calibrate(seps, steps, cens)
    cov_pool, cov_new = el.covariates(seps, coef), el.covariates(new_seps, coef)
    out = {}
    for ev in TIME_EVENTS:
        have, y, c = event_steps(pool, ev)
        if not have.any() or (~c[have]).sum() < 2:
            continue
        sub = {k: v[have] for k, v in cov_pool.items()}
        out[ev] = {}
        for m in methods:
            method = el.fit_method(m, y[have], c[have], sub)
            med, sd = method.predict(cov_new)
            out[ev][m] = (med, sd, None if method.fit is None else method.fit.theta)
    return coef, cov_new, out


def bootstrap(pool, new_seps, methods, n_boot: int, seed: int):
    """Resample the pool's settings with replacement (level-clustered), refit everything each
    time."""
    settings = sorted({(e["sep"]["color"], e["sep"]["size"]) for e in pool})
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        pick = rng.integers(len(settings), size=len(settings))
        sample = [
            e for i in pick for e in pool if (e["sep"]["color"], e["sep"]["size"]) == settings[i]
        ]
        try:
            draws.append(fit_all(sample, new_seps, methods))
        except (ValueError, FloatingPointError):
            # a resample with one level of a concept: no calibration (counted in n_boot_used)
            continue
    return draws
