"""The per-run toy models' parameters (:mod:`fitting.estimators.model_fit`): each model's blocks of
θ with their units and bounds, the names a fit record lists, and a fitted θ reported in the log's
units with each concept's switch verdict (learned directly, outside the logged steps, not
identified, or switched)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BIAS_MIN = 0.1  # |z̃_i - ẑ_i| below this: concept i never switches, t_switch_i not identifiable


@dataclass(frozen=True)
class Block:
    """A named block of the parameter vector θ: ``kind`` says how θ maps to the model's units.

    time: θ is a normalized time (u); rate: θ = log of a rate per normalized time; log: θ = log of a
    dimensionless value; unit: θ is the value itself, in [0, 1]. A ``per_concept`` block has one
    entry per concept (reported as a list), any other block one value.
    """

    name: str
    per_concept: bool
    kind: str
    lo: float
    hi: float

    def size(self, d: int) -> int:
        """The block's length for ``d`` concepts."""
        return d if self.per_concept else 1


def blocks(model: str) -> list[Block]:
    """The fitted parameters of a model, with how each is normalized and its bounds (normalized
    units)."""
    if model == "notebook":
        return [
            Block("a", False, "log", np.log(0.05), np.log(20)),
            Block("s", False, "rate", np.log(0.05), np.log(1e4)),
            Block("k", False, "rate", np.log(0.05), np.log(1e4)),
            Block("t0", False, "time", -0.5, 1.5),
            Block("z0", True, "unit", 0.0, 1.0),
        ]
    blocks = [
        Block("t_switch", True, "time", -0.5, 1.5),
        Block("k", False, "rate", np.log(2.0), np.log(2000.0)),
        Block("lam", True, "rate", np.log(0.2), np.log(2000.0)),
        Block("z_bias", True, "unit", 0.0, 1.0),
        Block("z_target", True, "unit", 0.0, 1.0),
        Block("z0", True, "unit", 0.0, 1.0),
    ]
    if model == "eq2":
        blocks.append(Block("p_beta", False, "unit", 0.0, 1.0))
    return blocks


def param_names(model: str) -> tuple[str, ...]:
    """The keys of a fit record's params: every eq1/eq2 parameter (so records of different models
    line up), then the notebook model's own."""
    names = [b.name for b in blocks("eq2")] + (
        [b.name for b in blocks("notebook")] if model == "notebook" else []
    )
    return tuple(dict.fromkeys(names))


def report(prob, theta, lo_t, hi_t):
    """(params, intervals, identifiable, switches) of a fitted θ with its interval ends (``prob``:
    the fit's :class:`fitting.estimators.model_fit.Problem`), in the log's units, each concept's
    switch with its verdict."""
    value, lo, hi = prob.natural(theta), prob.natural(lo_t), prob.natural(hi_t)
    params, intervals = {}, {}
    identifiable, reasons = [True] * prob.d, ["switched"] * prob.d
    if prob.model != "notebook":
        bias = np.abs(value["z_bias"] - value["z_target"])
        b_lo, b_hi = np.minimum(lo["z_bias"], hi["z_bias"]), np.maximum(lo["z_bias"], hi["z_bias"])
        direct = (bias < BIAS_MIN) | ((b_lo <= value["z_target"]) & (value["z_target"] <= b_hi))
        width = (hi["t_switch"] - lo["t_switch"]) / prob.span
        inside = (value["t_switch"] >= prob.s0) & (value["t_switch"] <= prob.s0 + prob.span)
        reasons = [
            "learned directly"
            if direct[i]
            else "outside"
            if not inside[i]
            else "not identified"
            if width[i] > 0.5
            else "switched"
            for i in range(prob.d)
        ]
        identifiable = [r == "switched" for r in reasons]
    for name, v in value.items():
        pairs = [
            [float(a), float(b)]
            for a, b in zip(np.minimum(lo[name], hi[name]), np.maximum(lo[name], hi[name]))
        ]
        if name in prob.fixed:
            pairs = [[float(x), float(x)] for x in v]
        if name == "t_switch":
            vals = [float(x) if ok else None for x, ok in zip(v, identifiable)]
            pairs = [pr if ok else None for pr, ok in zip(pairs, identifiable)]
        else:
            vals = [float(x) for x in v]
        scalar = not next(b for b in blocks(prob.model) if b.name == name).per_concept
        params[name] = vals[0] if scalar else vals
        intervals[name] = pairs[0] if scalar else pairs
    switches = []
    if prob.model != "notebook":
        for i, reason in enumerate(reasons):
            switches.append(
                {
                    "switched": reason == "switched",
                    "reason": reason,
                    "t_switch": params["t_switch"][i],
                    "t_switch_ci": intervals["t_switch"][i],
                    "z_bias": params["z_bias"][i],
                    "z_bias_ci": intervals["z_bias"][i],
                    "z_target": params["z_target"][i],
                }
            )
    return params, intervals, identifiable, switches
