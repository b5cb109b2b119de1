"""One pooled prediction's numbers: the law fitted to training runs, and per held-out run its path
against the baselines (interpolation, the nearest level, the mean run), the seed floor and the law's
curves, as prediction.json holds them. ``python -m fitting.predict`` is the command; figures.predict
draws what this writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.special import expit

from fitting.estimators import baselines
from fitting.estimators.curves import settled_step
from fitting.estimators.discrepancy import features
from fitting.estimators.laws import LawSpec
from fitting.estimators.model_fit import fit_model
from fitting.estimators.pooled import PooledFit, fit_law
from fitting.analyses.report import summary
from fitting.estimators.trajectory_turn import find_turn
from core.trajectory import Trajectory
from fitting.estimators.registry import corner

LEVEL = 0.8  # a concept has settled when its coordinate stays past this, toward its target


@dataclass(frozen=True)
class Setup:
    """What a pooled prediction needs besides its runs (the command line's options, or a caller's).

    ``masked`` (eq2 only): the masked concept's index, with ``shift``: run -> its masking
    fraction."""

    spec: LawSpec
    label: str = "11"
    protocol: str = "naive"
    covariate: str = "signal"
    boot: int = 50
    masked: int | None = None
    shift: Mapping[str, float] | None = None


def oriented(z: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Coordinates turned so that 1 is the target: z where the target is 1, 1 - z where it is 0."""
    return np.where(np.asarray(target) > 0.5, z, 1 - z)


def metrics(
    steps: np.ndarray,
    path: np.ndarray,
    observed: Trajectory,
    concepts: Sequence[str],
    target: np.ndarray,
) -> dict:
    """RMSE against the observed located points, settled-0.8 step per concept and turn step, of a
    (T, D) path."""
    located = _located(path, observed)
    if located.sum() < 2:
        return {"rmse": None, "settled_80": {c: None for c in concepts}, "turn": None}
    s, p = np.asarray(steps, dtype=float)[located], path[located]
    rmse = path_rmse(path, observed)
    settled = {
        c: settled_step(s, oriented(p[:, i], target[i]), LEVEL) for i, c in enumerate(concepts)
    }
    turn = find_turn(s, p, n_boot=0).step if s.size >= 5 else None
    return {"rmse": rmse, "settled_80": settled, "turn": turn}


def _located(path: np.ndarray, observed: Trajectory) -> np.ndarray:
    """Rows where the observed run was located and the (T, D) path is defined."""
    return ~observed.missing & np.all(np.isfinite(path), axis=1)


def path_rmse(path: np.ndarray, observed: Trajectory) -> float | None:
    """RMSE of a (T, D) path at the observed run's steps against its located points; None with fewer
    than 2."""
    located = _located(path, observed)
    return (
        float(np.sqrt(np.mean((path[located] - observed.z[located]) ** 2)))
        if located.sum() >= 2
        else None
    )


def paired_rmse(path: np.ndarray, other: np.ndarray, observed: Trajectory) -> float | None:
    """RMSE of ``path`` at the points where the ``other`` path (a baseline's) is defined: a paired
    comparison."""
    return path_rmse(np.where(np.isfinite(other), path, np.nan), observed)


def compare(pred: dict, obs: dict, concepts: Sequence[str]) -> dict:
    """A prediction's metrics next to the observed ones."""
    return {
        "rmse": pred["rmse"],
        "settled_80": {
            c: {"predicted": pred["settled_80"][c], "observed": obs["settled_80"][c]}
            for c in concepts
        },
        "turn": {"predicted": pred["turn"], "observed": obs["turn"]},
    }


def law_keys(spec: LawSpec) -> dict:
    """The law's name in a saved record, with the keys older readers know it by."""
    return {"model": spec.base, "law_name": spec.name}


def pooled_fit(setup: Setup, by_run: dict, x: dict, runs: list[str], ci: str = "wald") -> PooledFit:
    """The pooled law of ``setup`` fitted to ``runs``."""
    shift = setup.shift
    return fit_law(
        [by_run[r] for r in runs],
        np.stack([x[r] for r in runs]),
        ci=ci,
        n_boot=setup.boot,
        masked=setup.masked,
        p=None if shift is None else np.array([shift[r] for r in runs]),
        order=setup.spec.order,
        options=setup.spec.options,
        gate=setup.spec.gate,
        discrepancy=setup.spec.discrepancy,
    )


def law_path(fit: PooledFit, x: np.ndarray, traj: Trajectory, shift: dict | None) -> np.ndarray:
    p = None if shift is None else np.array([shift[traj.run]])
    return fit.predict(x[None], corner(traj)[None], traj.step, p)[0]


def run_parameters(
    fit: PooledFit, x: np.ndarray, target: np.ndarray, shift: dict | None, run: str
) -> dict:
    p = None if shift is None else np.array([shift[run]])
    return fit.law.run_params(fit.theta, x[None], target[None], p)[0]


