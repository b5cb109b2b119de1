"""The structured identity mapping on the command line: ``--preset swingby3|swingby4`` and
``--model sim1|sim2`` of ``python -m theory.simulate``, written as trajectory logs and figures.

Each simulation logs, in concept space, the output at the out-of-distribution probe x_hat (the class
whose label is all ones, e.g. ``111``) and at every training cluster's centre (one-hot labels,
``100``, ``010``, ``001``), protocol ``sim``, step = model time. Coordinate p is (W x)_p / mu_p
(theory/sim.py). The log's ``z_`` columns hold it clipped to [0, 1], as the log format requires; a
swing can overshoot, so the raw value is kept in ``raw_<concept>``, and the losses at every step in
``train_loss`` and ``ood_loss``. config.json says how often the OOD loss rose again (``ood_rises``)
and whether the training loss ever rose (``train_monotone``).

The presets are seed-tuned, as the paper's own multiple-descent examples are: from random starts
most seeds give one rise or none (docs/theory.md has the scan), so each preset names the start that
shows the phenomenon, and the scan that found it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from theory import cli, plot
from theory.cli import UsageError
from theory.sim import Task, coordinates, ood_loss, rises, sim1, sim2, train_loss
from theory.trajectory import Trajectory

SIM_MODELS = ("sim1", "sim2")
# --param names of the SIM models: default, meaning
SIM_PARAMS = {
    "mu": ((1.0, 1.5, 2.2), "cluster norms mu_p, one per concept (their number is the number of concepts s)"),
    "sigma": ((0.05,), "cluster spread sigma_p (one for all concepts, or one per concept)"),
    "d": ((0.0,), "ambient dimension, >= s (0: d = s)"),
    "scale": ((0.1,), "scale of the random start (U(0) for sim2, W(0) for sim1): entries N(0, scale^2/d)"),
    "seed": ((0.0,), "seed of the random start"),
}
MAX_DIM = 64


@dataclass(frozen=True)
class SimPreset:
    """A named SIM simulation."""

    name: str
    description: str
    model: str
    mu: tuple[float, ...]
    sigma: float
    d: int
    scale: float
    seed: int
    t_end: float
    points: int
    scan: str = ""  # how the seed was found


SIM_PRESETS = {
    "swingby3": SimPreset(
        "swingby3", "SIM two-layer model, 3 concepts (mu = 1, 1.5, 2.2): the OOD loss falls, rises twice and falls "
        "(triple descent) while the training loss falls monotonically", "sim2", (1.0, 1.5, 2.2), 0.05, 3, 0.1, 62, 25.0, 501,
        "seed 62 is the only one of seeds 0-99 with two rises at scale 0.1 (the same at 0.01 and 0.5)"),
    "swingby4": SimPreset(
        "swingby4", "SIM two-layer model, 4 concepts (mu = 1, 1.5, 2.2, 2.7): the OOD loss rises twice on its way down "
        "(no quadruple descent found)", "sim2", (1.0, 1.5, 2.2, 2.7), 0.05, 4, 0.5, 143, 25.0, 501,
        "8 of seeds 0-599 give two rises at scale 0.5, none three (a quadruple descent); seed 143 has the clearest "
        "(each rise over 10% of the loss's range)"),
}


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

    def summary(self) -> dict:
        train = self.train
        return {"run": self.run, "model": self.model, "mu": list(self.task.mu), "sigma": list(self.task.sigma),
                "d": self.task.d, "scale": self.scale, "seed": self.seed, "signal": self.task.signal[: self.task.s].tolist(),
                "ood_rises": rises(self.ood), "train_monotone": bool(np.all(np.diff(train) <= 1e-12 * max(train[0], 1)))}


def simulate(model: str, task: Task, scale: float, seed: int, t: np.ndarray, run: str = "") -> SimRun:
    """W(t) of sim1 (closed form, from W(0)) or sim2 (integrated, from U(0))."""
    start = task.initial(scale, seed)
    w = sim1(task, t, start) if model == "sim1" else sim2(task, t, start)
    return SimRun(run, task, model, scale, seed, t, w)


def labels(s: int) -> list[tuple[str, np.ndarray | None]]:
    """(class label, which cluster) for x_hat ('11..1', None) and every training cluster (one-hot)."""
    return [("1" * s, None)] + [("".join("1" if q == p else "0" for q in range(s)), p) for p in range(s)]


def trajectories(sim: SimRun) -> list[Trajectory]:
    """The log of one simulation: x_hat and every cluster centre in concept space (clipped z, raw kept)."""
    task, out = sim.task, []
    concepts = tuple(f"c{p + 1}" for p in range(task.s))
    losses = {"train_loss": tuple(f"{v:.10g}" for v in sim.train), "ood_loss": tuple(f"{v:.10g}" for v in sim.ood)}
    for label, p in labels(task.s):
        raw = coordinates(task, sim.w, task.x_hat if p is None else task.centre(p))
        extra = {f"raw_{c}": tuple(f"{v:.10g}" for v in raw[:, i]) for i, c in enumerate(concepts)} | losses
        out.append(Trajectory(sim.t, np.clip(raw, 0, 1), concepts, label, "sim", sim.seed, sim.run, extra=extra))
    return out


def figure(sims: Sequence[SimRun], path: Path, title: str) -> Path:
    """Losses over time (OOD and training), the probe's concept coordinates, and the off-diagonal entries."""
    fig, axes = plot.subplots(1, 3, figsize=(16.5, 4.6), layout="constrained")
    one = len(sims) == 1
    for k, sim in enumerate(sims):
        tag = "" if one else f" {sim.run}"
        axes[0].plot(sim.t, sim.ood, "-", color="tab:red" if one else f"C{k}", lw=1.8, label=f"OOD loss (x_hat){tag}")
        axes[0].plot(sim.t, sim.train, "--", color="k" if one else f"C{k}", lw=1.2, label=f"training loss{tag}")
    axes[0].set(yscale="log", xlabel="model time t", ylabel="loss",
                title="OOD loss: " + ", ".join(f"{s.summary()['ood_rises']} rises" for s in sims[:4]))
    axes[0].legend(fontsize=7)
    sim = sims[0]
    task = sim.task
    raw = coordinates(task, sim.w, task.x_hat)
    for p in range(task.s):
        axes[1].plot(sim.t, raw[:, p], "-", color=f"C{p}", label=f"c{p + 1} at x_hat (signal {task.signal[p]:.2f})")
        own = coordinates(task, sim.w, task.centre(p))[:, p]
        axes[1].plot(sim.t, own, ":", color=f"C{p}", lw=1)
    axes[1].axhline(1, color="0.6", lw=0.8)
    axes[1].set(xlabel="model time t", ylabel="(W x)_p / mu_p", title=f"concept coordinates{'' if one else ' of ' + sim.run}\n"
                "(dotted: at the cluster's own centre)")
    axes[1].legend(fontsize=7)
    for i, j in itertools.permutations(range(task.s), 2):
        if i < j:
            axes[2].plot(sim.t, sim.w[:, i, j], "-", lw=1.2, label=f"w{i + 1}{j + 1}")
    axes[2].set(xlabel="model time t", ylabel="off-diagonal entry", title="the swing: off-diagonal entries\ngrow, then are suppressed")
    axes[2].legend(fontsize=7, ncol=2)
    for ax in axes:
        ax.grid(alpha=0.25)
    fig.suptitle(title, fontsize=10)
    return plot.save(fig, path)


