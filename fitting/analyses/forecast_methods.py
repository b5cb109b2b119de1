"""The forecasts of fitting.forecast: when will plain prompting show the held-out class, from a
run's logs so far.

Every method reads the run only up to the cut ``at`` (:func:`reading`) and returns a
:class:`Forecast`: the behavior step (naive joint accuracy >= 0.5 held 2 checkpoints,
fitting.study's reading), an 80% interval for it and the probability that it comes by the horizon.
The pooled methods read other runs (the pool, never the run being forecast) through :class:`Pool`.

  anchor    the default (fitting.analyses.forecast_anchor): behavior anchored on the run's latest
            event (the capability step once seen, else the slower concept's clock), a lag that
            depends on which concept is slower; clocks not yet read drawn from each concept's
            clock regressed on its separation.
  clock     the toy theory: Eq. 1's held-out class composes on its slower concept's clock. T_slow,
            the step at which the run's own training classes have learned both concepts
            (fitting.analyses.events), times a factor fitted to the pool with censoring (log
            behavior = a + log T_slow + ε). Before both concepts are learned, T_slow is only known
            to exceed the cut: it is drawn from the pool's T_slow past the cut (at least 3 such
            runs), else the method gives no forecast.
  lag       the capability step (over-prompting, if logged and already seen) plus the pool's lag of
            behavior behind capability.

The baselines every method must beat are fitting.analyses.forecast_baselines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from fitting.analyses import forecast_anchor
from fitting.estimators import censored
from fitting.analyses.capability_readings import capability
from fitting.estimators.curves import settled_step, threshold_step
from fitting.analyses.events import concept_steps
from fitting.analyses.study_runs import PERSIST
from core.trajectory import Trajectory

Z80 = float(special.ndtri(0.9))
# the forecast's own methods, the default first; then the baselines it must beat
# (forecast_baselines)
METHODS = ("anchor", "clock", "lag")
BASELINES = ("blind", "setting", "base-rate", "logistic", "lc-naive", "lc-capability")


@dataclass(frozen=True)
class Forecast:
    method: str
    # the forecast behavior step (median), None where not expected by the horizon
    step: float | None
    interval: tuple[float, float] | None
    p_compose: float | None  # P(behavior by the horizon)
    note: str = ""

    def to_json(self) -> dict:
        return {
            "method": self.method,
            "behavior_step": self.step,
            "interval": None
            if self.interval is None
            else [None if x is None else float(x) for x in self.interval],
            "p_compose": self.p_compose,
            "note": self.note,
        }


@dataclass(frozen=True)
class Reading:
    """What a run shows up to the cut: the held-out class's naive curve, its capability curve, its
    concept clocks."""

    at: float
    step: NDArray
    accuracy: NDArray
    behavior: float | None  # already observed by the cut
    # the earliest step the behavior can still be: the cut, or the first of the last checkpoints at
    # >= 0.5 that
    # the cut leaves unconfirmed (a behavior step is the first of the checkpoints that hold it)
    floor: float
    capability: float | None
    clocks: dict  # concept -> step or None (not yet learned by the cut)
    sep: dict = field(default_factory=dict)
    # the capability curve by the cut (steps, accuracy), None where nothing was elicited
    capability_curve: tuple | None = None

    @property
    def pending(self) -> bool:
        """The last checkpoint by the cut reads the class at >= 0.5, too few to confirm it: the
        behavior may be dated to ``floor``, at or before the cut."""
        return self.behavior is None and self.accuracy.size > 0 and self.accuracy[-1] >= 0.5


def truncate(trajectories: list[Trajectory], at: float) -> list[Trajectory]:
    out = []
    for t in trajectories:
        keep = t.step <= at
        if keep.any():
            extra = {k: tuple(np.asarray(v)[keep]) for k, v in t.extra.items()}
            acc = None if t.accuracy is None else t.accuracy[keep]
            out.append(
                Trajectory(
                    t.step[keep],
                    t.z[keep],
                    t.concepts,
                    t.label,
                    t.protocol,
                    t.seed,
                    t.run,
                    acc,
                    extra,
                )
            )
    return out


def reading(
    trajectories: list[Trajectory], at: float, label: str = "11", sep: dict | None = None
) -> Reading:
    """The run's logs up to ``at`` (module docstring)."""
    cut = truncate(trajectories, at)
    held = next((t for t in cut if t.protocol == "naive" and t.label == label), None)
    if held is None or held.accuracy is None:
        raise ValueError(f"no naive accuracy of class {label} logged by step {at:g}")
    ok = ~np.isnan(held.accuracy)
    step, acc = held.step[ok].astype(float), held.accuracy[ok]
    cap = capability(cut, label)
    cap_step = None if cap is None else threshold_step(cap[0], cap[1], 0.5, persist=PERSIST)
    return Reading(
        at=float(at),
        step=step,
        accuracy=acc,
        behavior=threshold_step(step, acc, 0.5, persist=PERSIST),
        floor=_floor(step, acc, float(at)),
        capability=cap_step,
        clocks=concept_steps(cut),
        sep=dict(sep or {}),
        capability_curve=None
        if cap is None
        else (np.asarray(cap[0], float), np.asarray(cap[1], float)),
    )


