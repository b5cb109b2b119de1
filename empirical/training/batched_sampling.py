"""Many runs' evaluation samples drawn at once (issue #54): the naive prompts of every member of an
ensemble in one batched sampler, each member's images equal (to rounding) to the ones its run alone
draws.

A run alone samples each class apart (empirical.training.evaluate.naive: ``VDM.sample`` from the
class's own seeded generator, 50 steps). On a GPU that is 4 x 50 small forward passes a member,
launch-bound: 24 members took 30-36 s a checkpoint on an H100 (benchmarks/results/ensemble_gpu/).
Here the members' weights are stacked and every step of every (member, class) runs as one ``vmap``
over the members of one forward on all classes' rows; each (member, class) still draws its start and
its per-step noise from its own generator, in the order alone.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from empirical.nets import unet
from empirical.nets.device import autocast


ROWS_AT_ONCE = (
    8192  # images a forward of the sampler may hold (members x their rows; guidance doubles it)
)


class _Step(nn.Module):
    """One ancestral step z_t -> z_s of :meth:`empirical.nets.vdm.VDM.sample` as a module's forward,
    given its noise."""

    def __init__(self, vdm: nn.Module, guidance: float | None):
        super().__init__()
        self.vdm, self.guidance = vdm, guidance

    def forward(self, z, h, t, s, noise):
        vdm = self.vdm
        g_t, g_s = vdm.gamma(t), vdm.gamma(s)
        c = -torch.expm1(g_s - g_t)
        alpha_t, alpha_s = torch.sqrt(torch.sigmoid(-g_t)), torch.sqrt(torch.sigmoid(-g_s))
        sigma_t, sigma_s = torch.sqrt(torch.sigmoid(g_t)), torch.sqrt(torch.sigmoid(g_s))
        with unet.explicit_attention():
            eps_hat = vdm.eps_hat(z, g_t, h, self.guidance)
        return (alpha_s / alpha_t) * (z - c * sigma_t * eps_hat) + sigma_s * torch.sqrt(c) * noise


def _draw(generators, counts: dict[str, int], shape, device) -> torch.Tensor:
    """The next draw of every (member, class), each from its own generator: (K, rows, *shape)."""
    return torch.stack(
        [
            torch.cat(
                [
                    torch.randn((n, *shape), generator=gens[label], device=device)
                    for label, n in counts.items()
                ]
            )
            for gens in generators
        ]
    )


def _stepper(models: Sequence[nn.Module], guidance: float):
    """One ancestral step of every member at once: f(z, h, t, s, noise), the members' weights
    stacked."""
    params, buffers = stack_module_state(list(models))
    step = _Step(models[0], guidance or None).eval()

    def one(p, b, z, h, t, s, noise):
        state = {f"vdm.{k}": v for k, v in p.items()} | {f"vdm.{k}": v for k, v in b.items()}
        return functional_call(step, state, (z, h, t, s, noise))

    batched = vmap(one, in_dims=(0, 0, 0, 0, None, None, 0))
    return lambda z, h, t, s, noise: batched(params, buffers, z, h, t, s, noise)


@torch.no_grad()
def sample_members(
    models: Sequence[nn.Module],
    prompts: Sequence[dict[str, np.ndarray]],
    generators: Sequence[dict[str, torch.Generator]],
    resolution: int,
    *,
    steps: int,
    guidance: float,
    precision: str,
    rows_at_once: int = ROWS_AT_ONCE,
) -> list[dict[str, np.ndarray]]:
    """Each member's images (label -> (n, 3, R, R) in [0, 1]) for its prompts (label -> (n, 11)), as
    ``empirical.training.evaluate.generate`` draws them for that member alone from
    ``generators[k][label]``. The members share an architecture and every member the same labels and
    counts; they are sampled as many at a time as keep a forward within ``rows_at_once`` images (at
    least one: each member's draws are its own, so the grouping changes no image)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    counts = {label: len(rows) for label, rows in prompts[0].items()}
    for k, own in enumerate(prompts):
        if {label: len(rows) for label, rows in own.items()} != counts:
            raise ValueError(f"member {k} asks for other classes or counts than member 0")
    group = max(1, rows_at_once // sum(counts.values()))
    images = np.concatenate(
        [
            _sample(
                models[i : i + group],
                prompts[i : i + group],
                generators[i : i + group],
                counts,
                resolution,
                steps=steps,
                guidance=guidance,
                precision=precision,
            )
            for i in range(0, len(models), group)
        ]
    )
    edges = np.cumsum([0, *counts.values()])
    return [
        {label: images[k, edges[i] : edges[i + 1]] for i, label in enumerate(counts)}
        for k in range(len(models))
    ]


def _sample(models, prompts, generators, counts, resolution, *, steps, guidance, precision):
    """(K, rows, 3, R, R) images of a group of members, every class's rows in ``counts`` order."""
    device = next(models[0].parameters()).device
    shape = (3, resolution, resolution)
    h = torch.stack(
        [
            torch.as_tensor(np.concatenate([own[c] for c in counts]), dtype=torch.float32)
            for own in prompts
        ]
    ).to(device)
    trained = [m.training for m in models]
    for m in models:
        m.eval()
    try:
        step = _stepper(models, guidance)
        z = _draw(generators, counts, shape, device)
        times = torch.linspace(1, 0, steps + 1, device=device)
        with autocast(device, precision):
            for t, s in zip(times[:-1], times[1:]):
                z = step(z, h, t, s, _draw(generators, counts, shape, device))
    finally:
        for m, was in zip(models, trained):
            m.train(was)
    return z.float().clamp(0, 1).cpu().numpy()


def sizes_ok(counts: Sequence[int]) -> bool:
    """Whether every class fits one sampling batch of ``empirical.training.evaluate.generate``
    (256), where a run alone draws a class's noise in one piece (more rows are drawn batch by batch,
    an order this sampler does not keep)."""
    return all(0 < n <= 256 for n in counts)
