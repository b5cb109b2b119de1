"""The baselines a pooled toy model must beat to be worth anything: predict a run from the observed
trajectories of the training runs alone, with no model.

Both work in a feature space the caller gives: the log covariates (fitting.predict), plus the
masking fraction for an eq2 sweep.

- ``interpolation``: linear interpolation, in feature space, between the training runs that
  bracket the new run (seeds at the same covariates averaged first). The training covariates often
  lie close to a curve (a Δcolor sweep moves both concepts' measured signals), so interpolation runs
  along their principal directions (those with at least 25% of the largest spread); a run outside
  the training range, or off those directions, gets no interpolation: it is an extrapolation.
- ``nearest``: the training run nearest in feature space (used everywhere, outside the range too).
- ``linear``: the straight line through the two training points nearest along the one swept
  direction (the first principal direction of the training features), read at the new run's
  position: interpolation between them inside the range, extrapolation outside it.
- ``trend``: the nearest training point's path plus, at each step, the least-squares slope of every
  training point's path along the swept direction times the distance to the new run.

``linear`` and ``trend`` need the training points to lie along one direction (a one-covariate
sweep); both are clipped to [0, 1], where every coordinate lives.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from core.trajectory import Trajectory

RANK_TOL = (
    0.25  # principal directions with less spread than this fraction of the largest are ignored
)


@dataclass(frozen=True)
class Reference:
    """The training runs at one covariate point: their mean path at the requested steps."""

    ell: NDArray  # (F,) features (log covariates, ...)
    path: NDArray  # (T, D), NaN where no run was located
    runs: tuple[str, ...]


def resample(traj: Trajectory, steps: NDArray) -> NDArray:
    """A trajectory's located points at other steps (linear in step; NaN outside its located
    range)."""
    located = traj.with_points()
    out = np.full((len(steps), traj.z.shape[1]), np.nan)
    if located.step.size == 0:
        return out
    s = np.asarray(located.step, dtype=float)
    inside = (steps >= s[0]) & (steps <= s[-1])
    for i in range(traj.z.shape[1]):
        out[inside, i] = np.interp(steps[inside], s, located.z[:, i])
    return out


def references(
    trajectories: Sequence[Trajectory], features: NDArray, steps: NDArray
) -> list[Reference]:
    """Training runs grouped by features (equal up to 1e-9), each group's mean path at ``steps``."""
    paths = (
        np.stack([resample(t, steps) for t in trajectories])
        if len(trajectories)
        else np.empty((0, len(steps), 0))
    )
    return group(paths, features, tuple(t.run for t in trajectories))


def group(paths: NDArray, features: NDArray, runs: Sequence[str]) -> list[Reference]:
    """Paths (N, T, D) grouped by their runs' features (N, F) (equal up to 1e-9): each group's mean
    path (NaN only where none of its runs has a value)."""
    ell = np.asarray(features, dtype=float)
    groups: dict[tuple, list[int]] = {}
    for r, row in enumerate(ell):
        groups.setdefault(tuple(np.round(row, 9)), []).append(r)
    out = []
    for key, rows in groups.items():
        # an all-NaN column (no run located there) is a legitimate NaN
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(paths[rows], axis=0)
        out.append(Reference(np.array(key), mean, tuple(runs[r] for r in rows)))
    return out


def _directions(refs: Sequence[Reference]) -> tuple[NDArray, NDArray, NDArray] | str:
    """The training points' features (K, F), their centre, and their principal directions (those
    with at least RANK_TOL of the largest spread, (rank, F)); or why there are none."""
    if len(refs) < 2:
        return "fewer than two distinct training covariates"
    ell = np.stack([r.ell for r in refs])
    centre = ell.mean(axis=0)
    _, sv, vt = np.linalg.svd(ell - centre, full_matrices=False)
    rank = int(np.sum(sv > RANK_TOL * sv[0])) if sv[0] > 0 else 0
    if rank == 0:
        return "the training runs share one covariate point"
    return ell, centre, vt[:rank]


