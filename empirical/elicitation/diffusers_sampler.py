"""A diffusers U-Net and scheduler as a sampler of :func:`empirical.elicitation.walk.walk`
(optional: ``pip install diffusers``).

    from diffusers import DDIMScheduler, UNet2DConditionModel
    from empirical.images.dgp import DataConfig
    from empirical.elicitation.diffusers_sampler import DiffusersSampler, concept_condition
    from empirical.probing.reader import ProbeReader
    from empirical.elicitation.walk import walk

    data = DataConfig(resolution=16)
    sampler = DiffusersSampler(DDIMScheduler(), concept_condition(data), shape=(3, 16, 16),
                               steps=50, load=UNet2DConditionModel.from_pretrained)
    reader = ProbeReader("runs/probe/color-size-16px")
    walk([(s, f"ckpt/step_{s}") for s in (0, 250, 500)], sampler, reader,
         "runs/mine", classes=data.classes, held_out=["11"], strengths=[1.5, 2, 3])

- **checkpoint**: what ``load`` takes and turns into the U-Net
  (``UNet2DConditionModel.from_pretrained`` for a folder written by ``save_pretrained``); without
  ``load`` the checkpoint is the U-Net itself. The last one loaded is kept, so a walk loads each
  checkpoint once.
- **condition**: ``condition(prompt, n)`` returns the U-Net's conditioning keywords for ``n``
  samples. :func:`concept_condition` gives the package's concept vector (11 numbers, the
  conditioning the package's own model is trained on) as ``class_labels`` of a
  ``UNet2DConditionModel`` with a projection class embedding (or as one cross-attention token) and
  over-prompts as the package does; :func:`class_condition` gives integer ``class_labels`` (a
  ``UNet2DModel`` with ``num_class_embeds``), which have no over-prompting (run the walk without
  ``strengths``).
- **images**: the scheduler's final sample, read as images in [-1, 1] (diffusers' convention) and
  returned in [0, 1] as ``(n, C, H, W)`` float32, what the package's probe reads. The initial noise
  and the scheduler's noise come from a CPU generator seeded with the walk's seed, so a draw is the
  same on any device.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from empirical.images.dgp import DataConfig
from empirical.nets.device import select_device
from empirical.training.protocols import prompt_vector
from empirical.elicitation.walk import Prompt

Condition = Callable[[Prompt, int], Mapping[str, torch.Tensor]]


def concept_condition(data: DataConfig, via: str = "projection") -> Condition:
    """The class's concept vector (11 numbers; over-prompted at strengths above 1) as the U-Net's
    condition.

    ``via="projection"``: ``class_labels`` of shape (n, 11) for a ``UNet2DConditionModel`` built
    with ``class_embed_type="projection", projection_class_embeddings_input_dim=11`` (the vector is
    embedded and added to the time embedding, as the package's own model does; no attention needed).
    ``via="token"``: one cross-attention token, ``encoder_hidden_states`` of shape (n, 1, 11), for
    ``cross_attention_dim=11``."""
    if via not in ("projection", "token"):
        raise ValueError(
            f"via={via!r}: valid: projection (class_labels), token (encoder_hidden_states)"
        )

    def condition(prompt: Prompt, n: int) -> dict[str, torch.Tensor | None]:
        h = torch.as_tensor(prompt_vector(data, prompt.label, prompt.strength), dtype=torch.float32)
        if via == "token":
            return {"encoder_hidden_states": h.expand(n, 1, -1)}
        return {"class_labels": h.expand(n, -1), "encoder_hidden_states": None}

    return condition


def class_condition(classes: Sequence[str]) -> Condition:
    """Class indices in the order of ``classes`` as ``class_labels`` (n,); the plain prompt only."""
    index = {label: i for i, label in enumerate(classes)}

    def condition(prompt: Prompt, n: int) -> dict[str, torch.Tensor]:
        if prompt.label not in index:
            raise ValueError(f"class {prompt.label!r}: this model's classes are {', '.join(index)}")
        if prompt.strength != 1:
            raise ValueError(
                f"strength {prompt.strength:g}: integer class labels cannot be over-prompted; "
                "run the "
                "walk without strengths, or condition on concept vectors (concept_condition)"
            )
        return {"class_labels": torch.full((n,), index[prompt.label], dtype=torch.long)}

    return condition


class DiffusersSampler:
    """Draw images from a diffusers U-Net checkpoint with a scheduler (DDPM, DDIM, ...) in ``steps``
    steps."""

    def __init__(
        self,
        scheduler: Any,
        condition: Condition,
        *,
        shape: Sequence[int],
        steps: int = 50,
        load: Callable[[Any], torch.nn.Module] | None = None,
        device: str = "cpu",
        batch: int = 256,
    ):
        for name in ("set_timesteps", "step", "scale_model_input"):
            if not callable(getattr(scheduler, name, None)):
                raise TypeError(
                    f"scheduler {type(scheduler).__name__} has no {name}(): give a diffusers "
                    "scheduler"
                )
        shape = tuple(int(s) for s in shape)
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError(f"shape {shape}: give (channels, height, width), each >= 1")
        if not (isinstance(steps, int) and steps >= 1) or not (
            isinstance(batch, int) and batch >= 1
        ):
            raise ValueError(f"steps {steps!r}, batch {batch!r}: both are integers >= 1")
        self.scheduler, self.condition, self.shape, self.steps, self.batch = (
            scheduler,
            condition,
            shape,
            steps,
            batch,
        )
        self.load = load or (lambda checkpoint: checkpoint)
        self.device = select_device(device, "device")
        self._loaded: tuple[Any, torch.nn.Module | None] = (object(), None)

    def model(self, checkpoint: Any) -> torch.nn.Module:
        """The U-Net of ``checkpoint`` on the sampler's device, in eval mode (the last one is
        kept)."""
        if self._loaded[0] is not checkpoint and not _same(self._loaded[0], checkpoint):
            unet = self.load(checkpoint)
            if not isinstance(unet, torch.nn.Module):
                raise TypeError(
                    f"checkpoint {checkpoint!r}: load returned a {type(unet).__name__}, not a "
                    "U-Net "
                    "(a torch.nn.Module such as UNet2DConditionModel)"
                )
            self._loaded = (checkpoint, unet.to(self.device).eval())
        return self._loaded[1]

    @torch.no_grad()
    def sample(self, checkpoint: Any, prompt: Prompt, n: int, seed: int) -> np.ndarray:
        """``n`` images of ``prompt`` from ``checkpoint``, (n, C, H, W) in [0, 1]; the same for the
        same seed."""
        unet = self.model(checkpoint)
        condition = {
            k: None if v is None else v.to(self.device)
            for k, v in self.condition(prompt, n).items()
        }
        generator = torch.Generator().manual_seed(int(seed))
        out = []
        for start in range(0, n, self.batch):
            rows = slice(start, min(start + self.batch, n))
            out.append(
                self._draw(
                    unet,
                    {k: None if v is None else v[rows] for k, v in condition.items()},
                    rows.stop - rows.start,
                    generator,
                )
            )
        return np.concatenate(out) if out else np.empty((0, *self.shape), dtype=np.float32)

    def _draw(
        self, unet: torch.nn.Module, condition: dict, n: int, generator: torch.Generator
    ) -> np.ndarray:
        scheduler = copy.deepcopy(self.scheduler)  # set_timesteps and step keep state
        scheduler.set_timesteps(self.steps)
        x = (
            torch.randn((n, *self.shape), generator=generator).to(self.device)
            * scheduler.init_noise_sigma
        )
        # DDPM, DDIM, Euler, ...
        takes_generator = "generator" in inspect.signature(scheduler.step).parameters
        for t in scheduler.timesteps:
            eps = unet(scheduler.scale_model_input(x, t), t, **condition).sample
            x = scheduler.step(
                eps, t, x, **({"generator": generator} if takes_generator else {})
            ).prev_sample
        return ((x.clamp(-1, 1) + 1) / 2).float().cpu().numpy()


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # tensors, modules: identity only
        return False
