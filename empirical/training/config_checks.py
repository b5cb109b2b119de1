"""The checks of a training configuration (empirical.training.config.TrainConfig runs them when it
is made): each field's type, then every value's range, the model's shape, the grids, masking and
protocols, and memory. Every error names the key and what is valid.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Mapping

from empirical.nets.device import PRECISIONS
from empirical.training.presets import TRAIN_PRESETS

# the training set lives in memory (and on the GPU); the paper preset needs 75 MiB
MAX_DATA_BYTES = 16 * 2**30


def check(cfg) -> None:
    """Every check below but the types (run first, before the values are normalized)."""
    check_model(cfg)
    check_ranges(cfg)
    check_masking_and_protocols(cfg)
    check_memory(cfg)


def check_types(cfg) -> None:
    """Each field has its annotated type (a config.json edited by hand, or a --set, can hold
    anything)."""
    hints = typing.get_type_hints(type(cfg))
    for f in dataclasses.fields(cfg):
        value, kind = getattr(cfg, f.name), hints[f.name]
        origin = typing.get_origin(kind) or kind
        if kind is bool:
            ok = isinstance(value, bool)
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif kind is str:
            ok = isinstance(value, str)
        elif origin is tuple:
            item = typing.get_args(kind)[0]
            accepted = (int, float) if item is float else item
            ok = isinstance(value, (tuple, list)) and all(
                isinstance(v, accepted) and not isinstance(v, bool) for v in value
            )
        else:  # Mapping[str, float]
            ok = isinstance(value, Mapping) and all(
                isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                for k, v in value.items()
            )
        if not ok:
            name = getattr(kind, "__name__", str(kind).replace("typing.", ""))
            raise ValueError(f"{f.name}={value!r} is not valid; expected {name}")


def check_model(cfg) -> None:
    """The preset exists, the data config is valid, and the net's levels divide the resolution."""
    if cfg.preset not in TRAIN_PRESETS:
        raise ValueError(f"unknown preset {cfg.preset!r}; valid: {', '.join(TRAIN_PRESETS)}")
    if cfg.preset.startswith("celeba") and not cfg.celeba:
        raise ValueError(
            f"the {cfg.preset} preset trains on faces: give --set celeba=SELECTION (a folder "
            "written by "
            "python -m empirical.celeba CELEBA_DIR --concepts !Male,Smiling --out SELECTION)"
        )
    cfg.data  # validates concepts, separations, resolution
    if not cfg.channels or min(cfg.channels) < 1:
        raise ValueError(
            f"channels={list(cfg.channels)} is not valid; give one width >= 1 per U-Net level, "
            "e.g. 32,64"
        )
    depth = 2 ** (len(cfg.channels) - 1)
    if cfg.resolution % depth:
        raise ValueError(
            f"resolution {cfg.resolution} must be divisible by {depth} for {len(cfg.channels)} "
            "U-Net levels"
        )