def _floor(step: NDArray, acc: NDArray, at: float) -> float:
    """The earliest step a behavior not yet confirmed by the cut can be dated to (Reading.floor)."""
    start = settled_step(step, acc, 0.5)
    return at if start is None else start


def _lognormal(
    method: str, mu: float, sd: float, horizon: float, floor: float, note: str = ""
) -> Forecast:
    """A forecast from log behavior ~ N(mu, sd), conditioned on behavior > floor (the cut, not yet
    seen)."""
    lo_q = special.ndtr((np.log(floor) - mu) / sd) if floor > 0 else 0.0
    if lo_q > 1 - 1e-9:
        return Forecast(method, None, None, 0.0, note + "; the pool puts it before the cut")
    q = lambda p: float(np.exp(mu + sd * special.ndtri(lo_q + p * (1 - lo_q))))  # noqa: E731
    p = (special.ndtr((np.log(horizon) - mu) / sd) - lo_q) / (1 - lo_q)
    med = q(0.5)
    return Forecast(
        method, med if med <= horizon else None, (q(0.1), q(0.9)), float(max(0.0, p)), note
    )


@dataclass(frozen=True)
class Pool:
    """The other runs' events (fitting.analyses.events.run_events), from which the pooled methods
    learn."""

    events: list[dict]
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def anchor_model(self) -> forecast_anchor.AnchorModel:
        if "anchor" not in self._cache:
            self._cache["anchor"] = forecast_anchor.fit(self.events)
        return self._cache["anchor"]

    def concept_clocks(self) -> dict:
        """Concept -> the pool's read clocks (steps) of that concept."""
        out: dict = {}
        for e in self.events:
            for k, v in e["concept_steps"].items():
                if v.step is not None:
                    out.setdefault(k, []).append(float(v.step))
        return out

    def behaviors(self) -> tuple[NDArray, NDArray]:
        """(behavior step or last checkpoint, censored) of every pool run."""
        y = np.array([e["behavior"].value for e in self.events], float)
        return y, np.array([e["behavior"].step is None for e in self.events])

    def clock_fit(self) -> tuple[float, float]:
        """(a, σ) of log behavior = a + log T_slow, censored, over the pool's runs with both
        clocks."""
        y, c = [], []
        for e in self.events:
            t = [e["concept_steps"][k].step for k in e["concept_steps"]]
            if None in t:
                continue
            b = e["behavior"]
            y.append(np.log(b.value) - np.log(max(t)))
            c.append(b.step is None)
        if len(y) < 3:
            raise ValueError("the pool has fewer than 3 runs with both concept clocks")
        fit = censored.fit(
            lambda th, cov: th[0] + 0 * cov["x"],
            np.zeros(1),
            np.array(y),
            np.array(c),
            {"x": np.zeros(len(y))},
        )
        return float(fit.theta[0]), fit.sigma

    def lags(self) -> NDArray:
        out = [
            e["behavior"].step - e["capability"].step
            for e in self.events
            if e.get("capability")
            and e["capability"].step is not None
            and e["behavior"].step is not None
        ]
        return np.asarray(out, float)

    def same_setting(self, sep: dict) -> list[dict]:
        """The pool's runs at these separations (none when the run's own are unknown)."""
        if not sep:
            return []
        return [
            e
            for e in self.events
            if e["sep"] and all(np.isclose(e["sep"].get(k, np.nan), v) for k, v in sep.items())
        ]

    def nearest_setting(self, sep: dict) -> dict | None:
        """The pool's setting nearest ``sep`` in log separation among those with at least 2 runs
        (None where the run's separations are unknown or no setting shares its concepts)."""
        if not sep or any(not v > 0 for v in sep.values()):
            return None
        counts: dict = {}
        for e in self.events:
            s = e.get("sep") or {}
            if set(s) == set(sep) and all(v > 0 for v in s.values()):
                key = tuple(sorted(s.items()))
                counts[key] = counts.get(key, 0) + 1
        ok = [k for k, n in counts.items() if n >= 2]
        if not ok:
            return None
        dist = lambda k: sum(np.log(v / sep[c]) ** 2 for c, v in k)  # noqa: E731
        return dict(min(ok, key=lambda k: (dist(k), k)))

    def slow_clocks(self) -> NDArray:
        """T_slow of the pool's runs that learned both concepts."""
        t = [[e["concept_steps"][k].step for k in e["concept_steps"]] for e in self.events]
        return np.array([max(x) for x in t if x and None not in x], float)


