"""The structured identity mapping on the command line: ``--preset swingby3|swingby4`` and
``--model sim1|sim2`` of ``python -m theory.simulate``, written as trajectory logs and figures.

Each simulation logs, in concept space, the output at the out-of-distribution probe x_hat (the class
whose label is all ones, e.g. ``111``) and at every training cluster's centre (one-hot labels,
``100``, ``010``, ``001``), protocol ``sim``, step = model time. Coordinate p is (W x)_p / mu_p
(theory/models/identity_mapping.py). The log's ``z_`` columns hold it clipped to [0, 1], as the log
format requires; a swing can overshoot, so the raw value is kept in ``raw_<concept>``, and the
losses at every step in ``train_loss`` and ``ood_loss``. config.json says how often the OOD loss
rose again (``ood_rises``) and whether the training loss ever rose (``train_monotone``).

Two kinds of preset. ``swingby-fig5``, ``-fig8``, ``-fig9`` and ``-fig10`` are the settings the
swing-by paper's figures were made with (the authors' scripts: their cluster norms and spreads, the
signal squared in the flow, U(0) uniform in [0, 0.1) or [0, 0.2), t = 100 or 20 for 10,000 or 2,000
Euler steps of 0.01): one rise of the OOD loss (Fig. 5), two (triple descent, Fig. 8), three
(quadruple descent, Fig. 9), and a plateau above zero, the failure mode (Fig. 10). Each names a
start of our own generator that shows the figure's shape; docs/theory.md gives how often random
starts do, under both conventions. ``swingby3`` and ``swingby4`` follow the printed equations
(signal a, Gaussian start) and are seed-tuned: from such starts multiple descent is rare.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from core import cli
from core.cli import UsageError
from theory.models.identity_mapping import (
    SIGNALS,
    STARTS,
    Task,
    coordinates,
    learned_order,
    ood_loss,
    plateau,
    rises,
    sim1,
    train_loss,
)
from theory.cli.swingby_presets import SIM_PRESETS, SimPreset
from theory.solvers.two_layer import sim2
from core.trajectory import Trajectory

SIM_MODELS = ("sim1", "sim2")
# --param names of the SIM models: default, meaning
SIM_PARAMS = {
    "mu": (
        (1.0, 1.5, 2.2),
        "cluster norms mu_p, one per concept (their number is the number of concepts s)",
    ),
    "sigma": ((0.05,), "cluster spread sigma_p (one for all concepts, or one per concept)"),
    "d": ((0.0,), "ambient dimension, >= s (0: d = s)"),
    "scale": (
        (0.1,),
        "scale of the random start (U(0) for sim2, W(0) for sim1): entries N(0, scale^2/d)",
    ),
    "seed": ((0.0,), "seed of the random start"),
}
# --param names that take a word, not numbers: choices (the default first), meaning
SIM_CHOICES = {
    "signal": (
        SIGNALS,
        "the flow's rates: a = mu^2/s + sigma^2 (the printed equations) or a2 = a^2 (the "
        "authors' scripts)",
    ),
    "start": (
        STARTS,
        "U(0): gaussian N(0, scale^2/d), or uniform-positive in [0, scale) (the authors' scripts)",
    ),
}
MAX_DIM = 64


@dataclass
class SimRun:
    """One SIM simulation: its settings, W(t), and the losses."""

    run: str
    task: Task
    model: str
    scale: float
    seed: int
    t: np.ndarray
    w: np.ndarray = field(repr=False)

    @property
    def train(self) -> np.ndarray:
        return train_loss(self.task, self.w)

    @property
    def ood(self) -> np.ndarray:
        return ood_loss(self.task, self.w)

    signal: str = "a"
    start: str = "gaussian"

    def summary(self) -> dict:
        train, ood = self.train, self.ood
        return {
            "run": self.run,
            "model": self.model,
            "mu": list(self.task.mu),
            "sigma": list(self.task.sigma),
            "d": self.task.d,
            "scale": self.scale,
            "seed": self.seed,
            "signal": self.task.signal[: self.task.s].tolist(),
            "rates": self.signal,
            "start": self.start,
            "ood_rises": rises(ood),
            "ood_plateau": plateau(self.t, ood),
            "ood_final": float(ood[-1]),
            "learned_order": learned_order(self.t, self.w, self.task.s),
            "train_monotone": bool(np.all(np.diff(train) <= 1e-12 * max(train[0], 1))),
        }


def simulate(
    model: str,
    task: Task,
    scale: float,
    seed: int,
    t: np.ndarray,
    run: str = "",
    *,
    signal: str = "a",
    start: str = "gaussian",
) -> SimRun:
    """W(t) of sim1 (closed form, from W(0)) or sim2 (integrated, from U(0)), under the given
    conventions."""
    first = task.initial(scale, seed, start)
    w = (
        sim1(task, t, first, signal=signal)
        if model == "sim1"
        else sim2(task, t, first, signal=signal)
    )
    return SimRun(run, task, model, scale, seed, t, w, signal, start)


def labels(s: int) -> list[tuple[str, np.ndarray | None]]:
    """(class label, which cluster) for x_hat ('11..1', None) and every training cluster
    (one-hot)."""
    return [("1" * s, None)] + [
        ("".join("1" if q == p else "0" for q in range(s)), p) for p in range(s)
    ]


def trajectories(sim: SimRun) -> list[Trajectory]:
    """The log of one simulation: x_hat and every cluster centre in concept space (clipped z, raw
    kept)."""
    task, out = sim.task, []
    concepts = tuple(f"c{p + 1}" for p in range(task.s))
    losses = {
        "train_loss": tuple(f"{v:.10g}" for v in sim.train),
        "ood_loss": tuple(f"{v:.10g}" for v in sim.ood),
    }
    for label, p in labels(task.s):
        raw = coordinates(task, sim.w, task.x_hat if p is None else task.centre(p))
        extra = {
            f"raw_{c}": tuple(f"{v:.10g}" for v in raw[:, i]) for i, c in enumerate(concepts)
        } | losses
        out.append(
            Trajectory(
                sim.t, np.clip(raw, 0, 1), concepts, label, "sim", sim.seed, sim.run, extra=extra
            )
        )
    return out


def preset_runs(
    name: str, t_end: float | None, points: int | None
) -> tuple[list[SimRun], SimPreset]:
    """The simulation of a SIM preset (--t-end and --points override its own)."""
    p = SIM_PRESETS[name]
    end, n = t_end or p.t_end, points or p.points
    # long runs change fastest early: their output times are spaced evenly to t = 1, then
    # logarithmically
    t = (
        np.linspace(0, end, n)
        if end < 50
        else np.unique(np.r_[np.linspace(0, 1, n // 5), np.geomspace(1, end, n - n // 5)])
    )
    return [
        simulate(
            p.model,
            Task(p.mu, p.sigma, p.d),
            p.scale,
            p.seed,
            t,
            run=f"seed={p.seed}",
            signal=p.signal,
            start=p.start,
        )
    ], p


def model_runs(
    model: str, params: Sequence[str], sweeps: Sequence[str], t: np.ndarray
) -> list[SimRun]:
    """The runs of ``--model sim1|sim2`` with --param and --sweep (a sweep of several flags is their
    product)."""
    words, settings = model_settings(model, params, sweeps)
    return [
        simulate(model, task, scale, seed, t, run=run, **words)
        for run, task, scale, seed in settings
    ]


def model_settings(
    model: str, params: Sequence[str], sweeps: Sequence[str]
) -> tuple[dict[str, str], list[tuple]]:
    """``--model sim1|sim2``'s --param and --sweep, checked: the word choices, and per run (name,
    task, scale, seed)."""
    values = {k: list(v) for k, (v, _) in SIM_PARAMS.items()}
    words = {k: choices[0] for k, (choices, _) in SIM_CHOICES.items()}
    for item in params:
        name, text = cli.assignment(item, "--param")
        if name in SIM_CHOICES:
            if text not in SIM_CHOICES[name][0]:
                raise UsageError(f"--param {name}={text}: valid: {', '.join(SIM_CHOICES[name][0])}")
            words[name] = text
            continue
        values[_name(name, "--param")] = cli.numbers(text, "--param", name)
    swept = []
    for item in sweeps:
        name, text = cli.assignment(item, "--sweep")
        if _name(name, "--sweep") == "mu":
            raise UsageError(
                "--sweep mu: mu is a vector (one norm per concept); set it with --param "
                "mu=1,1.5,2.2"
            )
        swept.append((name, cli.numbers(text, "--sweep", name)))
    runs = []
    for combo in itertools.product(*(v for _, v in swept)) or [()]:
        v = dict(values) | {name: [x] for (name, _), x in zip(swept, combo)}
        task = _task(v)
        scale, seed = v["scale"][0], v["seed"][0]
        if not (np.isfinite(scale) and scale >= 0):
            raise UsageError(f"scale={scale}: the initial scale must be finite and >= 0")
        if seed != int(seed) or not 0 <= seed < 2**32:
            raise UsageError(f"seed={seed:g}: a seed is an integer in [0, 2**32)")
        run = ",".join(f"{name}={x:g}" for (name, _), x in zip(swept, combo)) or model
        runs.append((run, task, scale, int(seed)))
    return words, runs


def _name(name: str, flag: str) -> str:
    if name not in SIM_PARAMS:
        valid = ", ".join([*SIM_PARAMS, *SIM_CHOICES])
        hint = (
            f" ({name} takes a word: --param {name}=WORD, not a sweep)"
            if name in SIM_CHOICES
            else ""
        )
        raise UsageError(
            f"{flag} {name}: the SIM models have no parameter {name!r} to give numbers to; "
            f"valid: {valid}{hint}"
        )
    return name


def _task(v: dict) -> Task:
    d = v["d"][0]
    if d != int(d) or d < 0 or d > MAX_DIM:
        raise UsageError(
            f"d={d:g}: the ambient dimension is an integer in [0, {MAX_DIM}] (0: the number of "
            "concepts)"
        )
    try:
        return Task(
            tuple(v["mu"]),
            tuple(v["sigma"]) if len(v["sigma"]) > 1 else v["sigma"][0],
            int(d) or None,
        )
    except ValueError as err:
        raise UsageError(f"--param: {err}") from None


def help_text() -> str:
    """The SIM models' parameters for --help."""
    lines = [
        "  sim1, sim2: the structured identity mapping (theory/models/identity_mapping.py): one "
        "linear layer (closed form), or the "
        "symmetric two-layer model (integrated); log: x_hat as class 11..1, the clusters one-hot"
    ]
    for name, (default, doc) in SIM_PARAMS.items():
        lines.append(f"    {name:<9} = {','.join(f'{x:g}' for x in default):<9} {doc}")
    for name, (choices, doc) in SIM_CHOICES.items():
        lines.append(f"    {name:<9} = {choices[0]:<9} {doc}")
    return "\n".join(lines)
