"""The named training presets (``--preset``): each a set of TrainConfig fields that differ from the
defaults (``tiny`` is the defaults), and a ``-mask`` variant of tiny, small and paper for the
masking sweeps (shape x color, class 10's color masked). empirical.training.config documents what
each preset is for.
"""

from __future__ import annotations

import textwrap

from typing import Any

TRAIN_PRESETS: dict[str, dict[str, Any]] = {
    "smoke": dict(
        resolution=8,
        per_class=64,
        channels=(16, 32),
        blocks=1,
        steps=40,
        evals=4,
        samples=8,
        samples_held_out=8,
        select_samples=4,
        eval_dense=(),
        sample_steps=10,
        grids=2,
        log_every=10,
        save_every=20,
        probe="{out}/probe",
        probe_steps=30,
        ema=0.0,
    ),
    "tiny": dict(),
    # the first setting whose held-out class composes on a CPU (results/ladder/notes.md): tiny's
    # data at 24 px, a 3-level net and the official recipe (no classifier-free dropout, clip 0.01
    # over all parameters) with EMA 0.999
    "small": dict(
        resolution=24,
        channels=(32, 64, 128),
        p_cfg=0.0,
        clip=0.01,
        clip_scope="all",
        ema=0.999,
        steps=10000,
        eval_dense=(2000, 6000, 11),
        # the committed probe (issue #57): one instrument
        probe="{package}/probes/{concepts}-{resolution}px",
    ),
    # the official runs: no EMA, clip 0.01 over all parameters, and no classifier-free dropout
    # (their main Δcolor
    # sweep trained without it); --set p_cfg=0.2 gives the guidance protocol an unconditional model
    "paper": dict(
        resolution=32,
        per_class=2048,
        channels=(64, 128, 256),
        blocks=2,
        steps=20000,
        evals=60,
        eval_start=500,
        eval_dense=(),
        samples=32,
        clip=0.01,
        clip_scope="all",
        ema=0.0,
        p_cfg=0.0,
        log_every=100,
        save_every=1000,
        probe_steps=3000,
    ),
}
# the paper's path in one sitting on 2 CPU cores: small shortened to the steps in which its
# held-out class composes at Δcolor 0.8 (2,575-4,458 in the ladder's runs), the EMA warmed up so the
# evaluated weights lag less early (the ladder's ema-warmup rung read composition 650-1,200 steps
# sooner), checkpoints dense over the turn; benchmarks/quick_preset.py measures it (not yet run)
TRAIN_PRESETS["quick"] = {
    **TRAIN_PRESETS["small"],
    "sep": {"color": 0.8, "size": 0.4},
    "steps": 4000,
    "ema_warmup": True,
    "evals": 16,
    "eval_dense": (1500, 4000, 11),
}
MASKING = {
    "concepts": ("shape", "color"),
    "sep": {"color": 0.3},
    "mask_p": 0.5,
    "mask_classes": ("10",),
    "mask_concepts": ("color",),
}
# the paper's three-concept space (appendix C.4, Fig. 15; issue #55): color, size and background
# color, 8 classes,
# those with two or more concepts present held out (011, 101, 110, 111); bg's signal set per run
# (--set sep.bg=0.6
# strong, 0.15 weak). It reads the probe the package ships for its concepts
# (empirical/probes/color-size-bg-24px):
# every run of it read by one instrument, on any machine.
TRAIN_PRESETS["small-3d"] = {
    **TRAIN_PRESETS["small"],
    "concepts": ("color", "size", "bg"),
    "sep": {"color": 0.6, "size": 0.4, "bg": 0.4},
}
# faces (appendix C.3; issue #55): a CelebA selection of python -m empirical.celeba (--set
# celeba=SELECTION, its two
# attributes the concepts), 00/01/10 trained and 11 held out; the face probe trained once beside the
# selection.
# `celeba` is the paper's size for a GPU (64 px, 30k faces a class); `celeba-cpu` a run of a few
# hours on 2 cores.
FACES = {"probe": "{selection}/probe-{resolution}px", "protocols": (), "probe_steps": 3000}
TRAIN_PRESETS["celeba"] = {
    **TRAIN_PRESETS["paper"],
    **FACES,
    "resolution": 64,
    "per_class": 30000,
    "steps": 100000,
}
TRAIN_PRESETS["celeba-cpu"] = {
    **{k: v for k, v in TRAIN_PRESETS["small"].items() if k != "probe"},
    **FACES,
    "resolution": 32,
    "per_class": 2000,
}
for _name in ("tiny", "paper", "small"):  # small-mask: issue #35's masking sweep
    # (no committed probe reads shape x color: a masking run trains its own, as the defaults do)
    base = {k: v for k, v in TRAIN_PRESETS[_name].items() if k != "probe"}
    TRAIN_PRESETS[f"{_name}-mask"] = {**base, **MASKING}


def describe() -> str:
    """The presets and their differences from the defaults, for --help."""
    lines = []
    for name, over in TRAIN_PRESETS.items():
        diff = ", ".join(f"{k}={v}" for k, v in over.items()) or "the defaults"
        lines.append(
            textwrap.fill(f"{name}: {diff}", 100, initial_indent="  ", subsequent_indent="      ")
        )
    return "\n".join(lines)
