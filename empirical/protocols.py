"""Hidden-capability protocols: ways to ask a checkpoint for a class that naive prompting may not show.

Each protocol is a sweep of settings; at a checkpoint, the capability of a class under a protocol
is the best joint accuracy over its settings (the setting is recorded). Every setting draws the
same random numbers as the naive evaluation of that checkpoint (common random numbers), so a
setting that changes nothing gives exactly the naive images.

- ``overprompt``: the prompt pushed past the training range. For each concept of the class, the
  value moves away from the midpoint between its values: v(s) = mid + s (v - mid). s = 1 is the
  naive prompt (paper App. B: 5 strengths).
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

from empirical.config import TrainConfig
from empirical.data import SLOTS, DataConfig, parse_label
from empirical.evaluate import class_prompts, generate, generator_for, score
from empirical.unet import cond_modules
from empirical.vdm import VDM

DEFAULTS: dict[str, tuple] = {
    "overprompt": (1.5, 2.0, 3.0, 4.0, 5.0),
    "intervention": ((1.0, 0.0), (2.0, 0.0), (4.0, 0.0), (1.0, 0.5), (2.0, 1.0)),
    "patch": ("final",),
    "cfg": (1.5, 2.0, 3.0, 5.0, 7.5),
}
PROTOCOLS = tuple(DEFAULTS)


@dataclass(frozen=True)
class Setting:
    """One point of a protocol's sweep: what to name it in the log, and how to run it."""

    name: str
    prompt: np.ndarray  # (11,)
    guidance: float = 0.0
    edit: tuple[float, float] | None = None  # (α, β) of an intervention


def overprompt(config: DataConfig, label: str, strength: float) -> np.ndarray:
    """The class's mean prompt with every concept pushed to ``strength`` times its offset from the midpoint."""
    idx = parse_label(config, label)
    h = class_prompts(config, [label])[label].copy()
    for c, i in zip(config.concepts, idx):
        if c == "shape":
            continue  # a one-hot: no midpoint to push away from
        mid = (config.mean(c, 0) + config.mean(c, config.n_values[c] - 1)) / 2
        h[SLOTS[c]] = mid + strength * (config.mean(c, i) - mid)
    return h


def prototype(config: DataConfig, concept: str, value: int) -> np.ndarray:
    """A prompt that names only one concept's value: zeros except that concept's slots."""
    h = np.zeros(11, dtype=np.float32)
    h[SLOTS[concept]] = config.mean(concept, value)
    return h


def settings(protocol: str, config: DataConfig, label: str, sweep: Sequence | None = None) -> list[Setting]:
    """The settings a protocol sweeps for a class (or ``sweep``'s), each a prompt, an edit or a guidance."""
    if protocol not in DEFAULTS:
        raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    sweep = DEFAULTS[protocol] if sweep is None else tuple(sweep)
    base = class_prompts(config, [label])[label]
    if protocol == "overprompt":
        return [Setting(f"strength={s:g}", overprompt(config, label, s)) for s in sweep]
    if protocol == "intervention":
        return [Setting(f"alpha={a:g},beta={b:g}", base, edit=(float(a), float(b))) for a, b in sweep]
    if protocol == "cfg":
        return [Setting(f"guidance={w:g}", base, guidance=float(w)) for w in sweep]
    return [Setting("final", base)]


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-12)


@contextlib.contextmanager
def intervention(vdm: VDM, config: DataConfig, label: str, alpha: float, beta: float) -> Iterator[None]:
    """Edit every block's conditioning embedding toward the class's values (see the module docstring)."""
    idx = parse_label(config, label)
    device = next(vdm.parameters()).device
    hooks = []
    with torch.no_grad():
        pairs = []
        for name, module in cond_modules(vdm.net):
            dirs = []
            for c, i in zip(config.concepts, idx):
                other = 1 - i if config.n_values[c] == 2 else (0 if i else 1)
                protos = torch.as_tensor(np.stack([prototype(config, c, i), prototype(config, c, other)]), device=device)
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
    """(N, sum of block widths): every block's conditioning embedding of each prompt, concatenated."""
    device = next(vdm.parameters()).device
    h = torch.as_tensor(np.asarray(prompts, dtype=np.float32), device=device)
    return torch.cat([module(h) for _, module in cond_modules(vdm.net)], dim=1)


def disentanglement(vdm: VDM, config: DataConfig) -> float:
    """1 - |cos(e01 - e00, e10 - e00)| of the mean-prompt embeddings (2-concept setups)."""
    if len(config.concepts) != 2:
        raise ValueError(f"the disentanglement metric needs exactly 2 concepts, got {config.concepts}")
    prompts = class_prompts(config, ["00", "01", "10"])
    e = embeddings(vdm, np.stack([prompts["00"], prompts["01"], prompts["10"]]))
    cos = torch.nn.functional.cosine_similarity(e[1] - e[0], e[2] - e[0], dim=0)
    return float(1 - cos.abs())


def elicit_step(vdm, probe, cfg: TrainConfig, step: int, protocol: str, labels: Sequence[str], *,
                final=None, sweep: Sequence | None = None) -> dict[str, list]:
    """{label: [z list, best joint accuracy, setting name]} for one checkpoint under one protocol.

    Each setting of the protocol draws the naive evaluation's noise (same generator per class and step),
    so settings differ only by what the protocol changes; the best joint accuracy wins.
    """
    data = cfg.data
    device = next(vdm.parameters()).device
    if protocol == "cfg" and cfg.p_cfg == 0:
        raise ValueError("the cfg protocol needs a model trained with classifier-free dropout (p_cfg > 0); this run has p_cfg=0")
    if protocol == "patch" and final is None:
        raise ValueError("the patch protocol needs the final checkpoint")
    model = patched(vdm, final) if protocol == "patch" else vdm
    out = {}
    for label in labels:
        best = None
        for s in settings(protocol, data, label, sweep):
            gen = generator_for(cfg.seed, step, label, device)  # the naive evaluation's noise
            h = np.repeat(s.prompt[None], cfg.samples, axis=0)
            edit = intervention(model, data, label, *s.edit) if s.edit else contextlib.nullcontext()
            with edit:
                images = generate(model, h, cfg.resolution, steps=cfg.sample_steps,
                                           guidance=s.guidance or cfg.guidance, generator=gen)
            point = score(probe, data, label, images)
            if best is None or point.accuracy > best[1]:
                best = [[float(v) for v in point.z], point.accuracy, s.name]
        out[label] = best
    return out
