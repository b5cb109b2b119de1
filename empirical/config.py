"""Training configuration: one frozen dataclass, named presets, and ``KEY=VALUE`` overrides.

Presets (``python -m empirical.train --preset NAME``):

- ``smoke``: 8x8 images, a 2-level net, 40 steps, a 30-step probe trained inside the run folder;
  seconds on a CPU, for tests.
- ``tiny``: a scaled-down setup that shows concept memorization and the turn on 2 CPU cores in
  about 15 minutes (see docs/training.md for what was tried).
- ``small``: 24x24, a 3-level net (32, 64, 128) with the official recipe (no classifier-free dropout,
  clip 0.01 over all parameters) and EMA 0.999, 10,000 steps: the held-out class composes at Δcolor
  0.8 to 0.3 in every seed tried (40 minutes alone on 2 CPU cores; docs/ladder.md says what composition needs).
- ``paper``: the paper's setup (32x32, 2048 images per training class, channels 64/128/256, 20k
  steps, 60 checkpoints quadratically spaced from step 500, no classifier-free dropout, as the
  official Δcolor sweep); needs a GPU to finish in minutes.

Any field can be overridden with ``--set KEY=VALUE``; separations with ``--set sep.color=0.3``,
tuples as ``--set channels=32,64``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from empirical.data import DataConfig
from theory import cli
from theory.files import read_json


PROBE_DIR = "runs/probe/{concepts}-{resolution}px"  # where training looks for (and trains) its probe by default
PRECISIONS = (
    "auto",
    "bf16",
    "fp32",
)  # empirical.evaluate.resolve_precision says what auto becomes on a device
MAX_DATA_BYTES = (
    16 * 2**30
)  # the training set lives in memory (and on the GPU); the paper preset needs 75 MiB


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (the run's ``config.json``); every field is a ``--set`` key.

    Keys (one line each; ``python -m empirical.train --help`` prints them with their defaults):

    - seed: the run's seed (model initialization, batches, dropout, time sampling and sampling noise)
    - concepts: the active concepts in label-digit order, e.g. color,size
    - sep: the separation of each concept's two values (--set sep.color=0.3): its concept signal
    - resolution: image side in pixels (divisible by 2^(levels - 1))
    - per_class: training images per training class
    - mask_p: the share of mask_classes' training prompts whose mask_concepts slots are masked (paper Sec. 5)
    - mask_classes: the training classes whose prompts are masked, e.g. 10
    - mask_concepts: the concepts masked in their prompts, e.g. color
    - channels: U-Net widths, one per level, e.g. 32,64,128 (three levels)
    - blocks: residual blocks per U-Net level
    - dropout: dropout rate in the residual blocks
    - p_cfg: classifier-free guidance drop rate: share of prompts replaced by the null vector (0 = none)
    - gamma_min: initial log SNR schedule γ(0) (the schedule is learned)
    - gamma_max: initial γ(1)
    - data_noise: the reconstruction term's pixel noise
    - steps: AdamW updates
    - batch: images per update
    - lr: AdamW learning rate
    - weight_decay: AdamW weight decay
    - clip: max gradient norm (the official runs: 0.01)
    - clip_scope: what clip covers: net (the ε network) or all (also the two schedule scalars, as the official code)
    - ema: EMA decay of the evaluated weights (0 = off); it lags the weights by about ema / (1 - ema) steps
    - ema_warmup: decay min(ema, (1 + n) / (10 + n)) at step n: a short lag early, the full decay from 10 / (1 - ema)
    - evals: checkpoints quadratically spaced from eval_start to steps (dense early)
    - eval_start: the first of those checkpoints
    - eval_dense: start,end,count: count more checkpoints evenly in [start, end] (none for none)
    - samples: images drawn per training class at each checkpoint
    - samples_held_out: images drawn per held-out class at each checkpoint
    - select_samples: images per protocol setting on the noise stream that chooses the setting
    - grid_overprompt: over-prompting reaches: the share of the way to the renderable limit
    - grid_intervention: linear latent intervention (α, β) pairs, flattened
    - grid_cfg: classifier-free guidance scales
    - sample_steps: ancestral sampling steps
    - guidance: guidance scale of the naive evaluation (0 = plain conditioning)
    - grids: sample grids saved as PNG over the run
    - keep_checkpoints: save the evaluated weights at every checkpoint (for post-hoc elicitation)
    - protocols: elicitation protocols run at every checkpoint: overprompt, intervention, cfg
    - log_every: steps between training records in metrics.jsonl
    - save_every: steps between resumable checkpoints (last.pt)
    - probe: the probe folder ({concepts}, {resolution}, {out} filled in); trained there when missing
    - probe_steps: training steps of a missing probe
    - device: auto, cpu or cuda
    - precision: auto (bf16 autocast where the device computes bf16 natively), bf16 or fp32 (the reference)

    Notes. Clipping ``all`` follows the official code: the schedule scalars' gradient, driven by the
    reconstruction term, is ~10^3 times the network's, so clipping everything rescales the network's
    gradient by a factor that drifts 100-fold during training. The protocol grids are fixed here,
    before the run, the same for every seed; each setting is chosen on ``select_samples`` images from a
    noise stream of its own and scored on a fresh draw (empirical.protocols). Runs saved before
    ``precision`` (``ema_warmup``) existed read as fp32 (a constant decay), the path they trained with.
    """

    preset: str = "tiny"
    seed: int = 0
    # data
    concepts: tuple[str, ...] = ("color", "size")
    sep: Mapping[str, float] = field(default_factory=lambda: {"color": 0.3, "size": 0.4})
    resolution: int = 16
    per_class: int = 2048
    mask_p: float = 0.0
    mask_classes: tuple[str, ...] = ("10",)
    mask_concepts: tuple[str, ...] = ("color",)
    # model
    channels: tuple[int, ...] = (32, 64)
    blocks: int = 1
    dropout: float = 0.1
    p_cfg: float = 0.2
    gamma_min: float = -5.0
    gamma_max: float = 10.0
    data_noise: float = 1e-3
    # optimization
    steps: int = 5000
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    clip: float = 1.0
    clip_scope: str = "net"
    ema: float = 0.995
    ema_warmup: bool = False
    # evaluation
    evals: int = 30
    eval_start: int = 0
    eval_dense: tuple[int, ...] = (1000, 3500, 11)
    samples: int = 32
    samples_held_out: int = 64
    select_samples: int = 32
    grid_overprompt: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
    grid_intervention: tuple[float, ...] = (1.0, 0.0, 2.0, 0.0, 4.0, 0.0, 1.0, 0.5, 2.0, 1.0)
    grid_cfg: tuple[float, ...] = (1.5, 2.0, 3.0, 5.0, 7.5)
    sample_steps: int = 50
    guidance: float = 0.0
    grids: int = 4
    keep_checkpoints: bool = True
    protocols: tuple[str, ...] = ()
    log_every: int = 50
    save_every: int = 500
    probe: str = PROBE_DIR
    probe_steps: int = 3000
    device: str = "auto"
    precision: str = "auto"

    def __post_init__(self) -> None:
        _check_types(self)
        object.__setattr__(self, "concepts", tuple(self.concepts))
        object.__setattr__(self, "sep", {k: float(v) for k, v in dict(self.sep).items()})
        object.__setattr__(self, "channels", tuple(int(c) for c in self.channels))
        for name in ("grid_overprompt", "grid_intervention", "grid_cfg"):
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        for name in (
            "protocols",
            "mask_classes",
            "mask_concepts",
            "eval_dense",
            "grid_overprompt",
            "grid_intervention",
            "grid_cfg",
        ):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        self._check_model()
        self._check_ranges()
        self._check_masking_and_protocols()
        self._check_memory()

    def _check_model(self) -> None:
        if self.preset not in TRAIN_PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; valid: {', '.join(TRAIN_PRESETS)}")
        self.data  # validates concepts, separations, resolution
        if not self.channels or min(self.channels) < 1:
            raise ValueError(
                f"channels={list(self.channels)} is not valid; give one width >= 1 per U-Net level, e.g. 32,64"
            )
        depth = 2 ** (len(self.channels) - 1)
        if self.resolution % depth:
            raise ValueError(
                f"resolution {self.resolution} must be divisible by {depth} for {len(self.channels)} U-Net levels"
            )

    def _check_ranges(self) -> None:
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
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for f in dataclasses.fields(
            self
        ):  # inf and nan pass every comparison below that they should fail
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{f.name}={value} is not valid; it must be a finite number")
        checks = {
            "seed": (0 <= self.seed < 2**31, "[0, 2**31)"),
            "dropout": (0 <= self.dropout < 1, "[0, 1)"),
            "p_cfg": (0 <= self.p_cfg < 1, "[0, 1)"),
            "lr": (0 < self.lr <= 1, "(0, 1] (AdamW; 1e-3 by default)"),
            "weight_decay": (0 <= self.weight_decay < 1, "[0, 1)"),
            "clip": (self.clip > 0, "> 0"),
            "ema": (0 <= self.ema < 1, "[0, 1) (0 = off)"),
            "eval_start": (0 <= self.eval_start <= self.steps, f"[0, steps={self.steps}]"),
            "guidance": (0 <= self.guidance <= 100, "[0, 100] (0 = plain conditioning)"),
            "grids": (self.grids >= 0, ">= 0"),
            "clip_scope": (self.clip_scope in ("net", "all"), "net or all"),
            "device": (self.device in ("auto", "cpu", "cuda"), "auto, cpu or cuda"),
            "precision": (
                self.precision in PRECISIONS,
                "auto (bf16 autocast where the device computes bf16 natively, else fp32), bf16 or fp32",
            ),
            "gamma_min": (-30 <= self.gamma_min <= 30, "[-30, 30] (log SNR; the default is -5)"),
            "gamma_max": (
                self.gamma_min < self.gamma_max <= 30,
                f"(gamma_min={self.gamma_min}, 30] (the default is 10)",
            ),
            "data_noise": (0 < self.data_noise < 1, "(0, 1)"),
            "samples": (self.samples <= 4096, "[1, 4096]"),
            "samples_held_out": (self.samples_held_out <= 4096, "[1, 4096]"),
            "select_samples": (self.select_samples <= 4096, "[1, 4096]"),
            "batch": (self.batch <= 65536, "[1, 65536]"),
            "probe": (
                bool(self.probe.strip()),
                "a folder (or .pt file), e.g. runs/probe/{concepts}-{resolution}px",
            ),
        }
        for name, (ok, valid) in checks.items():
            if not ok:
                raise ValueError(f"{name}={getattr(self, name)} is not valid; valid: {valid}")

    def _check_grid(self) -> None:
        if len(self.eval_dense) not in (0, 3) or (
            self.eval_dense
            and not (
                0 <= self.eval_dense[0] < self.eval_dense[1] and 1 <= self.eval_dense[2] <= 10_000
            )
        ):
            raise ValueError(
                f"eval_dense={list(self.eval_dense)} is not valid; give start,end,count with "
                "0 <= start < end and 1 <= count <= 10000 (points past steps are dropped), or none"
            )
        grids = {
            "grid_overprompt": (
                self.grid_overprompt,
                lambda v: 0 <= v <= 1,
                "reaches in [0, 1]: 0 is naive, 1 the renderable limit",
            ),
            "grid_intervention": (
                self.grid_intervention,
                lambda v: 0 <= v <= 100,
                "α,β pairs with 0 <= α, β <= 100",
            ),
            "grid_cfg": (self.grid_cfg, lambda v: 0 < v <= 100, "guidance scales in (0, 100]"),
        }
        for name, (values, ok, valid) in grids.items():
            if not values or not all(ok(v) and math.isfinite(v) for v in values):
                raise ValueError(f"{name}={list(values)} is not valid; valid: one or more {valid}")
        if len(self.grid_intervention) % 2:
            raise ValueError(
                f"grid_intervention={list(self.grid_intervention)} is not valid; it holds α,β pairs "
                "(an even number of values), e.g. 1,0,2,0.5"
            )

    def _check_masking_and_protocols(self) -> None:
        self._check_grid()
        if not 0 <= self.mask_p <= 1:
            raise ValueError(f"mask_p={self.mask_p} is not valid; valid: [0, 1]")
        if self.mask_p > 0:
            for label in self.mask_classes:
                if label not in self.data.train_classes:
                    raise ValueError(
                        f"mask_classes: {label!r} is not a training class; valid: {', '.join(self.data.train_classes)}"
                    )
            for c in self.mask_concepts:
                if c not in self.concepts:
                    raise ValueError(
                        f"mask_concepts: {c!r} is not an active concept; valid: {', '.join(self.concepts)}"
                    )
        for name in self.protocols:
            if name not in ("overprompt", "intervention", "cfg"):
                raise ValueError(
                    f"protocols: {name!r} cannot run during training; valid: overprompt, intervention, cfg "
                    "(patch runs post hoc: python -m empirical.elicit)"
                )
        if "cfg" in self.protocols and self.p_cfg == 0:
            raise ValueError(
                "protocols: cfg needs p_cfg > 0 (an unconditional model to guide with)"
            )

    def _check_memory(self) -> None:
        image = 3 * self.resolution**2 * 4  # bytes of one float32 RGB image
        data = len(self.data.train_classes) * self.per_class * image
        if data > MAX_DATA_BYTES:
            raise ValueError(
                f"per_class={self.per_class} at {self.resolution} px is a training set of {data / 2**30:.1f} GiB "
                f"(held in memory); at most {MAX_DATA_BYTES / 2**30:.0f} GiB: use a smaller per_class or resolution"
            )
        if self.samples * image > MAX_DATA_BYTES / 8:
            raise ValueError(
                f"samples={self.samples} at {self.resolution} px is {self.samples * image / 2**30:.1f} GiB of images "
                f"per class and evaluation; at most {MAX_DATA_BYTES / 8 / 2**30:.0f} GiB"
            )

    @functools.cached_property
    def data(self) -> DataConfig:
        """The data config of the run, built (and validated) once."""
        return DataConfig(self.concepts, self.sep, resolution=self.resolution)

    def eval_schedule(self) -> list[int]:
        """Evaluation steps: ``evals`` points quadratically spaced from eval_start to steps (dense early), and
        the ``eval_dense`` points spaced evenly between its start and end."""
        n, lo, hi = self.evals, math.sqrt(self.eval_start), math.sqrt(self.steps)
        points = [int((lo + (hi - lo) * i / max(n - 1, 1)) ** 2) for i in range(n)]
        points[-1] = self.steps
        if self.eval_dense:
            start, end, count = self.eval_dense
            dense = (
                int(round(start + (end - start) * i / max(count - 1, 1))) for i in range(count)
            )
            points += [p for p in dense if p <= self.steps]
        return sorted(set(points))

    def samples_for(self, label: str) -> int:
        """Images drawn per evaluation of a class: ``samples_held_out`` for a held-out class, else ``samples``."""
        return self.samples_held_out if label in self.data.held_out else self.samples

    def sweep(self, protocol: str) -> tuple:
        """The settings of a protocol, from the config's grid (fixed before the run, the same for every seed)."""
        pairs = self.grid_intervention
        return {
            "overprompt": self.grid_overprompt,
            "cfg": self.grid_cfg,
            "patch": ("final",),
            "intervention": tuple(zip(pairs[::2], pairs[1::2])),
        }[protocol]

    def probe_path(self, out: str) -> str:
        """The probe folder of the run, with {concepts}, {resolution}, {out} and {seed} filled in."""
        return self.probe.format(
            resolution=self.resolution, out=out, seed=self.seed, concepts="-".join(self.concepts)
        )

    def to_json(self) -> dict[str, Any]:
        """The config as JSON-ready values (tuples as lists): config.json's 'train' section."""
        doc = dataclasses.asdict(self)
        for name in (
            "concepts",
            "channels",
            "protocols",
            "mask_classes",
            "mask_concepts",
            "eval_dense",
            "grid_overprompt",
            "grid_intervention",
            "grid_cfg",
        ):
            doc[name] = list(doc[name])
        return doc