def same_run(a: dict, b: dict) -> bool:
    """One run, or a repeat of its seed at its separations (on another device): never pooled with
    it."""
    return a["seed"] == b["seed"] and a["sep"] == b["sep"]


def clock(r: Reading, pool: Pool, horizon: float) -> Forecast:
    a, sd = pool.clock_fit()
    t = list(r.clocks.values())
    if None not in t:
        return _lognormal(
            "clock", a + np.log(max(t)), sd, horizon, r.floor, f"T_slow {max(t):,.0f}"
        )
    # the slower concept is not learned by the cut: T_slow > at, drawn from the pool's runs past the
    # cut
    later = pool.slow_clocks()
    later = later[later > r.at]
    if later.size < 3:
        return Forecast(
            "clock",
            None,
            None,
            None,
            "slower concept not yet learned; fewer than 3 pool runs later",
        )
    return _mixture(
        "clock",
        a + np.log(later),
        sd,
        horizon,
        r.floor,
        f"slower concept not yet learned: T_slow from {later.size} pool runs past the cut",
    )


def _mixture(
    method: str, mus: NDArray, sd: float, horizon: float, floor: float, note: str
) -> Forecast:
    """A forecast from an equal mixture of log behavior ~ N(mu_i, sd), conditioned on behavior >
    floor."""
    cdf = lambda x: float(np.mean(special.ndtr((x - mus) / sd)))  # noqa: E731
    lo_q = cdf(np.log(floor)) if floor > 0 else 0.0
    if lo_q > 1 - 1e-9:
        return Forecast(method, None, None, 0.0, note + "; the pool puts it before the cut")
    span = (mus.min() - 10 * sd - 1.0, mus.max() + 10 * sd + 1.0)

    def q(p: float) -> float:
        target = lo_q + p * (1 - lo_q)
        return float(np.exp(optimize.brentq(lambda x: cdf(x) - target, *span)))

    p = (cdf(np.log(horizon)) - lo_q) / (1 - lo_q)
    med = q(0.5)
    return Forecast(
        method, med if med <= horizon else None, (q(0.1), q(0.9)), float(max(0.0, p)), note
    )


def lag(r: Reading, pool: Pool, horizon: float) -> Forecast:
    lags = pool.lags()
    if r.capability is None:
        return Forecast(
            "lag", None, None, None, "no capability step by the cut (or no over-prompting logged)"
        )
    if lags.size < 3:
        return Forecast("lag", None, None, None, "the pool has fewer than 3 runs with both steps")
    steps = np.maximum(r.capability + lags, r.floor)
    med = float(np.median(steps))
    return Forecast(
        "lag",
        med if med <= horizon else None,
        tuple(np.percentile(steps, [10, 90])),
        float(np.mean(steps <= horizon)),
        f"capability {r.capability:,.0f}",
    )


def anchor(r: Reading, pool: Pool, horizon: float) -> Forecast:
    """The default: behavior anchored on the run's latest event on its own concept clocks
    (forecast_anchor)."""
    try:
        d = forecast_anchor.draw(
            r.clocks,
            r.at,
            r.floor,
            r.capability,
            r.sep,
            pool.anchor_model(),
            pool.concept_clocks(),
        )
    except ValueError as err:
        return Forecast("anchor", None, None, None, f"no forecast: {err}")
    lo, med, hi = forecast_anchor.weighted_quantiles(d.steps, d.weights, (0.1, 0.5, 0.9))
    p = float(np.sum(d.weights * (d.steps <= horizon)) / np.sum(d.weights))
    return Forecast("anchor", med if med <= horizon else None, (lo, hi), p, d.inputs)
