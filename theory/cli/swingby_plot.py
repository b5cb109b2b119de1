"""The figure of a structured-identity-mapping simulation (:mod:`theory.cli.swingby`): the losses
over time, the probe's concept coordinates, and the off-diagonal entries of W whose swing the model
is named for."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from core import plot
from theory.models.identity_mapping import coordinates

if TYPE_CHECKING:
    from theory.cli.swingby import SimRun


def _rises(n: int) -> str:
    return f"{n} rise" + ("" if n == 1 else "s")


def _losses(ax, sims: Sequence["SimRun"]) -> None:
    """OOD and training loss over time, one colour per simulation (red and black for one)."""
    one = len(sims) == 1
    for k, sim in enumerate(sims):
        tag = "" if one else f" {sim.run}"
        ood, train = ("tab:red", "k") if one else (f"C{k}", f"C{k}")
        ax.plot(sim.t, sim.ood, "-", color=ood, lw=1.8, label=f"OOD loss (x_hat){tag}")
        ax.plot(sim.t, sim.train, "--", color=train, lw=1.2, label=f"training loss{tag}")
    floor = 1e-10 * max(float(np.max(sim.ood)) for sim in sims)  # below: round-off on a log axis
    ax.set(
        yscale="log",
        xlabel="model time t",
        ylabel="loss",
        ylim=(floor, None),
        title="OOD loss: " + ", ".join(_rises(s.summary()["ood_rises"]) for s in sims[:4]),
    )
    ax.legend(fontsize=7)


def _coordinates(ax, sim: "SimRun", one: bool) -> None:
    """The probe's concept coordinates (solid) and each cluster's own (dotted) for the first
    simulation."""
    task = sim.task
    raw = coordinates(task, sim.w, task.x_hat)
    for p in range(task.s):
        label = f"c{p + 1} at x_hat (signal {task.signal[p]:.2f})"
        ax.plot(sim.t, raw[:, p], "-", color=f"C{p}", label=label)
        own = coordinates(task, sim.w, task.centre(p))[:, p]
        ax.plot(sim.t, own, ":", color=f"C{p}", lw=1)
    ax.axhline(1, color="0.6", lw=0.8)
    ax.set(
        xlabel="model time t",
        ylabel="(W x)_p / mu_p",
        title=f"concept coordinates{'' if one else ' of ' + sim.run}\n"
        "(dotted: at the cluster's own centre)",
    )
    ax.legend(fontsize=7)


def figure(sims: Sequence["SimRun"], path: Path, title: str) -> Path:
    """Losses over time (OOD and training), the probe's concept coordinates, and the off-diagonal
    entries."""
    fig, axes = plot.subplots(1, 3, figsize=(16.5, 4.6), layout="constrained")
    _losses(axes[0], sims)
    sim = sims[0]
    _coordinates(axes[1], sim, len(sims) == 1)
    for i, j in itertools.permutations(range(sim.task.s), 2):
        if i < j:
            axes[2].plot(sim.t, sim.w[:, i, j], "-", lw=1.2, label=f"w{i + 1}{j + 1}")
    axes[2].set(
        xlabel="model time t",
        ylabel="off-diagonal entry",
        title="the swing: off-diagonal entries\ngrow, then are suppressed",
    )
    axes[2].legend(fontsize=7, ncol=2)
    for ax in axes:
        ax.grid(alpha=0.25)
        if sims[0].t[-1] >= 50:  # long runs (the figure presets, t = 100): the rises are early
            ax.set_xscale("symlog", linthresh=1.0)
            ax.set_xlim(0, sims[0].t[-1])
            ax.set_xlabel("model time t (linear to 1, then log)")
    fig.suptitle(title, fontsize=10)
    return plot.save(fig, path)