def _check_types(cfg: TrainConfig) -> None:
    """Each field has its annotated type (a config.json edited by hand, or a --set, can hold anything)."""
    hints = typing.get_type_hints(TrainConfig)
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
    # the first setting whose held-out class composes on a CPU (docs/ladder.md): tiny's data at 24 px, a 3-level net
    # and the official recipe (no classifier-free dropout, clip 0.01 over all parameters) with EMA 0.999
    "small": dict(
        resolution=24,
        channels=(32, 64, 128),
        p_cfg=0.0,
        clip=0.01,
        clip_scope="all",
        ema=0.999,
        steps=10000,
        eval_dense=(2000, 6000, 11),
    ),
    # the official runs: no EMA, clip 0.01 over all parameters, and no classifier-free dropout (their main Δcolor
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
MASKING = {
    "concepts": ("shape", "color"),
    "sep": {"color": 0.3},
    "mask_p": 0.5,
    "mask_classes": ("10",),
    "mask_concepts": ("color",),
}
for _name in ("tiny", "paper", "small"):  # small-mask: issue #35's masking sweep
    TRAIN_PRESETS[f"{_name}-mask"] = {**TRAIN_PRESETS[_name], **MASKING}


def _convert(name: str, text: str) -> Any:
    """Parse a --set value for field ``name`` from its annotation."""
    kind = typing.get_type_hints(TrainConfig)[name]
    origin = typing.get_origin(kind)
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} takes true or false, got {text!r}")
    words = {int: "an integer", float: "a number", str: "text"}
    if origin is tuple:
        item = typing.get_args(kind)[0]
        if text.strip().lower() == "none":
            return ()
        try:
            return tuple(item(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise ValueError(
                f"{name} takes {words[item]}s, comma-separated; got {text!r}"
            ) from None
    if kind in (int, float, str):
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"{name} takes {words[kind]}, got {text!r}") from None
    raise ValueError(f"{name} cannot be set from the command line")


def make_config(preset: str, overrides: Sequence[str] = ()) -> TrainConfig:
    """A preset with ``KEY=VALUE`` overrides applied; every error names the key and what is valid."""
    if preset not in TRAIN_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid: {', '.join(TRAIN_PRESETS)}")
    values: dict[str, Any] = {**TRAIN_PRESETS[preset], "preset": preset}
    sep, given = dict(values.get("sep", TrainConfig().sep)), set()
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    for item in overrides:
        key, text = cli.assignment(item, "--set", "KEY=VALUE")
        if key.startswith("sep."):
            sep[key[4:]] = cli.numbers(text, "--set", key)[0]
            given.add(key[4:])
            continue
        if key not in names or key in ("preset", "sep"):
            valid = ", ".join(n for n in names if n not in ("preset", "sep"))
            raise ValueError(f"--set {item!r}: unknown key {key!r}; valid: sep.<concept>, {valid}")
        try:
            values[key] = _convert(key, text)
        except ValueError as err:
            raise ValueError(f"--set {item!r}: {err}") from None
    active = values.get("concepts", TrainConfig.concepts)
    values["sep"] = {
        c: v for c, v in sep.items() if c in active or c in given
    }  # defaults only for active concepts
    return TrainConfig(**values)


def read_run_config(path: Path) -> dict[str, Any]:
    """A run's config.json as empirical.train writes it (a 'train' section at least); ValueError naming the file."""
    doc = read_json(path, "config (JSON)")
    if not isinstance(doc, dict) or not isinstance(doc.get("train"), dict):
        raise ValueError(
            f"{path}: not a training run's config (written by python -m empirical.train): it has no 'train' section"
        )
    doc["train"].setdefault(
        "precision", "fp32"
    )  # saved before the field existed: those runs trained in fp32
    doc["train"].setdefault("ema_warmup", False)  # likewise: a constant decay
    return doc


def check_folder(out: Path, cfg: TrainConfig) -> None:
    """A folder holding another run's config is an error, not something to overwrite."""
    path = out / "config.json"
    if not path.exists():
        return
    old = read_run_config(path)
    diff = [
        f"{k}: {old['train'].get(k)!r} -> {v!r}"
        for k, v in cfg.to_json().items()
        if k != "device" and old["train"].get(k) != v
    ]
    if diff:
        raise ValueError(
            f"{out} holds a run with another config ({'; '.join(diff)}); "
            f"use another --out, or the same settings to resume it"
        )


def key_help() -> dict[str, str]:
    """Each --set key's one-line meaning, read from TrainConfig's docstring (the one place it is written)."""
    lines = (TrainConfig.__doc__ or "").splitlines()
    return dict(
        line.strip()[2:].split(": ", 1)
        for line in lines
        if line.strip().startswith("- ") and ": " in line
    )


def describe_keys() -> str:
    """The --set keys with their tiny defaults and meanings, for --help."""
    defaults, meaning = TrainConfig().to_json(), key_help()
    width = max(len(k) for k in meaning)
    return "\n".join(
        f"  {k:<{width}}  {meaning[k]} (tiny: {defaults[k]})" for k in defaults if k != "preset"
    )


def describe() -> str:
    """The presets and their differences from the defaults, for --help."""
    lines = []
    for name, over in TRAIN_PRESETS.items():
        diff = ", ".join(f"{k}={v}" for k, v in over.items()) or "the defaults"
        lines.append(f"  {name}: {diff}")
    return "\n".join(lines)
