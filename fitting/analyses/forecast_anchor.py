"""The `anchor` forecast: behavior anchored on the latest event the run has shown, on its own
concept clocks.

The chain the toy theory and the committed runs show (docs/forecast.md): each concept is learned on
a clock set by its signal (log T_c = a_c + b_c log Δ_c + ε, Eq. 1's speed), the held-out class's
capability (over-prompting) comes on the slower concept's clock, and naive prompting shows the class
a lag later that depends on *which* concept is the slower one (the class memorizes the corner of the
faster concept and must still pick up the slower one):

    log behavior = log anchor + μ_k + σ_k ε,   k = the slower concept,

the anchor being the capability step once over-prompting has shown it, else the slower concept's
clock T_slow. At a cut the run has shown some of these and not others, and the forecast draws what
it has not seen from the pool, conditioned on what the cut tells (a concept not learned yet is
learned after the cut; the behavior is not shown yet): a concept's clock from its separation (or
from the pool's clocks past the cut where the run's separations are unknown), T_slow as their
maximum. Each draw of the unseen clocks gives a lognormal behavior; the forecast is their mixture,
truncated at the earliest step the behavior can still be (the cut, or a pending reading's first
step).

Every coefficient is fitted to the pool with censoring (fitting.estimators.censored): runs that
never learned a concept or never composed count as "later than their last checkpoint".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from fitting.estimators import censored

# a group (the runs whose slower concept is k) with fewer runs than this borrows the pooled fit
MIN_RUNS = 4
N_DRAWS = 4000


@dataclass(frozen=True)
class Lognormal:
    mu: float
    sigma: float
    slope: float = 0.0  # on log separation (the concept clocks)
    n: int = 0
    span: tuple = ()  # the pool's separations (lowest, highest) the clock was fitted on


@dataclass(frozen=True)
class AnchorModel:
    clocks: dict  # concept -> Lognormal of T_c on log Δ_c
    clocks_blind: dict  # concept -> Lognormal of T_c without the separation
    after_slow: dict  # slower concept -> Lognormal of behavior / T_slow
    after_capability: dict  # slower concept -> Lognormal of behavior / capability


def _tobit(y: list, c: list, x: list | None = None) -> Lognormal:
    y, c = np.asarray(y, float), np.asarray(c, bool)
    if y.size < 3 or (~c).sum() < 2:
        raise ValueError(f"{y.size} runs ({(~c).sum()} observed)")
    if x is not None and np.ptp(np.asarray(x, float)) > 1e-9:
        xs = np.asarray(x, float)
        f = censored.fit(
            lambda th, cov: th[0] + th[1] * cov["x"], np.array([np.mean(y), 0.0]), y, c, {"x": xs}
        )
        span = (float(np.exp(xs.min())), float(np.exp(xs.max())))
        return Lognormal(float(f.theta[0]), f.sigma, float(f.theta[1]), int(y.size), span)
    f = censored.fit(lambda th, cov: th[0] + 0 * cov["x"], np.array([np.mean(y)]), y, c, {"x": y})
    return Lognormal(float(f.theta[0]), f.sigma, 0.0, int(y.size))


def _slow(e: dict) -> tuple[str, float] | None:
    """The slower concept of a pool run and its clock, where every clock was read."""
    t = {k: v.step for k, v in e["concept_steps"].items()}
    if not t or None in t.values():
        return None
    k = max(t, key=t.get)
    return k, float(t[k])


def _by_group(rows: list[tuple[str, float, bool]]) -> dict:
    """Per group, the Lognormal of the rows (group, log ratio, censored); '*' pools every group."""
    out = {}
    if rows:
        try:
            out["*"] = _tobit([r[1] for r in rows], [r[2] for r in rows])
        except ValueError:
            return {}
    for k in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == k]
        if len(mine) >= MIN_RUNS:
            try:
                out[k] = _tobit([r[1] for r in mine], [r[2] for r in mine])
            except ValueError:
                pass
    return out


def fit(events: list[dict]) -> AnchorModel:
    """The anchor model's coefficients from the pool's events
    (fitting.analyses.events.run_events)."""
    clocks, blind = {}, {}
    concepts = sorted({k for e in events for k in e["concept_steps"]})
    for k in concepts:
        have = [e for e in events if k in e["concept_steps"]]
        y = [np.log(max(e["concept_steps"][k].value, 1.0)) for e in have]
        c = [e["concept_steps"][k].step is None for e in have]
        try:
            blind[k] = _tobit(y, c)
        except ValueError:
            continue
        with_sep = [i for i, e in enumerate(have) if (e.get("sep") or {}).get(k, 0) > 0]
        seps = {have[i]["sep"][k] for i in with_sep}
        if len(with_sep) >= 3 and len(seps) >= 2:
            try:
                clocks[k] = _tobit(
                    [y[i] for i in with_sep],
                    [c[i] for i in with_sep],
                    [np.log(have[i]["sep"][k]) for i in with_sep],
                )
            except ValueError:
                pass
    slow, cap = [], []
    for e in events:
        s = _slow(e)
        if s is None:
            continue
        b = e["behavior"]
        slow.append((s[0], np.log(b.value) - np.log(s[1]), b.step is None))
        ce = e.get("capability")
        if ce is not None and ce.step is not None and ce.step > 0:
            cap.append((s[0], np.log(b.value) - np.log(ce.step), b.step is None))
    return AnchorModel(clocks, blind, _by_group(slow), _by_group(cap))


def _truncated_above(
    mu: NDArray, sd: NDArray, floor: float, rng: np.random.Generator
) -> tuple[NDArray, NDArray]:
    """Draws of exp(N(mu, sd)) conditioned on exceeding ``floor``, and each draw's weight P(>
    floor)."""
    lo = special.ndtr((np.log(max(floor, 1e-9)) - mu) / sd)
    w = 1.0 - lo
    u = lo + rng.random(mu.shape) * (1.0 - lo)
    z = special.ndtri(np.clip(u, 1e-12, 1 - 1e-12))
    return np.exp(mu + sd * z), w


def weighted_quantiles(x: NDArray, w: NDArray, qs) -> list[float]:
    order = np.argsort(x)
    x, cw = x[order], np.cumsum(w[order])
    cw /= cw[-1]
    return [float(x[min(np.searchsorted(cw, q), x.size - 1)]) for q in qs]


@dataclass(frozen=True)
class Draws:
    steps: NDArray
    weights: NDArray
    inputs: str


def draw(
    clocks_seen: dict,
    at: float,
    floor: float,
    capability: float | None,
    sep: dict,
    model: AnchorModel,
    pool_clocks: dict,
    n: int = N_DRAWS,
    seed: int = 0,
) -> Draws:
    """Draws of the behavior step given what the run showed by the cut (module docstring); raises
    ValueError with the reason where the pool cannot say."""
    rng = np.random.default_rng(seed)
    said, t = [], {}
    for k, seen in clocks_seen.items():
        if seen is not None:
            t[k] = np.full(n, float(seen))
            said.append(f"T_{k} {seen:,.0f}")
            continue
        if k in model.clocks and (sep or {}).get(k, 0) > 0:
            m = model.clocks[k]
            mu = np.full(n, m.mu + m.slope * np.log(sep[k]))
            t[k], _ = _truncated_above(mu, np.full(n, m.sigma), at, rng)
            said.append(f"T_{k} > cut (from Δ{k} {sep[k]:g})")
            if m.span and not m.span[0] * (1 - 1e-9) <= sep[k] <= m.span[1] * (1 + 1e-9):
                said.append(
                    f"Δ{k} {sep[k]:g} outside the pool's {m.span[0]:g}-{m.span[1]:g}: extrapolated"
                )
            continue
        later = np.asarray([v for v in pool_clocks.get(k, []) if v > at], float)
        if later.size < 3:
            raise ValueError(
                f"{k} not learned by the cut and fewer than 3 pool runs learned it later"
            )
        t[k] = rng.choice(later, n)
        said.append(f"T_{k} > cut (from {later.size} pool runs)")
    if not t:
        raise ValueError("no concept clock in the run's log")
    names = list(t)
    stack = np.vstack([t[k] for k in names])
    slow_idx = np.argmax(stack, axis=0)
    anchor = stack[slow_idx, np.arange(n)]
    table = model.after_slow
    if capability is not None and capability > 0:
        anchor, table = np.full(n, float(capability)), model.after_capability
        said.append(f"capability {capability:,.0f}")
    if "*" not in table:
        raise ValueError("the pool has too few runs with the anchor and the behavior read")
    mu, sd = np.empty(n), np.empty(n)
    for i, k in enumerate(names):
        g = table.get(k, table["*"])
        pick = slow_idx == i
        mu[pick], sd[pick] = np.log(anchor[pick]) + g.mu, g.sigma
    steps, w = _truncated_above(mu, sd, floor, rng)
    if not w.sum() > 1e-12:
        raise ValueError("the pool puts the behavior before the cut")
    return Draws(steps, w, ", ".join(said))