def interpolation(
    refs: Sequence[Reference], f_new: NDArray
) -> tuple[NDArray | None, tuple[str, ...], str | None]:
    """(path, runs used, why not): the linear interpolation at the features ``f_new``, or None with
    the reason."""
    got = _directions(refs)
    if isinstance(got, str):
        return None, (), got
    ell, centre, basis = got
    rank = basis.shape[0]
    coords = (ell - centre) @ basis.T
    f_new = np.asarray(f_new, dtype=float)
    q = (f_new - centre) @ basis.T
    off = np.linalg.norm((f_new - centre) - q @ basis)
    spread = np.linalg.norm((ell - centre) - coords @ basis, axis=1).max()
    if off > 1.5 * spread + 1e-9:
        return None, (), "off the directions the training covariates span (an extrapolation)"
    if rank == 1:
        c = coords[:, 0]
        order = np.argsort(c)
        if not c[order[0]] - 1e-12 <= q[0] <= c[order[-1]] + 1e-12:
            return None, (), "outside the training range (an extrapolation)"
        j = int(np.clip(np.searchsorted(c[order], q[0]), 1, len(order) - 1))
        a, b = order[j - 1], order[j]
        w = 0.0 if c[b] == c[a] else (q[0] - c[a]) / (c[b] - c[a])
        return (1 - w) * refs[a].path + w * refs[b].path, refs[a].runs + refs[b].runs, None
    from scipy.spatial import Delaunay

    tri = Delaunay(coords)
    simplex = int(tri.find_simplex(q))
    if simplex < 0:
        return None, (), "outside the training range (an extrapolation)"
    vertices = tri.simplices[simplex]
    t = tri.transform[simplex]
    w = t[:rank] @ (q - t[rank])
    weights = np.append(w, 1 - w.sum())
    path = sum(wi * refs[v].path for wi, v in zip(weights, vertices))
    return path, sum((refs[v].runs for v in vertices), ()), None


def nearest(refs: Sequence[Reference], f_new: NDArray) -> tuple[NDArray, tuple[str, ...]]:
    """(path, runs): the training point nearest to the features ``f_new``."""
    ell = np.asarray(f_new, dtype=float)
    i = int(np.argmin([np.linalg.norm(r.ell - ell) for r in refs]))
    return refs[i].path, refs[i].runs


def _along(refs: Sequence[Reference], f_new: NDArray) -> tuple[NDArray, float] | str:
    """The training points' and the new run's coordinates along the first principal direction of the
    training features, or why there is none (fewer than two points, or spread over more
    directions)."""
    got = _directions(refs)
    if isinstance(got, str):
        return got
    ell, centre, basis = got
    if basis.shape[0] > 1:
        return "the training covariates spread over more than one direction"
    return (ell - centre) @ basis[0], float((np.asarray(f_new, dtype=float) - centre) @ basis[0])


def linear(
    refs: Sequence[Reference], f_new: NDArray
) -> tuple[NDArray | None, tuple[str, ...], str | None]:
    """(path, runs used, why not): the line through the two training points nearest along the swept
    direction, at the new run's position (clipped to [0, 1])."""
    got = _along(refs, f_new)
    if isinstance(got, str):
        return None, (), got
    c, q = got
    a, b = np.argsort(np.abs(c - q), kind="stable")[:2]
    w = (q - c[a]) / (c[b] - c[a])
    path = np.clip(refs[a].path + w * (refs[b].path - refs[a].path), 0.0, 1.0)
    return path, refs[a].runs + refs[b].runs, None


def trend(
    refs: Sequence[Reference], f_new: NDArray
) -> tuple[NDArray | None, tuple[str, ...], str | None]:
    """(path, runs used, why not): the nearest training point's path plus, per step and concept, the
    least-squares slope of the training points' paths along the swept direction (those with a value
    there, at least two) times the new run's distance from it (clipped to [0, 1])."""
    got = _along(refs, f_new)
    if isinstance(got, str):
        return None, (), got
    c, q = got
    paths = np.stack([r.path for r in refs])  # (K, T, D)
    known = np.isfinite(paths)
    n = known.sum(axis=0)
    cc = np.where(known, c[:, None, None], 0.0)
    mean_c = cc.sum(axis=0) / np.maximum(n, 1)
    mean_p = np.where(known, paths, 0.0).sum(axis=0) / np.maximum(n, 1)
    dc = np.where(known, c[:, None, None] - mean_c, 0.0)
    dp = np.where(known, paths - mean_p, 0.0)
    spread = (dc**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where((n >= 2) & (spread > 0), (dc * dp).sum(axis=0) / spread, np.nan)
    i = int(np.argmin(np.abs(c - q)))
    path = np.clip(refs[i].path + (q - c[i]) * slope, 0.0, 1.0)
    return path, tuple(run for r in refs for run in r.runs), None
