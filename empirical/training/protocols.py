"""Hidden-capability protocols: ways to ask a checkpoint for a class that naive prompting may not
show.

Each protocol is a grid of settings, fixed in the run's config before training and the same for
every seed (``TrainConfig.grid_*``). At a checkpoint, a class's capability under a protocol is
measured without selection bias (:func:`elicit_step`): every setting draws ``select_samples`` images
from one noise stream (SELECT), the best joint accuracy there picks the setting, and the picked
setting is scored on an independent draw (SCORE, the naive evaluation's own noise,
``samples_for(label)`` images). The logged accuracy is that score, with its binomial interval; the
picking draw's accuracy is kept as ``selection_accuracy``. A setting that changes nothing reproduces
the naive images.

- ``overprompt``: the prompt pushed beyond the trained range, toward the class's target and never
  into renders that cannot exist. Per concept (per color channel), the value moves a fraction r (the
  *reach*) of the way from the class's value to the renderable limit on its side (:data:`LIMITS`):
  v(r) = v + r (limit - v). r = 0 is naive; r = 1 asks for pure blue or the smallest radius the data
  ever draws. The default grid (0.25, 0.5, 0.75, 1) spans the whole renderable range at every
  separation: the old multiplicative strengths (up to 5x the offset from the midpoint) asked for a
  negative radius at Δsize 0.4 and for colors beyond [0, 1] at Δcolor 0.8.
- ``intervention``: a linear edit of the conditioning embedding e inside every residual block. With
  u+ the unit embedding of the class's own value of a concept and u- that of the other value
  (prototype prompts), e <- e + α P_{u+}(e) - β P_{u-}(e), concept by concept (paper App. B).
  α = β = 0 is naive.
- ``patch``: the conditioning MLPs of the final checkpoint patched into the checkpoint (paper App.
  C.6). The final checkpoint patched into itself is naive.
- ``cfg``: classifier-free guidance scales (paper App. C.5); needs a model trained with p_cfg > 0.

Also :func:`disentanglement`, the workshop paper's 1 - |cos(e01 - e00, e10 - e00)| over the
concatenated conditioning embeddings.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from empirical.training.config import TrainConfig
from empirical.training.config_checks import protocol_unsupported
from empirical.images.dgp import MIN_RADIUS, SLOTS, DataConfig, parse_label
from empirical.images.faces import FacesConfig
from empirical.training.evaluate import (
    SCORE,
    SELECT,
    Point,
    class_prompts,
    generate,
    generator_for,
    score,
)
from empirical.training.runlog import Logged
from empirical.nets.unet import cond_modules
from empirical.nets.vdm import VDM

PROTOCOLS = ("overprompt", "intervention", "patch", "cfg")
# The renderable range of each concept's values: colors are RGB in [0, 1]; the data never draws a
# radius below
# MIN_RADIUS or above 0.8 (0.45 + the largest separation's half, 0.2, + its spread, 0.15); positions
# stay inside
# the largest trained range, sep 1: +-(0.5 + 0.125).
LIMITS = {
    "color": (0.0, 1.0),
    "bg": (0.0, 1.0),
    "size": (MIN_RADIUS, 0.8),
    "x": (-0.625, 0.625),
    "y": (-0.625, 0.625),
}


@dataclass(frozen=True)
class Setting:
    """One point of a protocol's sweep: what to name it in the log, and how to run it."""

    name: str
    prompt: np.ndarray  # (11,)
    guidance: float = 0.0
    edit: tuple[float, float] | None = None  # (α, β) of an intervention


