"""A pooled law's discrepancy: the part of the training runs' paths the toy model cannot draw, added
to its predictions (the model discrepancy of computer-model calibration, Kennedy and O'Hagan 2001).

Each training run's residual r(step) = observed − law is taken onto the union of the logged steps
(linear in step between its located points). Two kinds:

- ``mean``: δ(step), the mean residual over the training runs (each run once, held at its end values
  beyond its first and last located point), the same for every run: the training runs' mean path,
  plus the law's prediction of how this run differs from their average. All that depends on the
  covariates comes from the law.
- ``local``: δ(step; covariates), the residuals of the training runs nearest in covariate space,
  found as the baselines find their paths (fitting.estimators.baselines: seeds at one covariate
  point averaged where they were located, linear interpolation between the points that bracket the
  new run, the nearest point outside the range; at a step where those runs have no reading, the mean
  residual stands in). Inside the training range this is the interpolation of the training runs'
  paths, corrected by the law's curvature between them; outside it, the nearest level's path moved
  by the law's predicted change from that level. The law carries how runs differ; the runs carry the
  shape the law cannot draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from fitting.estimators import baselines

KINDS = ("mean", "local")


def features(x: NDArray, p: NDArray | None = None) -> NDArray:
    """(N, F) the feature space runs are compared in: the log covariates (N, D), plus the masking
    fraction (N,) of an eq2 sweep."""
    ell = np.log(np.atleast_2d(np.asarray(x, dtype=float)))
    return ell if p is None else np.column_stack([ell, np.atleast_1d(np.asarray(p, dtype=float))])


def on_grid(grid: NDArray, steps: NDArray, values: NDArray) -> NDArray:
    """(G, D) ``values`` (T, D) given at ``steps`` (T,), linearly interpolated at ``grid`` (held
    constant beyond the first and last step)."""
    return np.stack([np.interp(grid, steps, values[:, i]) for i in range(values.shape[1])], axis=1)


@dataclass(frozen=True)
class Discrepancy:
    """The training runs' residuals on one grid, and how a prediction draws on them.

    Attributes:
        kind: ``mean`` or ``local`` (module docstring).
        steps: (T,) the grid.
        features: (N, F) the training runs' features (:func:`features`).
        residuals: (N, T, D) each training run's residual (observed − law) on the grid, held at its
        end values
            beyond its first and last located step.
        runs: the training runs' names.
        located: (N, T) where each run's residual is a reading, between its first and last located
        step
            (None: everywhere); ``local`` averages and interpolates readings only.
    """

    kind: str
    steps: NDArray
    features: NDArray
    residuals: NDArray
    runs: tuple[str, ...]
    located: NDArray | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown discrepancy {self.kind!r}; valid: {', '.join(KINDS)}")
        if self.residuals.shape[:2] != (len(self.features), len(self.steps)) or len(
            self.runs
        ) != len(self.features):
            raise ValueError(
                f"residuals {self.residuals.shape} do not match {len(self.features)} runs x "
                f"{len(self.steps)} steps"
            )
        if self.located is not None and self.located.shape != self.residuals.shape[:2]:
            raise ValueError(
                f"located {self.located.shape} does not match the residuals "
                f"{self.residuals.shape[:2]}"
            )

    @cached_property
    def mean(self) -> NDArray:
        """(T, D) the training runs' mean residual."""
        return self.residuals.mean(axis=0)

    @cached_property
    def references(self) -> list[baselines.Reference]:
        readings = (
            self.residuals
            if self.located is None
            else np.where(self.located[..., None], self.residuals, np.nan)
        )
        return baselines.group(readings, self.features, self.runs)

    def at(self, feature: NDArray, steps: NDArray) -> tuple[NDArray, str, tuple[str, ...]]:
        """(δ (S, D) at ``steps``, how (``mean``, ``interpolation`` or ``nearest``), the training
        runs it came from) for a run with the features ``feature`` (F,)."""
        if self.kind == "mean":
            delta, how, runs = self.mean, "mean", self.runs
        else:
            delta, runs, _ = baselines.interpolation(self.references, feature)
            how = "interpolation"
            if delta is None:
                (delta, runs), how = baselines.nearest(self.references, feature), "nearest"
            delta = np.where(np.isnan(delta), self.mean, delta)
        return on_grid(np.asarray(steps, dtype=float), self.steps, delta), how, tuple(runs)


def run_residuals(data, resid: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """(kept (N,) bool, residuals (K, T, D), located (K, T) bool): each run's residuals at its
    located steps (flattened as :meth:`fitting.estimators.pooled.Data.at` lays them out) on the
    union grid ``data.steps``, held constant beyond its first and last, and where the grid lies
    between those; runs with no located point are not kept."""
    kept, out, located, start = [], [], [], 0
    for idx, yr in zip(data.index, data.y):
        r = resid[start : start + yr.size].reshape(yr.shape)
        start += yr.size
        kept.append(len(idx) > 0)
        if len(idx):
            out.append(on_grid(data.steps, data.steps[idx], r))
            located.append((data.steps >= data.steps[idx[0]]) & (data.steps <= data.steps[idx[-1]]))
    return np.array(kept), np.stack(out), np.stack(located)
