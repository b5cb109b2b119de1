"""A training run of this package as a sampler for :func:`empirical.elicitation.walk.walk` (the
walk's own-model case).

    from empirical.probing.reader import ProbeReader
    from empirical.elicitation.run_sampler import RunSampler
    from empirical.elicitation.walk import walk

    sampler = RunSampler("runs/train/tiny-color0.8-size0.2-seed0")
    walk(sampler.checkpoints, sampler, ProbeReader(sampler.probe_path), "runs/walked",
         classes=sampler.classes, held_out=[], samples=32, seeds=sampler.seeds)

A checkpoint is a step whose weights were kept (``RUN/checkpoints/step_NNNNNN.pt``, the weights the
run evaluated: the EMA weights when EMA was on). The plain prompt is the class's mean conditioning
vector, drawn as training drew it (the run's sampling steps, guidance and precision); ``strength`` s
> 1 over-prompts with reach 1 - 1/s (:func:`empirical.training.protocols.overprompt`: 2 goes half
way to the renderable limit). With ``seeds=sampler.seeds`` the plain draws are the run's own
evaluation draws, so the walk with the run's probe reproduces its naive log.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from empirical.training.checkpoint import load_model, saved_steps
from empirical.elicitation.finished_run import load_run
from empirical.nets.device import select_device
from empirical.training.evaluate import generate, score_seed
from empirical.training.protocols import prompt_vector
from empirical.elicitation.walk import SCORE, Prompt, seed_for


class RunSampler:
    """Draw images of a run's classes from its kept checkpoints (loaded one at a time, on
    ``device``)."""

    def __init__(self, run: str | Path, device: str = "cpu"):
        self.run = Path(run)
        self.cfg, doc = load_run(self.run)
        self.probe_path = doc["probe"]["path"]
        self.device = select_device(device, "device")
        self._loaded: tuple[int | None, torch.nn.Module | None] = (None, None)

    @property
    def classes(self) -> list[str]:
        return list(self.cfg.data.classes)

    @property
    def checkpoints(self) -> list[tuple[int, int]]:
        """(step, step) for every kept checkpoint, in order; the walk's first argument."""
        steps = saved_steps(self.run)
        if not steps:
            raise ValueError(
                f"{self.run}: no kept checkpoints (RUN/checkpoints/step_*.pt); train with "
                "keep_checkpoints=true"
            )
        return [(s, s) for s in steps]

    def seeds(self, step: int, label: str, stream: int) -> int:
        """The run's own seed of the plain draw (SCORE), an independent one for a choosing draw
        (SELECT)."""
        return (
            score_seed(self.cfg.seed, step, label)
            if stream == SCORE
            else seed_for(self.cfg.seed, step, label, stream)
        )

    def sample(self, checkpoint: int, prompt: Prompt, n: int, seed: int) -> np.ndarray:
        if prompt.label not in self.classes:
            raise ValueError(
                f"class {prompt.label!r}: the run's classes are {', '.join(self.classes)}"
            )
        h = prompt_vector(self.cfg.data, prompt.label, prompt.strength)
        step = int(checkpoint)
        if self._loaded[0] != step:
            self._loaded = (step, load_model(self.run, step, self.cfg, self.device))
        data = self.cfg.data
        generator = torch.Generator(device=self.device).manual_seed(int(seed))
        return generate(
            self._loaded[1],
            np.repeat(np.asarray(h, dtype=np.float32)[None], n, axis=0),
            data.resolution,
            steps=self.cfg.sample_steps,
            guidance=self.cfg.guidance,
            generator=generator,
            precision=self.cfg.precision,
        )