def overprompt(config: DataConfig, label: str, reach: float) -> np.ndarray:
    """The class's mean prompt with every concept pushed ``reach`` of the way from its value to the
    renderable limit.

    Per concept (and per color channel), the push goes away from the midpoint between the concept's
    extreme values, toward the limit on that side (:data:`LIMITS`): v(r) = v + r (limit - v). r = 0
    is the naive prompt, r = 1 the limit itself (a pure blue, the smallest radius the data draws),
    so no setting asks for a render that cannot exist (a negative radius, a color outside [0, 1]). A
    channel that does not differ between the concept's values (green on the red-blue axis) is left
    as it is.
    """
    if not 0 <= reach <= 1:
        raise ValueError(
            f"overprompt reach {reach:g} is outside [0, 1] (1 is the renderable limit)"
        )
    idx = parse_label(config, label)
    h = class_prompts(config, [label])[label].copy()
    for c, i in zip(config.concepts, idx):
        if c == "shape":
            continue  # a one-hot: no midpoint to push away from
        v = np.atleast_1d(config.mean(c, i)).astype(float)
        mid = (
            np.atleast_1d(config.mean(c, 0)) + np.atleast_1d(config.mean(c, config.n_values[c] - 1))
        ) / 2
        lo, hi = LIMITS[c]
        limit = np.where(v > mid, hi, lo)
        h[SLOTS[c]] = np.where(np.isclose(v, mid), v, v + reach * (limit - v))
    return h


def prompt_vector(config: DataConfig, label: str, strength: float = 1.0) -> np.ndarray:
    """The conditioning vector of a walk's prompt (:class:`empirical.elicitation.walk.Prompt`): the
    class's mean prompt at strength 1; over-prompted above it with reach 1 - 1/strength
    (:func:`overprompt`: 2 goes half way to the limit)."""
    if not strength >= 1:
        raise ValueError(
            f"strength {strength:g}: over-prompting takes strengths >= 1 (1: the plain prompt)"
        )
    if strength > 1:
        check_protocol("overprompt", config)
    return (
        class_prompts(config, [label])[label]
        if strength == 1
        else overprompt(config, label, 1 - 1 / strength)
    )


def prototype(config: DataConfig, concept: str, value: int) -> np.ndarray:
    """A prompt that names only one concept's value: zeros except that concept's slots."""
    h = np.zeros(11, dtype=np.float32)
    h[SLOTS[concept]] = config.mean(concept, value)
    return h