def check_ranges(cfg) -> None:
    """Every number in its range (finite, positive counts, probabilities in [0, 1), ...)."""
    positive = (
        "per_class",
        "blocks",
        "steps",
        "batch",
        "evals",
        "samples",
        "samples_held_out",
        "select_samples",
        "sample_steps",
        "log_every",
        "save_every",
        "probe_steps",
    )
    for name in positive:
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    for f in dataclasses.fields(cfg):  # inf and nan pass every comparison they should fail
        value = getattr(cfg, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{f.name}={value} is not valid; it must be a finite number")
    checks = {
        "seed": (0 <= cfg.seed < 2**31, "[0, 2**31)"),
        "dropout": (0 <= cfg.dropout < 1, "[0, 1)"),
        "p_cfg": (0 <= cfg.p_cfg < 1, "[0, 1)"),
        "lr": (0 < cfg.lr <= 1, "(0, 1] (AdamW; 1e-3 by default)"),
        "weight_decay": (0 <= cfg.weight_decay < 1, "[0, 1)"),
        "clip": (cfg.clip > 0, "> 0"),
        "ema": (0 <= cfg.ema < 1, "[0, 1) (0 = off)"),
        "eval_start": (0 <= cfg.eval_start <= cfg.steps, f"[0, steps={cfg.steps}]"),
        "guidance": (0 <= cfg.guidance <= 100, "[0, 100] (0 = plain conditioning)"),
        "grids": (cfg.grids >= 0, ">= 0"),
        "clip_scope": (cfg.clip_scope in ("net", "all"), "net or all"),
        "device": (cfg.device in ("auto", "cpu", "cuda"), "auto, cpu or cuda"),
        "precision": (
            cfg.precision in PRECISIONS,
            "auto (bf16 autocast where the device computes bf16 natively, else fp32), bf16 or fp32",
        ),
        "gamma_min": (-30 <= cfg.gamma_min <= 30, "[-30, 30] (log SNR; the default is -5)"),
        "gamma_max": (
            cfg.gamma_min < cfg.gamma_max <= 30,
            f"(gamma_min={cfg.gamma_min}, 30] (the default is 10)",
        ),
        "data_noise": (0 < cfg.data_noise < 1, "(0, 1)"),
        "samples": (cfg.samples <= 4096, "[1, 4096]"),
        "samples_held_out": (cfg.samples_held_out <= 4096, "[1, 4096]"),
        "select_samples": (cfg.select_samples <= 4096, "[1, 4096]"),
        "batch": (cfg.batch <= 65536, "[1, 65536]"),
        "probe": (
            bool(cfg.probe.strip()),
            "a folder (or .pt file), e.g. runs/probe/{concepts}-{resolution}px",
        ),
    }
    for name, (ok, valid) in checks.items():
        if not ok:
            raise ValueError(f"{name}={getattr(cfg, name)} is not valid; valid: {valid}")


def check_grid(cfg) -> None:
    """The dense evaluation window and the elicitation grids."""
    if len(cfg.eval_dense) not in (0, 3) or (
        cfg.eval_dense
        and not (0 <= cfg.eval_dense[0] < cfg.eval_dense[1] and 1 <= cfg.eval_dense[2] <= 10_000)
    ):
        raise ValueError(
            f"eval_dense={list(cfg.eval_dense)} is not valid; give start,end,count with "
            "0 <= start < end and 1 <= count <= 10000 (points past steps are dropped), or none"
        )
    grids = {
        "grid_overprompt": (
            cfg.grid_overprompt,
            lambda v: 0 <= v <= 1,
            "reaches in [0, 1]: 0 is naive, 1 the renderable limit",
        ),
        "grid_intervention": (
            cfg.grid_intervention,
            lambda v: 0 <= v <= 100,
            "α,β pairs with 0 <= α, β <= 100",
        ),
        "grid_cfg": (cfg.grid_cfg, lambda v: 0 < v <= 100, "guidance scales in (0, 100]"),
    }
    for name, (values, ok, valid) in grids.items():
        if not values or not all(ok(v) and math.isfinite(v) for v in values):
            raise ValueError(f"{name}={list(values)} is not valid; valid: one or more {valid}")
    if len(cfg.grid_intervention) % 2:
        raise ValueError(
            f"grid_intervention={list(cfg.grid_intervention)} is not valid; it holds α,β pairs "
            "(an even number of values), e.g. 1,0,2,0.5"
        )


def check_masking_and_protocols(cfg) -> None:
    """Masking names training classes and active concepts; protocols can run in training."""
    check_grid(cfg)
    # over-prompting and intervention move the synthetic concepts' values
    if cfg.celeba and set(cfg.protocols) - {"cfg"}:
        raise ValueError(
            f"protocols={','.join(cfg.protocols)}: a faces run (celeba=...) takes protocols cfg "
            "only "
            "(over-prompting and intervention act on the synthetic concepts)"
        )
    if cfg.celeba and cfg.mask_p > 0:
        raise ValueError(f"mask_p={cfg.mask_p}: a faces run (celeba=...) has no masking")
    if not 0 <= cfg.mask_p <= 1:
        raise ValueError(f"mask_p={cfg.mask_p} is not valid; valid: [0, 1]")
    if cfg.mask_p > 0:
        for label in cfg.mask_classes:
            if label not in cfg.data.train_classes:
                raise ValueError(
                    f"mask_classes: {label!r} is not a training class; valid: "
                    f"{', '.join(cfg.data.train_classes)}"
                )
        for c in cfg.mask_concepts:
            if c not in cfg.concepts:
                raise ValueError(
                    f"mask_concepts: {c!r} is not an active concept; valid: "
                    f"{', '.join(cfg.concepts)}"
                )
    for name in cfg.protocols:
        if name not in ("overprompt", "intervention", "cfg"):
            raise ValueError(
                f"protocols: {name!r} cannot run during training; valid: overprompt, "
                "intervention, cfg "
                "(patch runs post hoc: python -m empirical.elicit)"
            )
    for name in cfg.protocols:
        why = protocol_unsupported(name, cfg)
        if why:
            raise ValueError(f"protocols: {why}")


def protocol_unsupported(name: str, cfg) -> str | None:
    """Why protocol ``name`` cannot run on a model trained with ``cfg`` (None: it can): the one
    place a protocol's need of the training is written (checked in training, by empirical.elicit,
    and before a protocol runs)."""
    if name == "cfg" and cfg.p_cfg == 0:
        return (
            "cfg needs a model trained with classifier-free dropout (p_cfg > 0: an unconditional "
            "model to guide with); this run has p_cfg=0"
        )
    return None


def check_memory(cfg) -> None:
    """The training set and one evaluation's samples fit in memory."""
    # bytes of one RGB image: faces are held as uint8, the synthetic images and every sample as
    # float32
    image = 3 * cfg.resolution**2 * (1 if cfg.celeba else 4)
    data = len(cfg.data.train_classes) * cfg.per_class * image
    if data > MAX_DATA_BYTES:
        raise ValueError(
            f"per_class={cfg.per_class} at {cfg.resolution} px is a training set of "
            f"{data / 2**30:.1f} GiB "
            f"(held in memory); at most {MAX_DATA_BYTES / 2**30:.0f} GiB: use a smaller "
            "per_class or resolution"
        )
    sample = 3 * cfg.resolution**2 * 4
    if cfg.samples * sample > MAX_DATA_BYTES / 8:
        raise ValueError(
            f"samples={cfg.samples} at {cfg.resolution} px is {cfg.samples * sample / 2**30:.1f} "
            "GiB of images "
            f"per class and evaluation; at most {MAX_DATA_BYTES / 8 / 2**30:.0f} GiB"
        )
