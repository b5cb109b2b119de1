"""Training configuration: one frozen dataclass, named presets, and ``KEY=VALUE`` overrides.

Presets (``python -m empirical.train --preset NAME``):

- ``smoke``: 8x8 images, a 2-level net, 40 steps, a 30-step probe trained inside the run folder;
  seconds on a CPU, for tests.
- ``tiny``: a scaled-down setup that shows concept memorization on 2 CPU cores in about 9 minutes
  with bf16 (docs/training.md; its held-out class does not compose, and rarely turns).
- ``small``: 24x24, a 3-level net (32, 64, 128) with the official recipe (no classifier-free
  dropout, clip 0.01 over all parameters) and EMA 0.999, 10,000 steps: the held-out class composes
  at Δcolor 0.8 to 0.3 in every seed tried (40 minutes alone on 2 CPU cores;
  results/ladder/notes.md says what composition needs). It reads the probe the package ships
  (empirical/probes/color-size-24px, hash 16e18d564fed732e), so every machine reads its runs with
  one instrument.
- ``quick``: small shortened to 4,000 steps at Δcolor 0.8 with the EMA warmed up, meant to show the
  paper's path (the held-out class memorized as the stronger concept's class, the turn, composition)
  in one sitting on 2 CPU cores. Not measured yet: benchmarks/quick_preset.py measures its minutes
  and composition step in five seeds.
- ``small-3d``: small on three concepts (color, size, background color; the paper's appendix C.4):
  8 classes, 011, 101, 110 and 111 held out; Δcolor 0.6, Δsize 0.4, Δbg 0.4 (set Δbg per run);
  reads the probe the package ships for three concepts (empirical/probes/color-size-bg-24px).
  ``python -m figures.training`` draws its cube's faces.
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

from empirical.training.config_checks import check, check_types
from empirical.images.dgp import DataConfig
from empirical.images.faces import FacesConfig
from empirical.training.presets import TRAIN_PRESETS
from core import cli
from core.run_config import read_run_config


# where training looks for (and trains) its probe by default
PROBE_DIR = "runs/probe/{concepts}-{resolution}px"
# the probes the package ships (empirical/probes/): one instrument on every machine; `small` reads
# it by default
COMMITTED_PROBE = "{package}/probes/{concepts}-{resolution}px"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # empirical/, which holds the shipped probes


TUPLES = (  # the fields held as tuples (lists in config.json)
    "concepts",
    "channels",
    "protocols",
    "mask_classes",
    "mask_concepts",
    "eval_dense",
    "grid_overprompt",
    "grid_intervention",
    "grid_cfg",
)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (the run's ``config.json``); every field is a
    ``--set`` key.

    Keys (one line each; ``python -m empirical.train --help`` prints them with their defaults):

    - seed: the run's seed (model initialization, batches, dropout, time sampling and sampling
      noise)
    - concepts: the active concepts in label-digit order, e.g. color,size (faces: the selection's
      attributes)
    - celeba: a CelebA selection folder (python -m empirical.celeba --out): train on its faces, the
      concepts its two attributes (no separations; in-training protocols: cfg only)
    - sep: the separation of each concept's two values (--set sep.color=0.3): its concept signal
    - resolution: image side in pixels (divisible by 2^(levels - 1))
    - per_class: training images per training class
    - mask_p: the share of mask_classes' training prompts whose mask_concepts slots are masked
      (paper Sec. 5)
    - mask_classes: the training classes whose prompts are masked, e.g. 10
    - mask_concepts: the concepts masked in their prompts, e.g. color
    - channels: U-Net widths, one per level, e.g. 32,64,128 (three levels)
    - blocks: residual blocks per U-Net level
    - dropout: dropout rate in the residual blocks
    - p_cfg: classifier-free guidance drop rate: share of prompts replaced by the null vector (0 =
      none)
    - gamma_min: initial log SNR schedule γ(0) (the schedule is learned)
    - gamma_max: initial γ(1)
    - data_noise: the reconstruction term's pixel noise
    - steps: AdamW updates
    - batch: images per update
    - lr: AdamW learning rate
    - weight_decay: AdamW weight decay
    - clip: max gradient norm (the official runs: 0.01)
    - clip_scope: what clip covers: net (the ε network) or all (also the two schedule scalars, as
      the official code)
    - ema: EMA decay of the evaluated weights (0 = off); it lags the weights by about ema / (1 -
      ema) steps
    - ema_warmup: decay min(ema, (1 + n) / (10 + n)) at step n: a short lag early, the full decay
      from 10 / (1 - ema)
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
    - probe: the probe folder ({concepts}, {resolution}, {out}, {package}, {selection} filled in);
      trained there when missing, except a probe the package ships ({package}/probes/..., `small`'s
      default), which is never trained
    - probe_steps: training steps of a missing probe
    - device: auto, cpu or cuda
    - precision: auto (bf16 autocast where the device computes bf16 natively), bf16 or fp32 (the
      reference)

    Notes. Clipping ``all`` follows the official code: the schedule scalars' gradient, driven by the
    reconstruction term, is ~10^3 times the network's, so clipping everything rescales the network's
    gradient by a factor that drifts 100-fold during training. The protocol grids are fixed here,
    before the run, the same for every seed; each setting is chosen on ``select_samples`` images
    from a noise stream of its own and scored on a fresh draw (empirical.training.protocols). Runs
    saved before ``precision`` (``ema_warmup``) existed read as fp32 (a constant decay), the path
    they trained with.
    """

    preset: str = "tiny"
    seed: int = 0
    # data
    concepts: tuple[str, ...] = ("color", "size")
    celeba: str = ""
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
        check_types(self)
        for name in TUPLES:  # a config.json or a caller may give lists
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "sep", {k: float(v) for k, v in dict(self.sep).items()})
        object.__setattr__(self, "channels", tuple(int(c) for c in self.channels))
        for name in ("grid_overprompt", "grid_intervention", "grid_cfg"):
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        check(self)

    @functools.cached_property
    def data(self) -> DataConfig | FacesConfig:
        """The data config of the run, built (and validated) once: faces where ``celeba`` names a
        selection."""
        if self.celeba:
            return FacesConfig(self.concepts, self.resolution)
        return DataConfig(self.concepts, self.sep, resolution=self.resolution)

    def eval_schedule(self) -> list[int]:
        """Evaluation steps: ``evals`` points quadratically spaced from eval_start to steps (dense
        early), and the ``eval_dense`` points spaced evenly between its start and end."""
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
        """Images drawn per evaluation of a class: ``samples_held_out`` for a held-out class, else
        ``samples``."""
        return self.samples_held_out if label in self.data.held_out else self.samples

    def sweep(self, protocol: str) -> tuple:
        """The settings of a protocol, from the config's grid (fixed before the run, the same for
        every seed)."""
        pairs = self.grid_intervention
        return {
            "overprompt": self.grid_overprompt,
            "cfg": self.grid_cfg,
            "patch": ("final",),
            "intervention": tuple(zip(pairs[::2], pairs[1::2])),
        }[protocol]

    def probe_path(self, out: str) -> str:
        """The probe folder of the run, with {concepts}, {resolution}, {out}, {seed}, {package} and
        {selection} (a faces run's) filled in."""
        if "{selection}" in self.probe and not self.celeba:
            raise ValueError(
                f"probe={self.probe}: {{selection}} is a faces run's (celeba=SELECTION); this "
                "run has none"
            )
        return self.probe.format(
            resolution=self.resolution,
            out=out,
            seed=self.seed,
            concepts="-".join(self.concepts),
            package=PACKAGE_DIR,
            selection=self.celeba,
        )

    def to_json(self) -> dict[str, Any]:
        """The config as JSON-ready values (tuples as lists): config.json's 'train' section."""
        doc = dataclasses.asdict(self)
        for name in TUPLES:
            doc[name] = list(doc[name])
        return doc


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


