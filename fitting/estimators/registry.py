"""One contract for every estimator of fitting/: fit by name, get a frozen result, predict at any
steps.

    from fitting.estimators.registry import ESTIMATORS, fit
    one = fit("eq1", trajectory)             # a toy model fitted to one run (model_fit)
    one.predict(steps)                       # (T, D): its path at any steps
    law = fit("memorize+onset", trajectories, covariates=x)   # a law pooled over runs (laws)
    law.predict(steps, covariates=x_new)     # (N, T, D): the law's paths at new covariates

Per-run estimators (``ESTIMATORS``) take one trajectory and carry the names of the theory.simulate
models they integrate (eq1, eq2, notebook; sim2, the two-layer model of
theory.models.identity_mapping); their results predict without covariates. Given covariates, a name
is a law pooled over runs, named as ``fitting.predict --law`` names it: a base and options from
:data:`fitting.estimators.laws.PARTS` (``python -m fitting.predict --list-laws``), fitted to the
runs of one class with one row of covariates (N, D) per run; its result predicts the paths at any
covariates. One name, one model: ``eq1`` fits Eq. 1 to a run, and with covariates Eq. 1 whose
parameters are power laws of them. Both results are frozen, carry their interval estimates (``ci``)
and ``rmse``, and raise a ValueError naming what is missing when a covariate is given to a per-run
fit or withheld from a law. Options of the underlying fitters pass through (``fix``, ``ci``,
``n_boot``, ``rng``; a law's ``masked`` and ``p``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from fitting.estimators import laws
from fitting.estimators.model_fit import fit_model
from fitting.estimators.pooled import PooledFit, fit_law
from fitting.estimators.sim_fit import fit_sim
from core.trajectory import Trajectory, target_of
from theory.models.paper import FITTABLE


@dataclass(frozen=True)
class Estimator:
    """A per-run estimator: its name (a theory.simulate model), one line on what it fits, and its
    fitter."""

    name: str
    summary: str
    fit: Callable[..., Any]


ESTIMATORS: dict[str, Estimator] = {
    **{
        name: Estimator(
            name,
            f"the {name} toy model fitted to one run's path (fitting.estimators.model_fit)",
            partial(fit_model, model=name),
        )
        for name in FITTABLE
    },
    "sim2": Estimator(
        "sim2",
        "the two-layer structured identity mapping fitted to one run's path "
        "(fitting.estimators.sim_fit)",
        fit_sim,
    ),
}


@dataclass(frozen=True)
class LawFit:
    """A pooled law fitted to the runs of one class (``fit``: the PooledFit with its
    coefficients)."""

    law: laws.LawSpec
    fit: PooledFit
    target: NDArray[np.float64]  # the class's corner, which every run of it heads for

    @property
    def coefficients(self) -> dict:
        return self.fit.coefficients

    @property
    def ci(self) -> dict:
        return self.fit.ci

    @property
    def rmse(self) -> float:
        return self.fit.rmse

    def predict(
        self, steps: Sequence[float], covariates: Any = None, p: Any = None
    ) -> NDArray[np.float64]:
        """(N, T, D): the law's paths at ``steps`` for covariates (N, D) (eq2: masking fractions
        ``p``)."""
        if covariates is None:
            raise ValueError(
                f"the {self.law.name} law predicts a run from its covariates: give "
                "covariates=(N, D), "
                "one row per run (e.g. each concept's measured signal)"
            )
        x = np.atleast_2d(np.asarray(covariates, dtype=float))
        return self.fit.predict(x, np.repeat(self.target[None], len(x), 0), steps, p)


def fit(
    name: str,
    data: Trajectory | Sequence[Trajectory],
    covariates: Any = None,
    **options: Any,
):
    """Fit the estimator ``name`` to ``data``. Without covariates: a per-run estimator (a key of
    ESTIMATORS) on one trajectory. With covariates (N, D): the law ``name`` (e.g. ``eq1``,
    ``memorize+onset``) pooled over the N runs of one class. One name, one model: ``eq1`` is Eq. 1
    fitted to a run, or Eq. 1 whose parameters are power laws of the covariates."""
    if covariates is None:
        if name in ESTIMATORS:
            if not isinstance(data, Trajectory):
                raise ValueError(f"{name} is fitted to one trajectory; got {type(data).__name__}")
            return ESTIMATORS[name].fit(data, **options)
        _law(name)  # a known law without its covariates, or an unknown name: say which
        raise ValueError(f"the {name} law is fitted to runs with covariates=(N, D), one row a run")
    spec = _law(name)
    trajectories = [data] if isinstance(data, Trajectory) else list(data)
    if len({t.label for t in trajectories}) != 1:
        raise ValueError(f"the {spec.name} law is fitted to the runs of one class; got several")
    result = fit_law(
        trajectories,
        np.atleast_2d(np.asarray(covariates, dtype=float)),
        order=spec.order,
        gate=spec.gate,
        options=spec.options,
        discrepancy=spec.discrepancy,
        **options,
    )
    return LawFit(spec, result, corner(trajectories[0]))


def _law(name: str) -> laws.LawSpec:
    """The law ``name``; ValueError listing the estimators and laws when it is neither."""
    try:
        return laws.parse(name)
    except ValueError:
        pooled = f"a law BASE[+OPTION...] with a base among {_law_bases()}"
        if name in ESTIMATORS:
            raise ValueError(
                f"{name} is fitted to one run and takes no covariates; with covariates give "
                f"{pooled}"
            ) from None
        raise ValueError(
            f"unknown estimator {name!r}; valid: {', '.join(ESTIMATORS)} (one run), or {pooled} "
            "(python -m fitting.predict --list-laws)"
        ) from None


def _law_bases() -> str:
    return ", ".join(n for n, p in laws.PARTS.items() if p.kind == laws.BASE)


def corner(traj: Trajectory) -> np.ndarray:
    """The class's corner ẑ (core.trajectory.target_of), which every run of it heads for."""
    return np.array(target_of(traj.label, traj.z.shape[1]), dtype=float)