def preset_runs(name: str, t_end: float | None, points: int | None) -> tuple[list[SimRun], SimPreset]:
    """The simulation of a SIM preset (--t-end and --points override its own)."""
    p = SIM_PRESETS[name]
    t = np.linspace(0, t_end or p.t_end, points or p.points)
    return [simulate(p.model, Task(p.mu, p.sigma, p.d), p.scale, p.seed, t, run=f"seed={p.seed}")], p


def model_runs(model: str, params: Sequence[str], sweeps: Sequence[str], t: np.ndarray) -> list[SimRun]:
    """The runs of ``--model sim1|sim2`` with --param and --sweep (a sweep of several flags is their product)."""
    values = {k: list(v) for k, (v, _) in SIM_PARAMS.items()}
    for item in params:
        name, text = cli.assignment(item, "--param")
        values[_name(name, "--param")] = cli.numbers(text, "--param", name)
    swept = []
    for item in sweeps:
        name, text = cli.assignment(item, "--sweep")
        if _name(name, "--sweep") == "mu":
            raise UsageError("--sweep mu: mu is a vector (one norm per concept); set it with --param mu=1,1.5,2.2")
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
        runs.append(simulate(model, task, scale, int(seed), t, run=run))
    return runs


def _name(name: str, flag: str) -> str:
    if name not in SIM_PARAMS:
        raise UsageError(f"{flag} {name}: the SIM models have no parameter {name!r}; valid: {', '.join(SIM_PARAMS)}")
    return name


def _task(v: dict) -> Task:
    d = v["d"][0]
    if d != int(d) or d < 0 or d > MAX_DIM:
        raise UsageError(f"d={d:g}: the ambient dimension is an integer in [0, {MAX_DIM}] (0: the number of concepts)")
    try:
        return Task(tuple(v["mu"]), tuple(v["sigma"]) if len(v["sigma"]) > 1 else v["sigma"][0], int(d) or None)
    except ValueError as err:
        raise UsageError(f"--param: {err}") from None


def help_text() -> str:
    """The SIM models' parameters for --help."""
    lines = ["  sim1, sim2: the structured identity mapping (theory/sim.py): one linear layer (closed form), or the "
             "symmetric two-layer model (integrated); log: x_hat as class 11..1, the clusters one-hot"]
    for name, (default, doc) in SIM_PARAMS.items():
        lines.append(f"    {name:<9} = {','.join(f'{x:g}' for x in default):<9} {doc}")
    return "\n".join(lines)
