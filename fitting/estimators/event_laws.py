"""The toy theory's laws for the held-out class's event times, and the baselines they must beat.

Every method reads one covariate, the *concept clock*: T_c, the step at which the training classes
learn concept c (fitting.analyses.events), predicted for a setting from its separation by
:func:`calibrate` (per concept, log T_c = α_c + β_c log Δc, fitted to the pool's runs with
censoring). The slower concept's clock is T_slow = max_c T_c; the signal ratio is r = T_size /
T_color (> 1: color is the stronger concept).

The laws (Eq. 1: each concept is learned at a speed set by its signal, and the held-out class cannot
compose before its slower concept is learned, so its events run on the slower concept's clock):

  clock     log t = a + log T_slow                 the theory's exponent, 1: one coefficient
  power     log t = a + b log T_slow               the exponent fitted (the theory: b > 0)
  compete   log t = a + b log T_slow + c log(T_slow / T_fast)
                                                   the faster concept's lead deepens the
                                                   memorization (Eq. 1's biased target held longer)

and for the memorized corner: the corner with the faster concept's value right (Eq. 1's biased
target).

The baselines (what a law must beat): ``blind``, the mean of every run (no covariate); ``nearest``,
the median of the pool's setting nearest in log r; ``linear`` (t = a + b r) and ``loglinear`` (log t
= a + b log r), trends in the signal ratio. Every method is fitted with censoring
(fitting.estimators.censored) and gives, at a new setting, a median and an 80% interval for one new
seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import NDArray
from scipy import special

from fitting.estimators import censored

CONCEPTS = ("color", "size")
LAWS = ("clock", "power", "compete")
BASELINES = ("blind", "nearest", "linear", "loglinear")
Z80 = float(special.ndtri(0.9))  # an 80% central interval is the mean ± Z80 sd


@dataclass(frozen=True)
class Spec:
    """A method: its coefficients, its mean (θ, covariates) -> μ, and whether μ is log steps or
    steps."""

    names: tuple[str, ...]
    mean: Callable[[NDArray, dict], NDArray]
    log: bool = True


def _lt(cov):
    return np.log(cov["T_slow"])


SPECS = {
    "clock": Spec(("a",), lambda th, cov: th[0] + _lt(cov)),
    "power": Spec(("a", "b"), lambda th, cov: th[0] + th[1] * _lt(cov)),
    "compete": Spec(
        ("a", "b", "c"),
        lambda th, cov: th[0] + th[1] * _lt(cov) + th[2] * np.log(cov["T_slow"] / cov["T_fast"]),
    ),
    "blind": Spec(("a",), lambda th, cov: th[0] + 0.0 * _lt(cov)),
    "linear": Spec(("a", "b"), lambda th, cov: th[0] + th[1] * cov["r"], log=False),
    "loglinear": Spec(("a", "b"), lambda th, cov: th[0] + th[1] * np.log(cov["r"])),
}


# --- the covariate
# ----------------------------------------------------------------------------------------------


def calibrate(seps: NDArray, steps: NDArray, cens: NDArray) -> NDArray:
    """Per concept, (α, β) of log T_c = α + β log Δc; seps, steps, cens: (N, 2) in CONCEPTS'
    order."""
    out = []
    for d, name in enumerate(CONCEPTS):
        x = np.log(seps[:, d])
        if np.unique(x).size < 2:
            raise ValueError(
                f"the pool has one Δ{name} only: the {name} clock cannot be calibrated"
            )
        y = np.log(steps[:, d])
        spec = lambda th, cov: th[0] + th[1] * cov["x"]  # noqa: E731
        ok = ~cens[:, d]
        b0 = (
            np.polyfit(x[ok], y[ok], 1)
            if np.unique(x[ok]).size > 1
            else (0.0, float(np.mean(y[ok])))
        )
        fit = censored.fit(spec, np.array([b0[1], b0[0]]), y, cens[:, d], {"x": x})
        out.append(fit.theta)
    return np.array(out)


def covariates(seps: NDArray, coef: NDArray) -> dict[str, NDArray]:
    """T_color, T_size, T_slow, T_fast and r at settings ``seps`` (N, 2), from the calibration
    ``coef``."""
    T = np.exp(coef[:, 0] + coef[:, 1] * np.log(seps))
    return {
        "T_color": T[:, 0],
        "T_size": T[:, 1],
        "T_slow": T.max(axis=1),
        "T_fast": T.min(axis=1),
        "r": T[:, 1] / T[:, 0],
    }


def corner(cov: dict, i: int) -> str:
    """The memorized corner the laws predict: the faster concept's value right, the other's
    wrong."""
    return "10" if cov["T_color"][i] < cov["T_size"][i] else "01"


# --- fitting one method
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    name: str
    spec: Spec | None  # None: nearest
    fit: censored.Fit | None
    pool_cov: dict
    pool_y: NDArray  # steps
    pool_cens: NDArray

    def predict(self, cov: dict) -> tuple[NDArray, NDArray]:
        """(median steps, sd of a new seed in the method's scale) at settings ``cov``."""
        if self.spec is None:
            return self._nearest(cov)
        mu = self.spec.mean(self.fit.theta, cov)
        sd = np.full(mu.shape, self.fit.sigma)
        return (np.exp(mu) if self.spec.log else mu), sd

    def _nearest(self, cov):
        lr = np.log(self.pool_cov["r"])
        meds, sds = [], []
        for r in np.log(cov["r"]):
            near = np.isclose(lr, lr[np.argmin(np.abs(lr - r))])
            m, _ = censored.median(np.log(self.pool_y[near]), self.pool_cens[near])
            meds.append(np.exp(m))
            obs = np.log(self.pool_y[near & ~self.pool_cens])
            sds.append(np.std(obs, ddof=1) if obs.size > 1 else np.nan)
        return np.array(meds), np.array(sds)


def fit_method(name: str, y: NDArray, cens: NDArray, cov: dict) -> Method:
    """Fit one law or baseline to the pool's event steps ``y`` (censored where ``cens``)."""
    if name == "nearest":
        return Method(name, None, None, cov, y, cens)
    spec = SPECS[name]
    target = np.log(y) if spec.log else y
    start = np.zeros(len(spec.names))
    ok = ~cens
    start[0] = float(np.mean(target[ok])) - (
        float(np.mean(_lt(cov)[ok])) if name == "clock" else 0.0
    )
    if name in ("power", "compete"):
        start[1] = 1.0
        start[0] = float(np.mean(target[ok] - _lt(cov)[ok]))
    return Method(name, spec, censored.fit(spec.mean, start, target, cens, cov), cov, y, cens)


def interval(median: NDArray, sd: NDArray, boot_sd: NDArray, log: bool) -> NDArray:
    """80% interval for one new seed: the method's seed spread and its coefficients' spread
    (bootstrap) added."""
    total = np.sqrt(np.nan_to_num(sd) ** 2 + np.nan_to_num(boot_sd) ** 2)
    if log:
        return np.stack([median * np.exp(-Z80 * total), median * np.exp(Z80 * total)], axis=-1)
    return np.stack([np.maximum(median - Z80 * total, 0.0), median + Z80 * total], axis=-1)


def is_log(name: str) -> bool:
    return name == "nearest" or SPECS[name].log