def no_shipped_probe(cfg: TrainConfig) -> str:
    """The error for a run whose probe is one the package ships ({package}/probes/...) but does not
    have."""
    shipped = ", ".join(sorted(p.parent.name for p in (PACKAGE_DIR / "probes").glob("*/probe.pt")))
    return (
        f"probe={cfg.probe}: the package ships no probe for {'-'.join(cfg.concepts)} at "
        f"{cfg.resolution} px "
        f"(it ships: {shipped or 'none'}); set probe=runs/probe/{{concepts}}-{{resolution}}px to "
        "train one"
    )


def make_config(preset: str, overrides: Sequence[str] = ()) -> TrainConfig:
    """A preset with ``KEY=VALUE`` overrides applied; every error names the key and what is
    valid."""
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
    # faces: the selection's two attributes are the concepts, and no separations
    if values.get("celeba"):
        if given:
            raise ValueError(
                f"--set sep.{sorted(given)[0]}: a faces run (celeba=...) has no separations (its "
                "faces are "
                "what they are)"
            )
        values["concepts"] = selection_concepts(values["celeba"], values.get("concepts"))
        sep = {}
    active = values.get("concepts", TrainConfig.concepts)
    # defaults only for active concepts
    values["sep"] = {c: v for c, v in sep.items() if c in active or c in given}
    return TrainConfig(**values)


def selection_concepts(folder: str, given: Sequence[str] | None) -> tuple[str, ...]:
    """The attributes of a CelebA selection (its classes.json); ValueError where ``given`` concepts
    differ."""
    from empirical.images.celeba_layout import selection_doc

    try:
        concepts = tuple(selection_doc(Path(folder))["concepts"])
    except ValueError as err:
        raise ValueError(f"--set celeba: {err}") from None
    if given and tuple(given) != concepts:
        raise ValueError(
            f"concepts={','.join(given)}: the selection {folder} is of {','.join(concepts)} "
            "(leave concepts "
            "out: a faces run takes the selection's)"
        )
    return concepts


def saved_config(run: Path, *, required: bool = True) -> dict[str, Any]:
    """``run/config.json`` checked as every reader of runs checks it (core.run_config), with the
    defaults of fields added after some runs were saved; ``{}`` where absent and not required."""
    doc = read_run_config(run, required=required)
    if doc:
        doc["train"].setdefault("precision", "fp32")  # saved before the field: trained in fp32
        doc["train"].setdefault("ema_warmup", False)  # likewise: a constant decay
        doc["train"].setdefault("celeba", "")  # saved before faces: the synthetic data
    return doc


def check_folder(out: Path, cfg: TrainConfig) -> None:
    """A folder holding another run's config is an error, not something to overwrite."""
    old = saved_config(out, required=False)
    if not old:
        return
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
