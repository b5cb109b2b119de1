"""Everything known about one trajectory, as one JSON-ready record (figures.fit draws it).

The record is one entry of ``fit.json`` (see :mod:`fitting.fit`): the model-free statistics
(threshold steps, turn point, accuracy 50% time) and the toy-model fit, with intervals.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from fitting.estimators.curves import (
    LEVELS,
    LogisticFit,
    check_spacing,
    fit_logistic,
    threshold_step,
)
from fitting.estimators.model_fit import ModelFit, fit_model
from fitting.estimators.model_params import param_names
from fitting.estimators.sim_fit import fit_sim
from fitting.estimators.trajectory_turn import Turn, find_turn
from core.trajectory import Z_PREFIX, Trajectory


SIM_PARAMS = ("a", "mu_ratio", "w0")  # sim2's record keys (fitting.estimators.sim_fit)


def analyse(
    traj: Trajectory,
    model: str,
    *,
    fix: Mapping[str, object] | None = None,
    ci: str = "wald",
    n_boot: int = 100,
    persist: int = 1,
) -> tuple[dict, ModelFit | None, Turn | None, LogisticFit | None]:
    """Fit and summarise one trajectory; returns (record, model fit, turn, accuracy fit)."""
    check_spacing(traj.step)
    # steps where something was readable
    located = traj.with_points() if not traj.missing.all() else None
    thresholds = _thresholds(traj, located, persist)
    turn = (
        find_turn(located.step, located.z)
        if located is not None and traj.z.shape[1] and located.step.size >= 5
        else None
    )
    acc = None
    if traj.accuracy is not None and np.sum(~np.isnan(traj.accuracy)) >= 5:
        acc = fit_logistic(traj.step, traj.accuracy)
    fit = _fit(located, model, fix, ci, n_boot) if located is not None and traj.z.shape[1] else None
    params, intervals = _fitted(model, fit)
    record = {
        "run": traj.run,
        "seed": traj.seed,
        "class": traj.label,
        "protocol": traj.protocol,
        "model": model if fit is not None else None,
        "params": params,
        "ci": intervals,
        "ci_method": (("wald" if model == "sim2" else ci) if fit is not None else None),
        "at_bounds": None if fit is None else fit.at_bounds,
        "rmse": None if fit is None else fit.rmse,
        "aic": None if fit is None else aic(fit, located),
        "n_params": None if fit is None else int(fit.theta.size),
        "switch_identifiable": None if fit is None else fit.identifiable,
        "switches": None
        if fit is None or not fit.switches
        else {c: sw for c, sw in zip(traj.concepts, fit.switches)},
        "summary": None
        if fit is None or not fit.switches
        else summary(traj.concepts, fit.switches),
        "fit_success": None if fit is None else fit.success,
        "turn_step": None if turn is None else turn.step,
        "turn_ci": None if turn is None or turn.ci is None else list(turn.ci),
        "turn_angle": None if turn is None else turn.angle,
        "memorization_point": None if turn is None or turn.step is None else list(turn.point),
        "threshold_steps": thresholds,
        "accuracy_t50": None if acc is None else acc.t50,
        "accuracy_t50_ci": None if acc is None or acc.t50_ci is None else list(acc.t50_ci),
        "n_points": int(traj.step.size),
    }
    return record, fit, turn, acc


def _fit(located: Trajectory, model: str, fix, ci: str, n_boot: int):
    """The toy model fitted to the located points (sim2 has nothing to fix)."""
    if model != "sim2":
        return fit_model(located, model, fix=fix, ci=ci, n_boot=n_boot)
    if fix:
        raise ValueError(
            "--fix: sim2 has no fixed parameters (its switch times come out of the dynamics)"
        )
    return fit_sim(located)


def _fitted(model: str, fit) -> tuple[dict, dict]:
    """The record's params and ci: every key of the model, null where nothing was fitted."""
    keys = SIM_PARAMS if model == "sim2" else param_names(model)
    params, intervals = dict.fromkeys(keys), dict.fromkeys(keys)
    if fit is not None:
        params.update(fit.params)
        intervals.update(fit.ci)
    return params, intervals


def _thresholds(traj: Trajectory, located: Trajectory | None, persist: int) -> dict:
    """Per level, the first step each coordinate (and the accuracy) reaches it, held for
    ``persist``."""
    thresholds = {}
    for level in LEVELS:
        row = {
            Z_PREFIX + c: None
            if located is None
            else threshold_step(located.step, located.z[:, i], level, persist=persist)
            for i, c in enumerate(traj.concepts)
        }
        if traj.accuracy is not None:
            ok = ~np.isnan(traj.accuracy)
            row["accuracy"] = threshold_step(
                traj.step[ok], traj.accuracy[ok], level, persist=persist
            )
        thresholds[f"{int(level * 100)}%"] = row
    return thresholds


def aic(fit, located: Trajectory) -> float:
    """Akaike's information criterion of a least-squares fit, n log(RSS / n) + 2 k over the located
    coordinates (lower is better; differences between models fitted to the same points are what
    count)."""
    resid = np.asarray(fit.fitted) - located.z
    n = resid.size
    return float(n * np.log(max(float(np.sum(resid**2)), 1e-300) / n) + 2 * fit.theta.size)


def summary(concepts, switches: list[dict]) -> str:
    """Which concept switched, when, and from which bias, in words (one clause per concept)."""
    clauses = []
    for c, sw in zip(concepts, switches):
        bias = f"bias {sw['z_bias']:.2f}" + (
            "" if sw["z_bias_ci"] is None else " [{:.2f}, {:.2f}]".format(*sw["z_bias_ci"])
        )
        if sw["reason"] == "switched":
            ci = (
                ""
                if sw["t_switch_ci"] is None
                else " [{}, {}]".format(*map(_step, sw["t_switch_ci"]))
            )
            clauses.append(
                f"{c} switched at step {_step(sw['t_switch'])}{ci} from {bias} to "
                f"{sw['z_target']:g}"
            )
        elif sw["reason"] == "learned directly":
            clauses.append(
                f"{c} learned directly ({bias} reaches the target {sw['z_target']:g}: no switch)"
            )
        elif sw["reason"] == "outside":
            clauses.append(f"{c}: biased ({bias}) but its switch lies outside the logged steps")
        else:
            clauses.append(
                f"{c}: biased ({bias}) but its switch time is not identified (interval wider "
                "than half the log)"
            )
    return "; ".join(clauses)


def _step(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def rounded(a) -> list:
    """A path saved for a figure, to 4 significant digits (the JSON stays small)."""
    return np.vectorize(lambda v: float(f"{v:.4g}"))(np.asarray(a, dtype=float)).tolist()


def fitted_curves(
    traj: Trajectory, fit: ModelFit | None, acc: LogisticFit | None, points: int = 200
) -> dict:
    """The fitted model's path and the accuracy sigmoid on a dense grid over the logged steps, to 4
    significant digits: what figures.fit draws (a record's ``curves``)."""
    dense = np.linspace(traj.step[0], traj.step[-1], points)
    return {
        "step": rounded(dense),
        "model": None if fit is None else fit.model,
        "z": None if fit is None else rounded(fit.predict(dense)),
        "accuracy": None if acc is None else rounded(acc.predict(dense)),
    }