def check_protocol(protocol: str, config) -> None:
    """ValueError for a protocol that is not one, or one the run's data cannot take: over-prompting
    and intervention move the synthetic concepts' values, which faces do not have."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    if protocol in ("overprompt", "intervention") and isinstance(config, FacesConfig):
        raise ValueError(
            f"the {protocol} protocol moves the synthetic concepts' values; a faces run takes "
            "patch, or cfg "
            "where it trained with p_cfg > 0 (--protocols patch)"
        )


def settings(protocol: str, config: DataConfig, label: str, sweep: Sequence) -> list[Setting]:
    """The settings a protocol sweeps for a class: ``sweep`` (the run config's grid) as prompts,
    edits or guidance."""
    check_protocol(protocol, config)
    base = class_prompts(config, [label])[label]
    if protocol == "overprompt":
        return [Setting(f"reach={r:g}", overprompt(config, label, r)) for r in sweep]
    if protocol == "intervention":
        return [
            Setting(f"alpha={a:g},beta={b:g}", base, edit=(float(a), float(b))) for a, b in sweep
        ]
    if protocol == "cfg":
        return [Setting(f"guidance={w:g}", base, guidance=float(w)) for w in sweep]
    return [Setting("final", base)]


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-12)


@contextlib.contextmanager
def intervention(
    vdm: VDM, config: DataConfig, label: str, alpha: float, beta: float
) -> Iterator[None]:
    """Edit every block's conditioning embedding toward the class's values (see the module
    docstring)."""
    idx = parse_label(config, label)
    device = next(vdm.parameters()).device
    hooks = []
    with torch.no_grad():
        pairs = []
        for name, module in cond_modules(vdm.net):
            dirs = []
            for c, i in zip(config.concepts, idx):
                other = 1 - i if config.n_values[c] == 2 else (0 if i else 1)
                protos = torch.as_tensor(
                    np.stack([prototype(config, c, i), prototype(config, c, other)]), device=device
                )
                up, down = _unit(module(protos))
                dirs.append((up, down))
            pairs.append((module, dirs))

    def hook(dirs):
        def edit(_module, _inputs, e):
            for up, down in dirs:
                e = e + alpha * (e @ up)[:, None] * up
                e = e - beta * (e @ down)[:, None] * down
            return e

        return edit

    try:
        for module, dirs in pairs:
            hooks.append(module.register_forward_hook(hook(dirs)))
        yield
    finally:
        for h in hooks:
            h.remove()


def patched(vdm: VDM, final: VDM) -> VDM:
    """A copy of ``vdm`` whose conditioning MLPs are those of ``final``."""
    out = copy.deepcopy(vdm)
    donors = dict(cond_modules(final.net))
    for name, module in cond_modules(out.net):
        module.load_state_dict(donors[name].state_dict())
    return out


@torch.no_grad()
def embeddings(vdm: VDM, prompts: np.ndarray) -> torch.Tensor:
    """(N, sum of block widths): every block's conditioning embedding of each prompt,
    concatenated."""
    device = next(vdm.parameters()).device
    h = torch.as_tensor(np.asarray(prompts, dtype=np.float32), device=device)
    return torch.cat([module(h) for _, module in cond_modules(vdm.net)], dim=1)


def disentanglement(vdm: VDM, config: DataConfig) -> float:
    """1 - |cos(e01 - e00, e10 - e00)| of the mean-prompt embeddings (2-concept setups)."""
    if len(config.concepts) != 2:
        raise ValueError(
            f"the disentanglement metric needs exactly 2 concepts, got {config.concepts}"
        )
    prompts = class_prompts(config, ["00", "01", "10"])
    e = embeddings(vdm, np.stack([prompts["00"], prompts["01"], prompts["10"]]))
    cos = torch.nn.functional.cosine_similarity(e[1] - e[0], e[2] - e[0], dim=0)
    return float(1 - cos.abs())


@dataclass(frozen=True)
class Ask:
    """One draw of a protocol's measurement: ``n`` images of ``label`` under ``setting`` from
    ``generator``."""

    label: str
    setting: Setting
    n: int
    generator: torch.Generator

    def prompts(self) -> np.ndarray:
        return np.repeat(self.setting.prompt[None], self.n, axis=0)


def _images(model, cfg: TrainConfig, ask: Ask) -> np.ndarray:
    setting = ask.setting
    edit = (
        intervention(model, cfg.data, ask.label, *setting.edit)
        if setting.edit
        else contextlib.nullcontext()
    )
    with edit:
        return generate(
            model,
            ask.prompts(),
            cfg.resolution,
            steps=cfg.sample_steps,
            guidance=setting.guidance or cfg.guidance,
            generator=ask.generator,
            precision=cfg.precision,
        )


def select_asks(
    cfg: TrainConfig, step: int, protocol: str, labels: Sequence[str], device
) -> dict[tuple[str, int], Ask]:
    """The choosing draws: every setting of every class, ``select_samples`` images from a fresh
    SELECT stream each (the same noise for every setting of a class)."""
    return {
        (label, i): Ask(
            label,
            s,
            cfg.select_samples,
            generator_for(cfg.seed, step, label, device, stream=SELECT),
        )
        for label in labels
        for i, s in enumerate(settings(protocol, cfg.data, label, cfg.sweep(protocol)))
    }


def choose(probe, cfg: TrainConfig, asks: dict, images: dict) -> dict[str, tuple[Setting, float]]:
    """Each class's setting with the best joint accuracy on its choosing draw (the first of equals),
    and that accuracy."""
    best: dict[str, tuple[Setting, float]] = {}
    for key, ask in asks.items():
        acc = score(probe, cfg.data, ask.label, images[key]).accuracy
        if ask.label not in best or acc > best[ask.label][1]:
            best[ask.label] = (ask.setting, acc)
    return best


def score_asks(cfg: TrainConfig, step: int, chosen: dict, device) -> dict[str, Ask]:
    """The scoring draws: each class's chosen setting on the naive evaluation's noise (SCORE
    stream)."""
    return {
        label: Ask(
            label,
            setting,
            cfg.samples_for(label),
            generator_for(cfg.seed, step, label, device, stream=SCORE),
        )
        for label, (setting, _) in chosen.items()
    }


def scored(probe, cfg: TrainConfig, step: int, chosen: dict, images: dict) -> dict:
    """{label: (reading, scored images)} from the scoring draws' images."""
    out = {}
    for label, (setting, acc) in chosen.items():
        point = score(probe, cfg.data, label, images[label])
        out[label] = (point.logged(step, setting.name, acc), point)
    return out


def elicit_step(
    vdm, probe, cfg: TrainConfig, step: int, protocol: str, labels: Sequence[str], *, final=None
) -> dict[str, tuple[Logged, Point]]:
    """{label: (reading, scored images)} for one checkpoint under one protocol, free of selection
    bias.

    Every setting of the run's grid draws ``select_samples`` images from the SELECT noise stream;
    the setting with the best joint accuracy there is then scored on a fresh draw from the SCORE
    stream (the naive evaluation's noise, ``samples_for(label)`` images), so the logged accuracy
    never comes from the samples that chose it. The reading keeps the choosing draw's accuracy as
    ``selection_accuracy``. (An ensemble draws its members' images at once, :func:`elicit_members`,
    through the same steps.)
    """
    device = next(vdm.parameters()).device
    why = protocol_unsupported(protocol, cfg)
    if why:
        raise ValueError(f"the {why}")
    if protocol == "patch" and final is None:
        raise ValueError("the patch protocol needs the final checkpoint")
    model = patched(vdm, final) if protocol == "patch" else vdm

    def draw(asks: dict) -> dict:
        return {key: _images(model, cfg, ask) for key, ask in asks.items()}

    asks = select_asks(cfg, step, protocol, labels, device)
    chosen = choose(probe, cfg, asks, draw(asks))
    return scored(probe, cfg, step, chosen, draw(score_asks(cfg, step, chosen, device)))


def drawn_at_once(protocol: str) -> bool:
    """Whether a protocol's draws can be made for many members at once (:func:`elicit_members`): its
    settings change only the prompt (no edit of the net, no guidance of their own)."""
    return protocol == "overprompt"


def elicit_members(
    draw_members, runs: Sequence, protocol: str, labels: Sequence[str], device
) -> list[dict[str, Logged] | None]:
    """:func:`elicit_step`'s readings for every member of an ensemble at its checkpoint, each
    member's images drawn by ``draw_members`` (a list of each member's {key: Ask} -> a list of its
    {key: images}) for all of them at once. ``runs``: objects with ``cfg``, ``step`` and ``probe``.
    A member whose images cannot be read (not finite) gets None: it draws its own, alone, and fails
    there as a run alone does. ``draw_members(asks, members)`` draws for the members at those
    indices."""
    if not drawn_at_once(protocol):
        raise ValueError(f"the {protocol} protocol draws member by member")
    asks = [select_asks(r.cfg, r.step, protocol, labels, device) for r in runs]
    chosen: list[dict | None] = []
    for run, own, images in zip(runs, asks, draw_members(asks, list(range(len(runs))))):
        try:
            chosen.append(choose(run.probe, run.cfg, own, images))
        except FloatingPointError:
            chosen.append(None)
    ok = [i for i, c in enumerate(chosen) if c is not None]
    asks = [score_asks(runs[i].cfg, runs[i].step, chosen[i], device) for i in ok]
    out: list[dict[str, Logged] | None] = [None] * len(runs)
    for i, images in zip(ok, draw_members(asks, ok) if ok else []):
        try:
            found = scored(runs[i].probe, runs[i].cfg, runs[i].step, chosen[i], images)
        except FloatingPointError:
            continue
        out[i] = {label: reading for label, (reading, _) in found.items()}
    return out
