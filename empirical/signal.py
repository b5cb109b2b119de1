"""Concept signal, measured: how strongly each concept moves the pixels (paper Sec. 3: "concept signal").

Two estimates per concept, both on noise-free renders at matched positions and matched values of
every other concept:

``mse``       mean squared pixel difference between the classes that differ only in this concept
              (value 0 vs value n-1 of the concept, class means, averaged over random positions and
              over the other concepts' classes);
``grad_rms``  |∂G/∂z_i|: the RMS over pixels of the central finite difference of the image with
              respect to z_i, the concept's coordinate from value 0 (z_i = 0) to value n-1 (z_i = 1),
              averaged over z_i in {0.25, 0.5, 0.75}. Shape has no continuous coordinate (None).

Both grow with the separation; their ordering between concepts says which concept's signal is
stronger (which the model is expected to learn first).
"""

from __future__ import annotations

import numpy as np

from empirical.data import DataConfig, render, sample_values


def _base(config: DataConfig, n: int, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    index = np.stack([rng.integers(0, config.n_values[c], n) for c in config.concepts], axis=1)
    return index, sample_values(config, index, rng, mode="mean")


def _with(config: DataConfig, values: dict, concept: str, frac: float | np.ndarray) -> dict:
    out = dict(values)
    top = config.n_values[concept] - 1
    out[concept] = config.mean(concept, np.broadcast_to(np.asarray(frac, dtype=float) * top, (values["x"].shape[0],)))
    if concept == "size":
        out["size"] = np.maximum(out["size"], 0.1)
    return out


def concept_signal(config: DataConfig, *, n: int = 512, eps: float = 0.02, rng: int = 0) -> dict[str, dict]:
    """Per active concept: {"sep", "mse", "grad_rms"} (see the module docstring)."""
    gen = np.random.default_rng(rng)
    _, values = _base(config, n, gen)
    res = config.resolution
    out = {}
    for concept in config.concepts:
        lo = render(_with(config, values, concept, 0.0), res)
        hi = render(_with(config, values, concept, 1.0), res)
        mse = float(np.mean((hi - lo) ** 2))
        grad = None
        if concept != "shape":
            sq = []
            for z in (0.25, 0.5, 0.75):
                up = render(_with(config, values, concept, z + eps), res)
                down = render(_with(config, values, concept, z - eps), res)
                sq.append(np.mean(((up - down) / (2 * eps)) ** 2))
            grad = float(np.sqrt(np.mean(sq)))
        out[concept] = {"sep": config.sep.get(concept), "mse": mse, "grad_rms": grad}
    return out


def class_means(config: DataConfig) -> dict[str, dict[str, list[float]]]:
    """Class label -> concept -> mean value (for signals.json)."""
    out = {}
    for label in config.classes:
        idx = [int(d) for d in label]
        out[label] = {c: [float(v) for v in np.atleast_1d(config.mean(c, i))] for c, i in zip(config.concepts, idx)}
    return out
