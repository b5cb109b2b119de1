"""Many training runs in one process, trained as one batched model (issue #54; the command:
empirical.ensemble).

A small net at batch 64 leaves a GPU mostly idle, and separate processes only take turns on it. Here
the members' parameters are stacked (``torch.func.stack_module_state``) and one update runs every
member's loss at once (``torch.func.vmap`` over ``functional_call``): one launch of each kernel for
all members.

Each member is a run of its own, equal to the same run trained alone (``python -m empirical.train``,
same seed) to rounding: its own folder in the same format (config.json, trajectories.csv,
metrics.jsonl, checkpoints/last.pt), its own data (seed, separations), batches, random streams
(times, noise, dropout masks, each drawn from the generator the run alone would draw from), gradient
clipping, optimizer state, EMA and logs. Every command reads a member's folder as it reads a run's,
and ``empirical.train`` can resume it alone. Evaluation: every member's naive samples are drawn at
once (empirical.training.batched_sampling), each from its own generators, and so are
over-prompting's draws (``Stacked.elicited``); the probe's reading, the other protocols and saving
run member by member.

Members share everything but :data:`MEMBER_KEYS` (the net, the optimizer, the schedule, the
evaluation): a seed sweep, or a sweep of separations, of one preset. Resuming is kill-safe: each
member resumes from its own last.pt; members saved at different steps (a kill between two saves) are
brought level first, the ones behind trained together until they reach the others.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from empirical.nets.device import autocast
from empirical.nets import unet
from empirical.training.batched_sampling import sample_members, sizes_ok
from empirical.training.config import TrainConfig
from empirical.nets.ema import ema_decay
from empirical.training import protocols
from empirical.training.evaluate import naive_requests
from empirical.training.run import Diverged, Run, optimizer
from empirical.training.threaded import Threaded, account

# what members may differ in (config keys); everything else is shared
MEMBER_KEYS = ("seed", "sep", "per_class", "mask_p", "mask_classes", "mask_concepts")


def check_shared(cfgs: Sequence[TrainConfig]) -> None:
    """ValueError naming every key the members differ in that they must share."""
    first = {k: v for k, v in cfgs[0].to_json().items() if k not in MEMBER_KEYS}
    for i, cfg in enumerate(cfgs[1:], 1):
        other = cfg.to_json()
        diff = [k for k in first if other.get(k) != first[k]]
        if diff:
            said = ", ".join(
                f"{k} ({first[k]!r} in member 0, {other.get(k)!r} in member {i})" for k in diff
            )
            raise ValueError(
                f"an ensemble's members may differ only in {', '.join(MEMBER_KEYS)}; these "
                f"differ: {said}"
            )


def streams_now(device: torch.device) -> dict[str, torch.Generator | None]:
    """Generators at this process's random states now: where a run alone, just opened, draws
    next."""
    cpu = torch.Generator()
    cpu.set_state(torch.get_rng_state())
    cuda = None
    if device.type == "cuda":
        cuda = torch.Generator(device=device)
        cuda.set_state(torch.cuda.get_rng_state(device))
    return {"cpu": cpu, "cuda": cuda}


class _Loss(nn.Module):
    """The VDM's loss as a module's forward, given its draws (what ``functional_call`` calls per
    member)."""

    def __init__(self, vdm: nn.Module):
        super().__init__()
        self.vdm = vdm

    def forward(self, x, h, noise, masks):
        with unet.given_masks(masks), unet.explicit_attention():
            return self.vdm.loss(x, h, noise=noise)


class Stacked:
    """K opened runs (:class:`empirical.training.run.Run`, each with its own ``streams``) at the
    same step, trained as one batched model (the GPU's engine).

    ``train_step`` updates every member at once; ``unstack`` writes the stacked state back into each
    member's own model, EMA and optimizer, so that its ``evaluate`` and ``save`` are the ones of a
    run alone.
    """

    def __init__(self, runs: Sequence[Run]):
        steps = {run.step for run in runs}
        if len(steps) != 1:
            raise ValueError(
                f"an ensemble trains members at one step; these are at {sorted(steps)}"
            )
        self.runs, self.cfg, self.device = list(runs), runs[0].cfg, runs[0].device
        self.sample_at_once = self.device.type == "cuda"
        self.loss = _Loss(copy.deepcopy(runs[0].vdm)).train()
        params, self.buffers = stack_module_state([run.vdm for run in runs])
        self.params = {k: v.detach().requires_grad_() for k, v in params.items()}
        self.ema = None
        if self.cfg.ema > 0:
            self.ema = {
                k: v.detach() for k, v in stack_module_state([r.ema for r in runs])[0].items()
            }
        self.opt = optimizer(list(self.params.values()), self.cfg)
        self._stack_optimizer()
        net = self.cfg.clip_scope == "net"
        self.clipped = [k for k in self.params if not net or k.startswith("net.")]
        drops = [m for m in self.loss.modules() if isinstance(m, unet.Dropout)]
        self.drop = drops[0] if drops else None  # draws every member's masks (its p, its lanes)
        self.shapes = self._mask_shapes(drops)
        self.batched = vmap(self._one)

    def _one(self, params, buffers, x, h, noise, masks):
        state = {f"vdm.{k}": v for k, v in params.items()} | {
            f"vdm.{k}": v for k, v in buffers.items()
        }
        return functional_call(self.loss, state, (x, h, noise, masks))

    def _mask_shapes(self, drops: list) -> list[tuple[int, ...]]:
        """The shape of every dropout mask one loss draws, in call order (one forward of the first
        member's model; it draws from the process's stream, which is no member's)."""
        shapes: list[tuple[int, ...]] = []

        def record(module, args):
            if module.training and module.p > 0:
                shapes.append(tuple(args[0].shape))

        hooks = [m.register_forward_pre_hook(record) for m in drops]
        run = self.runs[0]
        try:
            with torch.no_grad():
                self.loss.vdm.loss(*run.batch())
        finally:
            for hook in hooks:
                hook.remove()
        return shapes

    def _draws(self, run: Run) -> tuple[torch.Tensor, torch.Tensor, dict, list]:
        """A member's batch and its draws for this step, from its own stream, in the order alone."""
        x, h = run.batch()
        gen = run.streams["cuda"] or run.streams["cpu"]
        noise = self.loss.vdm.noise(x, gen)
        masks = [self.drop.mask(torch.Size(s), self.device, gen) for s in self.shapes]
        return x, h, noise, masks

    def train_step(self) -> list[dict[str, float] | Diverged | None]:
        """One AdamW update of every member on its own batch: each member's loss terms and gradient
        norm. Where a member's loss or gradient is not finite, nobody is updated: that member's
        entry is its :class:`Diverged`, the others' None (their streams put back: they redo the step
        as they drew it)."""
        cfg = self.cfg
        before = [
            {k: g.get_state() for k, g in r.streams.items() if g is not None} for r in self.runs
        ]
        xs, hs, noises, masks = zip(*(self._draws(run) for run in self.runs))
        noise = {k: torch.stack([n[k] for n in noises]) for k in noises[0]}
        stacked = [torch.stack(m) for m in zip(*masks)] if self.shapes else []
        with autocast(self.device, cfg.precision):
            terms = self.batched(
                self.params, self.buffers, torch.stack(xs), torch.stack(hs), noise, stacked
            )
        losses = terms["total"].mean(dim=1)
        self.opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        norms = self._clip()
        parts = [losses.detach().float(), norms.float()]
        rows = torch.stack(parts + [t.detach().float().mean(1) for t in terms.values()], 1).tolist()
        bad = [
            Diverged(run.cfg, run.step + 1, f"loss {loss:g}, gradient norm {norm:g}", run.saved)
            if not (math.isfinite(loss) and math.isfinite(norm))
            else None
            for run, (loss, norm, *_) in zip(self.runs, rows)
        ]
        if any(bad):
            for run, states in zip(self.runs, before):
                for k, state in states.items():
                    run.streams[k].set_state(state)
            return bad
        self.opt.step()
        if self.ema is not None:
            decay = ema_decay(cfg.ema, self.runs[0].step, cfg.ema_warmup)
            torch._foreach_lerp_(list(self.ema.values()), list(self.params.values()), 1 - decay)
        for run in self.runs:
            run.step += 1
        return [dict(zip(terms, row[2:])) | {"grad_norm": row[1]} for row in rows]

    def train_steps(self, n: int) -> list[Diverged | None]:
        """``n`` updates of every member (:meth:`train_step`), each one's terms added to its meter
        and the time to its wall-clock; stops at a divergence. Per member: its Diverged, or None
        (updated n times, or, where another diverged, not at that step)."""
        for _ in range(n):
            tick = time.perf_counter()
            results = self.train_step()
            took = time.perf_counter() - tick
            if any(isinstance(r, Diverged) for r in results):
                return [r if isinstance(r, Diverged) else None for r in results]
            for run, terms in zip(self.runs, results):
                account(run, terms, took)
        return [None] * len(self.runs)

    def each(self, work) -> None:
        """``work(run)`` for every member, one after the other."""
        for run in self.runs:
            work(run)

    def naive_images(self) -> dict[int, dict[str, np.ndarray]] | None:
        """Every member's naive evaluation samples drawn at once
        (empirical.training.batched_sampling), by ``id(run)``; None where each member draws its own:
        off (``sample_at_once``: on a GPU; on a CPU the vmapped sampler is slower,
        benchmarks/results/ensemble_gpu), or a class needs more than one sampling batch."""
        cfg = self.cfg
        samples = {c: cfg.samples_for(c) for c in cfg.data.classes}
        if not (self.sample_at_once and sizes_ok(list(samples.values()))):
            return None
        asks = [
            naive_requests(run.cfg.data, samples, run.cfg.seed, run.step, self.device)
            for run in self.runs
        ]
        drawn = self._sample(
            self.runs, [prompts for prompts, _ in asks], [gens for _, gens in asks]
        )
        return {id(run): own for run, own in zip(self.runs, drawn)}

    def _sample(
        self, runs: Sequence[Run], prompts: list[dict], generators: list[dict]
    ) -> list[dict]:
        """``runs``' evaluated models sampled at once (batched_sampling.sample_members) as the run
        config says."""
        cfg = self.cfg
        return sample_members(
            [run.model_eval for run in runs],
            prompts,
            generators,
            cfg.data.resolution,
            steps=cfg.sample_steps,
            guidance=cfg.guidance,
            precision=cfg.precision,
        )

    def elicited(self) -> dict[int, dict[str, dict]] | None:
        """Every member's in-training protocol readings at this checkpoint ({protocol: {label:
        reading}}, by ``id(run)``) for the protocols whose draws can be made at once
        (over-prompting), every member's drawn in one sampler as :meth:`naive_images`; None where
        each member draws its own (see there). A protocol or a member missing from the answer is
        drawn by the member alone."""
        cfg = self.cfg
        wanted = [p for p in cfg.protocols if protocols.drawn_at_once(p)]
        sizes = [cfg.select_samples] + [cfg.samples_for(c) for c in cfg.data.held_out]
        if not (self.sample_at_once and wanted and sizes_ok(sizes)):
            return None

        def draw(asks: list[dict], members: list[int]) -> list[dict]:
            return self._sample(
                [self.runs[i] for i in members],
                [{k: a.prompts() for k, a in own.items()} for own in asks],
                [{k: a.generator for k, a in own.items()} for own in asks],
            )

        out: dict[int, dict[str, dict]] = {id(run): {} for run in self.runs}
        for name in wanted:
            found = protocols.elicit_members(draw, self.runs, name, cfg.data.held_out, self.device)
            for run, readings in zip(self.runs, found):
                if readings is not None:
                    out[id(run)][name] = readings
        return out

    def close(self) -> None:
        """Nothing to release."""

    def _clip(self) -> torch.Tensor:
        """Each member's gradients clipped to norm ``clip`` over its clipped parameters, as
        ``clip_grad_norm_`` clips a run alone; returns the (K,) norms before clipping."""
        grads = [self.params[k].grad for k in self.clipped if self.params[k].grad is not None]
        norms = (
            torch.stack([g.float().pow(2).reshape(len(g), -1).sum(1) for g in grads]).sum(0).sqrt()
        )
        coef = (self.cfg.clip / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.view(-1, *[1] * (g.ndim - 1)).to(g.dtype))
        return norms

    def _stack_optimizer(self) -> None:
        """The members' optimizer states (resumed ones) stacked into the ensemble's optimizer."""
        states = [run.opt.state_dict() for run in self.runs]
        if not states[0]["state"]:
            return
        full = self.opt.state_dict()
        full["state"] = {
            i: {
                key: value if key == "step" else torch.stack([s["state"][i][key] for s in states])
                for key, value in first.items()
            }
            for i, first in states[0]["state"].items()
        }
        self.opt.load_state_dict(full)

    @torch.no_grad()
    def unstack(self) -> None:
        """Write the stacked weights, EMA and optimizer state back into every member's own."""
        full = self.opt.state_dict()
        for k, run in enumerate(self.runs):
            for name, p in run.vdm.named_parameters():
                p.copy_(self.params[name][k])
            if self.ema is not None:
                for name, p in run.ema.named_parameters():
                    p.copy_(self.ema[name][k])
            own = run.opt.state_dict()
            own["state"] = {
                i: {key: v.clone() if key == "step" else v[k].clone() for key, v in st.items()}
                for i, st in full["state"].items()
            }
            run.opt.load_state_dict(own)

    @torch.no_grad()
    def sync_schedule(self) -> None:
        """Only the noise schedule's two scalars back into each member (what a training record
        reads)."""
        for k, run in enumerate(self.runs):
            for name, p in run.vdm.gamma.named_parameters():
                p.copy_(self.params[f"gamma.{name}"][k])


def engine_name(runs: Sequence[Run], name: str = "auto") -> str:
    """``stacked`` or ``threaded``: the one named, or auto's choice (stacked on a GPU, threaded on a
    CPU)."""
    if name == "auto":
        return "stacked" if runs[0].device.type == "cuda" else "threaded"
    if name not in ENGINES:
        raise ValueError(f"engine {name!r} is not valid; valid: auto, {', '.join(ENGINES)}")
    return name


def engine(runs: Sequence[Run], name: str = "auto", workers: int = 1) -> Stacked | Threaded:
    """The ensemble of ``runs`` with engine ``name`` (:func:`engine_name`); ``workers``: the
    threaded engine's threads."""
    return Stacked(runs) if engine_name(runs, name) == "stacked" else Threaded(runs, workers)


ENGINES = ("stacked", "threaded")
