"""The default simulations of ``python -m theory.simulate``: the paper's Fig. 5, Fig. 9(b) and the
notebook.

A preset is a list of panels; a panel is one model, one class, and a sweep of one quantity.

``fig5``  Eq. 1, classes 00 and 11, over the concept-signal ratio a (a > 1: size is the stronger
          concept). Stiffness λ = (1/(2a), a/2), the convention of the authors' code; gate k = 1.
          The weaker concept is learned later, t_weak = 3 + 3|ln a|, the stronger at t = 0; class
          11's biased target is the training class of the stronger concept, z̃ = (0, 1) for a > 1
          (clockwise turn) and (1, 0) for a < 1 (counter-clockwise). Class 00 has z̃ = ẑ = (0, 0).
``fig9b`` Eq. 2 (U1), class 11 of Sec. 5 (color, shape), masking p in {0, .25, .5, .75, 1}, β = 1,
          λ = (0.4, 0.8), t_switch = (3, 0), k = 1: the path heads for the red triangle (0, 1) and
          turns toward (1 - p, 1).
``notebook`` The authors' notebook model, a in linspace(1, 5, 15), t in [0, 25].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from matplotlib.colors import LogNorm, Normalize

from theory.models.landscape import Landscape
from theory.models.paper import eq1, eq2, notebook


@dataclass(frozen=True)
class Panel:
    """One model, one class, one swept quantity."""

    title: str
    landscape: Landscape
    label: str
    sweep: str
    sweep_values: tuple[float, ...]
    values: dict  # batched parameter values, one row per sweep value
    targets: tuple = ()
    cmap: str = "viridis"
    log_norm: bool = False
    sweep_label: str = ""  # the colour bar's words for the swept quantity (default: its name)

    @property
    def runs(self) -> list[str]:
        """One run id per swept value, e.g. ``a=2``."""
        return [f"{self.sweep}={v:.6g}" for v in self.sweep_values]

    def norm(self) -> Normalize:
        """The colour normalisation of the swept values (a log scale symmetric about 1 when
        ``log_norm``)."""
        v = np.asarray(self.sweep_values)
        if self.log_norm:
            top = max(v.max(), 1 / v.min())
            return LogNorm(1 / top, top)
        return Normalize(v.min(), v.max())


@dataclass(frozen=True)
class Preset:
    """A named figure: its panels and a one-line description."""

    name: str
    description: str
    panels: tuple[Panel, ...]
    t_end: float = 25.0


FIG5_A = (1 / 4, 1 / 3, 1 / 2, 2 / 3, 3 / 2, 2.0, 3.0, 4.0)


def fig5_params(a: np.ndarray, label: str) -> dict:
    """Eq. 1 parameters for signal ratio(s) a and class 00 or 11 (see the module docstring)."""
    a = np.asarray(a, dtype=float)
    size_stronger = a > 1
    t_weak = 3 + 3 * np.abs(np.log(a))
    t_switch = np.where(size_stronger[:, None], np.c_[t_weak, 0 * a], np.c_[0 * a, t_weak])
    if label == "00":
        z_bias = z_target = np.zeros((a.size, 2))
    else:
        z_bias = np.where(size_stronger[:, None], [0.0, 1.0], [1.0, 0.0])
        z_target = np.ones((a.size, 2))
    return {
        "lam": np.c_[1 / (2 * a), a / 2],
        "t_switch": t_switch,
        "k": 1.0,
        "z_bias": z_bias,
        "z_target": z_target,
    }


def _fig5() -> Preset:
    land = eq1()
    a = np.array(FIG5_A)
    panels = tuple(
        Panel(
            f"Eq. 1, class {label}",
            land,
            label,
            "a",
            FIG5_A,
            fig5_params(a, label),
            targets=(((0, 0), "*", "true target ẑ = z̃ = (0,0)"),)
            if label == "00"
            else (
                ((1, 1), "*", "true target ẑ"),
                ((0, 1), "X", "biased z̃ (size stronger)"),
                ((1, 0), "P", "biased z̃ (color stronger)"),
            ),
            cmap="coolwarm_r",
            log_norm=True,
            sweep_label="a, the signal ratio (a > 1: size stronger)",
        )
        for label in ("00", "11")
    )
    return Preset(
        "fig5", "Eq. 1 over the signal ratio a: class 00 and class 11 (clockwise if a > 1)", panels
    )


FIG9B_P = (0.0, 0.25, 0.5, 0.75, 1.0)


def _fig9b() -> Preset:
    land = eq2()
    values = {
        "p": np.array(FIG9B_P),
        "beta": 1.0,
        "lam": (0.4, 0.8),
        "t_switch": (3.0, 0.0),
        "k": 1.0,
        "z_bias": (0.0, 1.0),
        "z_target": (1.0, 1.0),
    }
    panel = Panel(
        "Eq. 2, class 11 under masking p",
        land,
        "11",
        "p",
        FIG9B_P,
        values,
        targets=(((0, 1), "X", "biased z̃ = red triangle"), ((1, 1), "*", "ẑ(p=0)")),
        cmap="coolwarm",
        sweep_label="p, the masking fraction",
    )
    return Preset("fig9b", "Eq. 2 over the masking fraction p (beta = 1)", (panel,))


NOTEBOOK_A = tuple(np.linspace(1, 5, 15).tolist())


def _notebook() -> Preset:
    panel = Panel(
        "authors' notebook model",
        notebook(),
        "11",
        "a",
        NOTEBOOK_A,
        {"a": np.array(NOTEBOOK_A)},
        targets=(((1, 1), "*", "target (1,1)"),),
        cmap="viridis",
        sweep_label="a, the notebook's signal ratio",
    )
    return Preset("notebook", "the authors' notebook ODE, a in linspace(1, 5, 15)", (panel,))


PRESETS: dict[str, Callable[[], Preset]] = {"fig5": _fig5, "fig9b": _fig9b, "notebook": _notebook}