def law_text(c: dict) -> str:
    switch = (
        f"t_switch = {c['t_ref']:,.0f} x (x/x_ref)^{c['b_t']:.2f}, "
        if "t_ref" in c
        else f"switch when the others' progress passes theta = {c['theta']:.2f} (sharpness kappa "
        f"= {c['kappa']:.3g}), "
    )
    return (
        f"lam = {c['lam_ref']:.3g}/step x (x/x_ref)^{c['b_lam']:.2f}, {switch}"
        f"bias depth m = {c['m']:.2f}, sharpness {c['gamma']:.2f}"
        + (f", k = {c['k']:.3g}/step" if "k" in c else "")
        + (f", target shift beta = {c['beta']:.2f}" if "beta" in c else "")
        + (f", onset t_on = {c['t_on']:,.0f}" if "t_on" in c else "")
        + (f", lead exponent c_lam = {c['c_lam']:.2f}" if "c_lam" in c else "")
    )


def discrepancy_doc(fit: PooledFit, concepts: Sequence[str]) -> dict | None:
    """The law's discrepancy: its kind, the training runs' mean residual per concept with its RMS,
    and (local) each training covariate point's residual RMS (None without one)."""
    d = fit.discrepancy
    if d is None:
        return None

    def rms(delta: np.ndarray) -> dict:
        return {c: float(np.sqrt(np.mean(delta[:, i] ** 2))) for i, c in enumerate(concepts)}

    doc = {
        "kind": d.kind,
        "steps": d.steps.tolist(),
        "delta": {c: d.mean[:, i].tolist() for i, c in enumerate(concepts)},
        "rms": rms(d.mean),
    }
    if d.kind == "local":
        doc["points"] = [{"runs": list(ref.runs), "rms": rms(ref.path)} for ref in d.references]
    return doc


def analyse(
    fit: PooledFit, by_run: dict, x: dict, train: list, held: list, concepts, setup: Setup
) -> dict:
    """prediction.json's body: the law, and per held-out run the prediction against the
    baselines."""
    ref_steps = np.unique(np.concatenate([np.asarray(by_run[r].step, dtype=float) for r in by_run]))
    shift = setup.shift
    feature = {r: features(x[r], None if shift is None else shift[r])[0] for r in by_run}
    trained = [by_run[r] for r in train]
    refs = baselines.references(trained, np.stack([feature[r] for r in train]), ref_steps)
    pooled_mean = baselines.references(trained, np.zeros((len(train), 1)), ref_steps)[0].path
    holdout = {}
    for r in held:
        traj = by_run[r]
        idx = np.searchsorted(ref_steps, np.asarray(traj.step, dtype=float))
        path = law_path(fit, x[r], traj, shift)
        obs = metrics(np.asarray(traj.step, dtype=float), traj.z, traj, concepts, corner(traj))
        holdout[r] = {
            **_scored(path, traj, concepts, obs),
            "covariates": dict(zip(concepts, x[r].tolist())),
            "parameters": run_parameters(fit, x[r], corner(traj), shift, r),
            "baselines": _baselines(
                path, traj, concepts, obs, idx, refs, feature[r], pooled_mean, train
            ),
            "seed_floor": seed_floor(by_run, feature, held, r, ref_steps, idx),
            "discrepancy": _source(fit, feature[r]),
        }
    return {
        **law_keys(setup.spec),
        "class": setup.label,
        "protocol": setup.protocol,
        "covariate": setup.covariate,
        "concepts": list(concepts),
        "law": law_doc(fit, concepts, np.stack([x[r] for r in train])),
        "train": {
            r: {
                "covariates": dict(zip(concepts, x[r].tolist())),
                "rmse": e,
                "parameters": run_parameters(fit, x[r], corner(by_run[r]), shift, r),
            }
            for r, e in zip(train, fit.per_run_rmse)
        },
        "rmse_train": fit.rmse,
        "holdout": holdout,
    }


def _scored(path: np.ndarray, traj: Trajectory, concepts: Sequence[str], obs: dict) -> dict:
    """A (T, D) path at the run's steps against the run: its RMSE, settled steps and turn, beside
    the run's own (``obs``: :func:`metrics` of the observed path)."""
    steps = np.asarray(traj.step, dtype=float)
    return compare(metrics(steps, path, traj, concepts, corner(traj)), obs, concepts)


def _baselines(
    path: np.ndarray,
    traj: Trajectory,
    concepts: Sequence[str],
    obs: dict,
    idx: np.ndarray,
    refs: list,
    feature: np.ndarray,
    pooled_mean: np.ndarray,
    train: list[str],
) -> dict:
    """The baselines for one held-out run (``idx``: its steps' rows of the reference grid), scored
    as the law's ``path`` is, with the law's RMSE at each baseline's points (``law_rmse``); those
    that need the training points in a line or around the run say whether they apply and why not."""

    def scored(candidate: np.ndarray, used) -> dict:
        return {
            **_scored(candidate[idx], traj, concepts, obs),
            "runs": list(used),
            "law_rmse": paired_rmse(path, candidate[idx], traj),
        }

    def optional(got: tuple) -> dict:
        candidate, used, why = got
        if candidate is None:
            return {"applies": False, "why_not": why, "rmse": None, "law_rmse": None}
        return {**scored(candidate, used), "applies": True, "why_not": None}

    near, near_runs = baselines.nearest(refs, feature)
    return {
        "interpolation": optional(baselines.interpolation(refs, feature)),
        "nearest": scored(near, near_runs),
        "mean": {**_scored(pooled_mean[idx], traj, concepts, obs), "runs": list(train)},
        "linear": optional(baselines.linear(refs, feature)),
        "trend": optional(baselines.trend(refs, feature)),
    }


