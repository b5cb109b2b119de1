"""The covariate-to-parameter law of a pooled fit (:mod:`fitting.estimators.pooled`): each run's
toy-model parameters as a function of its covariates, with coefficients shared by all runs.

The law (eq1, Park et al. Eq. 1), for run r and concept i with covariate x_ri > 0 (its measured
concept signal by default) and ℓ_ri = log(x_ri / x_ref) (x_ref: the geometric mean over the training
runs, so the intercepts are the values at a typical signal):

    λ_ri        = λ_ref · exp(b_lam · ℓ_ri)            speed: a power of the signal (the
                                                       theory: ∝ signal)
    t_switch_ri = t_ref · exp(b_t · ℓ_ri)              the switch comes earlier for a stronger
                                                       signal (b_t < 0)
    s_ri        = σ(γ · (ℓ_ri − max_{j≠i} ℓ_rj))       ≈1 for the stronger concept, ≈0 for
                                                       the weaker
    z_bias_ri   = ẑ_i + (1 − 2 ẑ_i) · m · (1 − s_ri)   the bias: toward the training class of
                                                       the stronger concept (the weaker concept
                                                       starts at its opposite value, m = 1
                                                       fully), none for the stronger one
    k, z0_i     shared by every run

with ẑ the class's corner (class 11: (1, 1)). Coefficients: ``lam_ref`` (1/step), ``b_lam``,
``t_ref`` (steps), ``b_t``, ``m``, ``gamma``, ``k`` (1/step), ``z0`` (per concept). Time is
normalized by the last logged step internally (the law is invariant to the time unit).

With ``compete``, one more shared coefficient ``c_lam``: a concept's speed also grows with its
signal's lead over the strongest other concept, λ_ri = λ_ref · exp(b_lam · ℓ_ri + c_lam · (ℓ_ri −
max_{j≠i} ℓ_rj)): concepts compete for the model's capacity, so a stronger color slows size down
even where size's own signal grows (as it does on the renders of the Δcolor sweep, where size is
learned later at larger Δcolor).

With ``onset``, one more shared coefficient ``t_on`` (steps): eq1's clock starts at t_on, every run
waiting at z0 until then (t_switch counts from it). A real run draws nothing the probe can follow
for its first few hundred steps, then its concepts rise as sigmoids, not as eq1's exponentials from
step 0.

With ``gate="state"`` (the coupled model, :func:`theory.models.paper.coupled`; order
``target-first``) no clock times the switch: concept i heads for ẑ_i until the other concepts' mean
progress 1 − (z_j − ẑ_j)² passes ``theta`` (sharpness ``kappa``), then settles into its bias. The
two shared coefficients replace ``t_ref``, ``b_t`` and ``k``: when a concept memorizes follows from
how fast the others are learned (on the Δcolor sweep, color falls back as size rises, later where
size is slower), not from a power law of its own signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from fitting.estimators.laws import GATES, OPTION, ORDERS, PARTS, THETA_ORDER, Runs, Term
from fitting.estimators.laws import base_terms, options_of
from theory.models.paper import coupled, eq1


@dataclass(frozen=True)
class Law:
    """The covariate-to-parameter law, evaluated in normalized time (u = step / scale): its base's
    terms (:func:`fitting.estimators.laws.base_terms`: the speed, eq1's clock-timed switch (``gate``
    ``time``) or the coupled model's switch thrown by the other concepts' progress (``state``), the
    bias, the start ``z0``, and with ``masked`` (eq2, Sec. 5) concept ``masked``'s target shifted by
    each run's masking fraction p, ẑ(p) = ẑ (1 − β p)), then its ``options``' terms
    (:data:`fitting.estimators.laws.PARTS`). θ holds :attr:`names` in order: each term's
    coefficients."""

    d: int
    scale: float
    x_ref: float
    masked: int | None = None
    order: str = "bias-first"
    gate: str = "time"
    options: tuple[str, ...] = ()

    def __post_init__(self):
        if self.order not in ORDERS:
            raise ValueError(f"unknown order {self.order!r}; valid: {', '.join(ORDERS)}")
        if self.gate not in GATES:
            raise ValueError(f"unknown gate {self.gate!r}; valid: {', '.join(GATES)}")
        valid = [n for n, p in PARTS.items() if p.kind == OPTION]
        unknown = [o for o in self.options if o not in valid]
        if unknown:
            raise ValueError(f"unknown option {unknown[0]!r}; valid: {', '.join(valid)}")
        if self.masked is not None and (self.order != "bias-first" or self.gate != "time"):
            raise ValueError(
                "eq2's shifted target is the target after eq1's switch: it needs order "
                "'bias-first' and "
                "the clock-timed gate"
            )
        if self.gate == "state" and self.order != "target-first":
            raise ValueError(
                "the coupled model heads for the target first and memorizes after the switch: "
                "its law "
                "needs order 'target-first'"
            )
        if self.gate == "state" and self.d < 2:
            raise ValueError(
                "the coupled model times each concept's switch by the others: it needs at least "
                "2 concepts"
            )

    @cached_property
    def terms(self) -> tuple[Term, ...]:
        options = tuple(PARTS[o].term() for o in options_of(self.options))
        return base_terms(self.gate, self.masked is not None) + options

    @cached_property
    def coefficients(self) -> dict[str, tuple[float, float, str]]:
        """name -> (low, high, unit) of θ's entries, every term's, in θ's order
        (:data:`THETA_ORDER`)."""
        owned = {name: c for term in self.terms for name, c in term.coefficients.items()}
        rank = {name: i for i, name in enumerate(THETA_ORDER)}
        return dict(sorted(owned.items(), key=lambda kv: rank.get(kv[0], len(rank))))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.coefficients)

    @cached_property
    def slots(self) -> dict[str, slice]:
        """name -> its entries of θ."""
        out, i = {}, 0
        for name in self.names:
            width = self.d if name == "z0" else 1
            out[name], i = slice(i, i + width), i + width
        return out

    @property
    def size(self) -> int:
        return sum(s.stop - s.start for s in self.slots.values())

    @property
    def landscape(self):
        """The model the law's parameters drive: eq1, or the coupled model (``gate`` ``state``)."""
        return eq1(self.d) if self.gate == "time" else coupled(self.d)

    def bounds(self) -> tuple[NDArray, NDArray]:
        lo, hi = np.empty(self.size), np.empty(self.size)
        for name, where in self.slots.items():
            lo[where], hi[where] = self.coefficients[name][:2]
        return lo, hi

    def pack(self, values: dict) -> NDArray:
        """θ (P,) from its entries by name (θ's own scale: logs where the unit says so)."""
        theta = np.empty(self.size)
        for name, where in self.slots.items():
            theta[where] = values[name]
        return theta

    def params(
        self, theta: NDArray, x: NDArray, target: NDArray, p: NDArray | None = None
    ) -> dict[str, NDArray]:
        """The model's parameters (normalized time) for covariates ``x`` (N, D), targets (N, D) and
        masking fractions ``p`` (N,) (eq2 only); θ of shape (B, P). Returns arrays batched over B x
        N (B-major)."""
        theta = np.atleast_2d(theta)
        b, n = theta.shape[0], x.shape[0]
        ell = np.log(x / self.x_ref)[None]  # (1, N, D)
        others = (
            np.stack([np.delete(ell, i, axis=2).max(axis=2) for i in range(self.d)], axis=2)
            if self.d > 1
            else ell
        )
        runs = Runs(ell, ell - others, target, p)

        def col(name):  # (B, 1, 1), z0: (B, 1, D)
            return theta[:, self.slots[name]][:, None]

        out = {"z_target": np.repeat(target[None], b, axis=0)}
        for term in self.terms:
            term.apply(self, col, runs, out)
        out["lam"] = np.exp(out.pop("log_lam"))
        out["z_bias"] = np.clip(out["z_bias"], 0, 1)

        def flat(a):
            return np.broadcast_to(a, (b, n, a.shape[2])).reshape(b * n, a.shape[2])

        return {name: flat(value) for name, value in out.items()}

    def ordered(self, params: dict[str, NDArray]) -> dict[str, NDArray]:
        """:meth:`params` as the model's integrator takes them. eq1's: before the switch ``z_bias``,
        after it ``z_target``; ``target-first`` exchanges the two (generalize first and memorize
        later). The coupled model's wells are named for what they are (the target before its switch,
        the bias after)."""
        if self.order == "bias-first" or self.gate == "state":
            return params
        return params | {"z_bias": params["z_target"], "z_target": params["z_bias"]}

    def natural(self, theta: NDArray) -> dict[str, float | list[float]]:
        """θ (P,) -> the coefficients in the log's units (steps)."""
        out = {}
        for name, where in self.slots.items():
            value, unit = np.asarray(theta[where], dtype=float), self.coefficients[name][2]
            value = {
                "rate": lambda v: np.exp(v) / self.scale,
                "time": lambda v: np.exp(v) * self.scale,
                "log": np.exp,
                "": lambda v: v,
            }[unit](value)
            out[name] = [float(v) for v in value] if name == "z0" else float(value[0])
        return out

    def theta(self, coefs: dict) -> NDArray:
        """The inverse of :meth:`natural`."""
        inverse = {
            "rate": lambda v: np.log(v * self.scale),
            "time": lambda v: np.log(v / self.scale),
            "log": np.log,
            "": lambda v: v,
        }
        return self.pack(
            {
                name: np.broadcast_to(
                    inverse[self.coefficients[name][2]](np.asarray(coefs[name], dtype=float)),
                    (self.slots[name].stop - self.slots[name].start,),
                )
                for name in self.names
            }
        )

    def run_params(
        self, theta: NDArray, x: NDArray, target: NDArray, p: NDArray | None = None
    ) -> list[dict]:
        """Per run, the model's parameters in steps (for reports and figures); with an onset,
        ``t_switch`` counts from ``t_on``."""
        v = self.params(theta, x, target, p)

        def common(r: int) -> dict:
            return {
                "lam": list(v["lam"][r] / self.scale),
                "z_bias": list(v["z_bias"][r]),
                "z_target": list(v["z_target"][r]),
            }

        if self.gate == "time":
            rows = [
                common(r)
                | {
                    "t_switch": list(v["t_switch"][r] * self.scale),
                    "k": float(v["k"][r, 0] / self.scale),
                    "order": self.order,
                }
                for r in range(x.shape[0])
            ]
        else:
            rows = [
                common(r)
                | {
                    "kappa": float(v["kappa"][r, 0]),
                    "theta": float(v["theta"][r, 0]),
                    "gate": "state",
                }
                for r in range(x.shape[0])
            ]
        return [
            row | ({"t_on": self.natural(theta)["t_on"]} if "onset" in self.options else {})
            for row in rows
        ]