def law_doc(fit: PooledFit, concepts: Sequence[str], x_train: np.ndarray) -> dict:
    """prediction.json's ``law``: coefficients, intervals, text, discrepancy and curves."""
    return {
        "coefficients": fit.coefficients,
        "ci": fit.ci,
        "ci_method": fit.ci_method,
        "x_ref": fit.law.x_ref,
        "text": law_text(fit.coefficients),
        "discrepancy": discrepancy_doc(fit, concepts),
        "curves": law_curves(fit, x_train),
        "success": fit.success,
        "message": fit.message,
    }


def _source(fit: PooledFit, feature: np.ndarray) -> dict | None:
    """Where a held-out run's discrepancy came from: how (mean, interpolation, nearest) and which
    training runs."""
    if fit.discrepancy is None:
        return None
    _, how, runs = fit.discrepancy.at(feature, fit.discrepancy.steps[:1])
    return {"how": how, "runs": list(runs)}


def seed_floor(
    by_run: dict, feature: dict, held: list, run: str, ref_steps: np.ndarray, idx: np.ndarray
) -> dict | None:
    """How far seeds differ, for scale (not a prediction: it reads held-out runs): the RMSE of
    ``run`` against the mean path of the other held-out runs at its covariates (``idx``: its steps'
    rows of ``ref_steps``); None without one."""
    others = [
        o for o in held if o != run and np.allclose(feature[o], feature[run], rtol=0, atol=1e-9)
    ]
    if not others:
        return None
    mean = baselines.references(
        [by_run[o] for o in others], np.stack([feature[o] for o in others]), ref_steps
    )[0].path
    rmse = path_rmse(mean[idx], by_run[run])
    return None if rmse is None else {"rmse": rmse, "runs": others}


def per_run_fits(trajs: Sequence[Trajectory]) -> dict:
    """Each training run's own eq1 fit (lam, t_switch, z_bias and the switch verdicts), for the
    figure's overlay."""
    out = {}
    for t in trajs:
        located = t.with_points()
        if located.step.size < 8:
            out[t.run] = None
            continue
        try:
            f = fit_model(located, "eq1")
        except ValueError as err:
            out[t.run] = {"error": str(err)}
            continue
        out[t.run] = {
            "lam": f.params["lam"],
            "t_switch": f.params["t_switch"],
            "z_bias": f.params["z_bias"],
            "rmse": f.rmse,
            "summary": summary(t.concepts, f.switches),
        }
    return out


def law_curves(fit: PooledFit, x_train: np.ndarray) -> dict:
    """The law's covariate-to-parameter curves, sampled for its figure (figures.predict draws them
    as they are): ``speed`` and ``switch`` against a covariate every concept shares (no lead), 100
    points from 0.7 x the smallest training covariate to 1.4 x the largest (``speed`` None under
    compete, whose speed depends on the lead too: the figure draws the training runs' own); the
    state gate's switch against the other concepts' progress; ``bias`` (the memorized bias's
    distance from the target) against one concept's log lead."""
    law, theta = fit.law, fit.theta

    # the law's parameters at covariates x, target 11, no masking (eq2)
    def at(
        x: np.ndarray,
    ) -> list[dict]:
        unmasked = None if law.masked is None else np.zeros(len(x))
        return law.run_params(theta, x, np.ones_like(x), unmasked)

    grid = np.geomspace(x_train.min() * 0.7, x_train.max() * 1.4, 100)
    rows = at(np.repeat(grid[:, None], law.d, axis=1))
    speed = (
        None
        if "compete" in law.options
        else {"x": grid.tolist(), "y": [row["lam"][0] for row in rows]}
    )
    if law.gate == "time":
        on_clock = [r.get("t_on", 0.0) + r["t_switch"][0] for r in rows]
        switch = {"gate": "time", "x": grid.tolist(), "y": on_clock}
    else:
        progress, c = np.linspace(0.0, 1.0, 200), fit.coefficients
        gate = expit(c["kappa"] * (progress - c["theta"])).tolist()
        switch = {"gate": "state", "x": progress.tolist(), "y": gate}
    lead = np.linspace(-2.5, 2.5, 200)
    x = np.full((lead.size, law.d), law.x_ref)
    x[:, 0] *= np.exp(lead)
    bias = [abs(row["z_bias"][0] - 1.0) for row in at(x)]
    return {"speed": speed, "switch": switch, "bias": {"x": lead.tolist(), "y": bias}}
