"""Train the conditional VDM on the concept data and log concept-space trajectories.

  python -m empirical.train --preset {smoke,tiny,paper} [--set KEY=VALUE ...] [--out DIR]

At every checkpoint of a schedule that is dense early (quadratic spacing), the model generates
``samples`` images for every class from the class's mean prompt; the frozen probe turns them into a
point in concept space and a joint accuracy. Outputs in DIR:

  config.json         the full configuration (and the probe's hash)
  trajectories.csv    one trajectory per class, protocol=naive, accuracy = joint accuracy
  metrics.jsonl       training records (step, loss terms in bits/dim, γ(0), γ(1), grad norm, wall
                      time, images/s) and evaluation records (per class z and accuracy)
  samples/            sample grids (PNG) at a few checkpoints
  checkpoints/        last.pt (for resuming) and the evaluated weights per checkpoint

Running the same command again resumes from the last checkpoint, even after kill -9: model,
optimizer, EMA, RNG states and step are restored, and the logs are rewritten from the checkpoint,
so nothing is lost or duplicated. On a CPU the resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from empirical import checkpoint, evaluate, protocols, runlog
from empirical.config import PRESETS, TrainConfig, describe, make_config, read_run_config
from empirical.data import mask, sample
from empirical.grid import grid
from empirical.elicit import elicit_step
from theory import cli
from theory.files import atomic_write, write_json


def training_set(cfg: TrainConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Images, conditioning vectors (masked where the config says) and which rows were masked."""
    data = cfg.data
    batch = sample(data, {label: cfg.per_class for label in data.train_classes}, cfg.seed)
    h, hit = mask(batch.h, batch.labels, concepts=cfg.mask_concepts, classes=cfg.mask_classes, p=cfg.mask_p, rng=cfg.seed + 1)
    return torch.from_numpy(batch.images).to(device), torch.from_numpy(h).to(device), hit


def batch_rows(step: int, n: int, size: int, seed: int) -> torch.Tensor:
    """Rows of the batch of update ``step``: consecutive slices of per-epoch permutations.

    A pure function of (step, seed), so a resumed run draws exactly the batches it would have.
    """
    start = step * size
    rows, need = [], size
    while need:
        epoch, offset = divmod(start, n)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 7919 + epoch))
        take = perm[offset:offset + need]
        rows.append(take)
        need -= take.numel()
        start += take.numel()
    return torch.cat(rows)


def load_probe(cfg: TrainConfig, out: Path, *, progress: bool):
    """The probe named by the config, trained and saved there first if it does not exist yet."""
    from empirical import probe as probe_mod

    path = Path(cfg.probe_path(str(out)))
    if path.suffix == ".pt" and not path.is_file():
        raise ValueError(f"probe={cfg.probe}: {path} is not a file; give an existing probe.pt, or a folder (a probe is "
                         "trained there if it has none)")
    if not (path / "probe.pt").exists() and not (path.suffix == ".pt" and path.exists()):
        cli.output_dir(path, f"probe={cfg.probe}:")
        setups = [name for name, s in probe_mod.SETUPS.items() if s["concepts"] == cfg.concepts]
        if not setups:
            valid = "; ".join(f"{n}: {s['concepts']}" for n, s in probe_mod.SETUPS.items())
            raise ValueError(f"no probe setup covers concepts {cfg.concepts}; valid: {valid}")
        pcfg = probe_mod.ProbeConfig(setup=setups[0], resolution=cfg.resolution, steps=cfg.probe_steps)
        print(f"train: no probe at {path}; training one ({pcfg.steps} steps at {cfg.resolution} px)", file=sys.stderr)
        _, doc = probe_mod.train_evaluate_save(pcfg, path, progress=progress)
        print(f"train: probe saved; worst per-concept accuracy {doc['min_accuracy']}", file=sys.stderr)
    model, pcfg, digest = probe_mod.load(path)
    if pcfg.concepts != cfg.concepts or pcfg.resolution != cfg.resolution:
        raise ValueError(f"{path}: the probe reads {pcfg.concepts} at {pcfg.resolution} px, the run needs "
                         f"{cfg.concepts} at {cfg.resolution} px; set probe=<folder> to another probe")
    return model, str(path), digest


def check_config(out: Path, cfg: TrainConfig) -> None:
    """A folder holding another run's config is an error, not something to overwrite."""
    path = out / "config.json"
    if not path.exists():
        return
    old = read_run_config(path)
    diff = [f"{k}: {old['train'].get(k)!r} -> {v!r}" for k, v in cfg.to_json().items()
            if k != "device" and old["train"].get(k) != v]
    if diff:
        raise ValueError(f"{out} holds a run with another config ({'; '.join(diff)}); "
                         f"use another --out, or the same settings to resume it")


def resume_state(out: Path, cfg: TrainConfig) -> dict | None:
    """The saved state to resume from (checkpoints/last.pt), checked against the config before anything is written."""
    last = out / "checkpoints" / "last.pt"
    if not last.exists():
        return None
    state = checkpoint.load(last)
    missing = [k for k in ("model", "optimizer", "rng", "step", "wall", "logs") if k not in state]
    if missing:
        raise ValueError(f"{last}: not a resumable checkpoint (missing {', '.join(missing)}); use another --out")
    saved = state.get("config") or {}
    diff = [k for k, v in cfg.to_json().items() if k != "device" and k in saved and saved[k] != v]
    if diff:
        raise ValueError(f"{last}: saved by a run with another config ({', '.join(f'{k}={saved[k]!r}' for k in diff)}); "
                         "use another --out, or the same settings to resume it")
    bad = [p for p in state["logs"].get("points", []) if not np.all(np.isfinite(p[2])) or not np.isfinite(p[3])]
    if bad:
        raise ValueError(f"{last}: step {state['step']} holds non-finite concept points (first at step {bad[0][0]}): the "
                         "run diverged before this version checked for it; start it again in another --out")
    return state


class Diverged(ValueError):
    """Training produced a non-finite loss, gradient or evaluation; nothing after the last good save is kept."""

    def __init__(self, cfg: TrainConfig, step: int, what: str, saved: int | None):
        kept = (f"checkpoints/last.pt still holds step {saved}, the last good state" if saved is not None
                else "nothing was saved")
        super().__init__(
            f"training diverged at step {step} ({what}); {kept}. Rerunning resumes there but diverges again at the same "
            f"step (batches are fixed by seed and step): start again in another --out with a smaller lr or clip "
            f"(now lr={cfg.lr:g}, clip={cfg.clip:g})")


class Logs:
    """What a run has logged: evaluation points and metric records (saved inside last.pt)."""

    def __init__(self, points: list | None = None, metrics: list | None = None):
        self.points = points or []  # [step, label, z list, accuracy]
        self.metrics = metrics or []

    def state(self) -> dict:
        return {"points": self.points, "metrics": self.metrics}

    def write(self, out: Path, cfg: TrainConfig, meta: dict) -> None:
        runlog.write(out, concepts=cfg.concepts, classes=cfg.data.classes, seed=cfg.seed, naive=self.points, meta=meta)
        text = "".join(json.dumps(r) + "\n" for r in self.metrics)
        atomic_write(out / "metrics.jsonl", lambda fh: fh.write(text))


class Meter:
    """Averages of the training records between two flushes."""

    def __init__(self):
        self.sums, self.count, self.start = {}, 0, time.perf_counter()

    def add(self, values: dict[str, float]) -> None:
        for k, v in values.items():
            self.sums[k] = self.sums.get(k, 0.0) + v
        self.count += 1

    def flush(self, step: int, batch: int, wall: float, gamma: nn.Module) -> dict:
        elapsed = time.perf_counter() - self.start
        with torch.no_grad():
            dev = gamma.b.device
            g0, g1 = float(gamma(torch.zeros((), device=dev))), float(gamma(torch.ones((), device=dev)))
        rec = {"kind": "train", "step": step, **{k: v / max(self.count, 1) for k, v in self.sums.items()},
               "gamma_0": g0, "gamma_1": g1, "wall_s": round(wall, 3),
               "images_per_s": round(self.count * batch / max(elapsed, 1e-9), 1)}
        self.__init__()
        return rec


def train(cfg: TrainConfig, out: Path, *, progress: bool = True, stop_after: int | None = None) -> dict:
    """Run (or resume) training; returns a summary. ``stop_after`` stops after that many updates (tests)."""
    out = Path(out)
    device = evaluate.select_device(cfg.device, "device=")
    check_config(out, cfg)
    state = resume_state(out, cfg)
    probe, probe_dir, probe_hash = load_probe(cfg, out, progress=progress)
    doc = {"train": cfg.to_json(), "probe": {"path": probe_dir, "hash": probe_hash},
           "concepts": list(cfg.concepts), "classes": cfg.data.classes, "held_out": cfg.data.held_out}
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "config.json", doc)
    meta = {"source": "empirical.train", "concepts": list(cfg.concepts), "held_out": cfg.data.held_out,
            "probe_hash": probe_hash, "config": cfg.to_json()}

    torch.manual_seed(cfg.seed)
    vdm = checkpoint.build_model(cfg).to(device)
    opt = torch.optim.AdamW(vdm.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = copy.deepcopy(vdm).requires_grad_(False) if cfg.ema > 0 else None
    x_all, h_all, _ = training_set(cfg, device)
    clipped = list((vdm.net if cfg.clip_scope == "net" else vdm).parameters())
    logs, step, wall = Logs(), 0, 0.0

    last = out / "checkpoints" / "last.pt"
    saved = None
    if state is not None:
        checkpoint.load_weights(vdm, state, last)
        opt.load_state_dict(state["optimizer"])
        if ema is not None:
            checkpoint.load_weights(ema, state, last, key="ema")
        torch.set_rng_state(state["rng"]["cpu"])
        if device.type == "cuda" and state["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state(state["rng"]["cuda"])
        logs, step, wall = Logs(**state["logs"]), state["step"], state["wall"]
        saved = step
        logs.write(out, cfg, meta)  # in case the last run died between saving and writing
        print(f"train: resuming {out} from step {step}", file=sys.stderr)

    evals = cfg.eval_schedule()
    grid_steps = {evals[int(i)] for i in np.linspace(0, len(evals) - 1, cfg.grids)} if cfg.grids else set()
    model_eval = ema if ema is not None else vdm

    def checkpoint_now(s: int, evaluated: bool) -> None:
        nonlocal saved
        state = {"model": vdm.state_dict(), "optimizer": opt.state_dict(), "ema": None if ema is None else ema.state_dict(),
                 "rng": {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state() if device.type == "cuda" else None},
                 "step": s, "wall": wall, "logs": logs.state(), "config": cfg.to_json()}
        if evaluated and cfg.keep_checkpoints:
            checkpoint.save(checkpoint.step_path(out, s), {"step": s, "model": model_eval.state_dict(), "config": cfg.to_json()})
        checkpoint.save(last, state)
        saved = s
        logs.write(out, cfg, meta)

    def evaluate_now(s: int) -> None:
        t0 = time.perf_counter()
        points = evaluate.naive(model_eval, probe, cfg.data, samples=cfg.samples, steps=cfg.sample_steps,
                                guidance=cfg.guidance, seed=cfg.seed, step=s)
        for p in points:
            if not (np.all(np.isfinite(p.z)) and np.isfinite(p.accuracy)):
                raise Diverged(cfg, s, f"the evaluation of class {p.label} gave z = {np.round(p.z, 3).tolist()}", saved)
        for p in points:
            logs.points.append([s, p.label, [float(v) for v in p.z], p.accuracy])
        record = {"kind": "eval", "step": s, "classes": {p.label: {"z": [round(float(v), 6) for v in p.z], "accuracy": p.accuracy}
                                                         for p in points}}
        if len(cfg.concepts) == 2:
            record["disentanglement"] = protocols.disentanglement(model_eval, cfg.data)
        for name in cfg.protocols:  # results keyed by step: a resumed run overwrites, never duplicates
            results = runlog.read_elicit(out, name)
            results[s] = elicit_step(model_eval, probe, cfg, s, name, cfg.data.held_out)
            runlog.write_elicit(out, name, results, {"classes": cfg.data.held_out, "during_training": True})
        logs.metrics.append({**record, "eval_s": round(time.perf_counter() - t0, 3)})
        if s in grid_steps:
            images = np.concatenate([p.images[:8] for p in points])
            labels = np.repeat([p.label for p in points], [min(8, len(p.images)) for p in points])
            grid(cfg.data, images, labels, 8, out / "samples" / f"step_{s:06d}.png", title=f"{out.name}: step {s}")

    if step == 0 and 0 in evals and not logs.points:
        evaluate_now(0)
        checkpoint_now(0, True)

    from tqdm import tqdm

    held = cfg.data.held_out[0]
    meter, evals_set = Meter(), set(evals)
    bar = tqdm(total=cfg.steps, initial=step, desc=f"train {cfg.preset}", unit="step", disable=None if progress else True)
    vdm.train()
    tick = time.perf_counter()
    try:
        while step < cfg.steps and (stop_after is None or stop_after > 0):
            rows = batch_rows(step, x_all.shape[0], cfg.batch, cfg.seed).to(device)
            with evaluate.autocast(device):
                terms = vdm.loss(x_all[rows], h_all[rows])
            loss = terms["total"].mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(clipped, cfg.clip)
            loss_value, norm_value = float(loss.detach()), float(grad_norm)
            if not (math.isfinite(loss_value) and math.isfinite(norm_value)):  # before the update poisons the weights
                raise Diverged(cfg, step + 1, f"loss {loss_value:g}, gradient norm {norm_value:g}", saved)
            opt.step()
            if ema is not None:
                torch._foreach_lerp_(list(ema.parameters()), list(vdm.parameters()), 1 - cfg.ema)
            step += 1
            meter.add({k: float(v.detach().mean()) for k, v in terms.items()} | {"grad_norm": float(grad_norm)})
            now = time.perf_counter()
            wall, tick = wall + now - tick, now
            is_eval, is_save = step in evals_set, step % cfg.save_every == 0 or step == cfg.steps
            if step % cfg.log_every == 0 or is_eval or is_save:
                rec = meter.flush(step, cfg.batch, wall, vdm.gamma)
                logs.metrics.append(rec)
                bar.set_postfix(loss=f"{rec['total']:.3f}", refresh=False)
            if is_eval:
                evaluate_now(step)
                last_z = next(p[2] for p in reversed(logs.points) if p[1] == held)
                bar.set_postfix(loss=f"{logs.metrics[-2]['total']:.3f}", **{f"z{held}": ",".join(f"{v:.2f}" for v in last_z)}, refresh=False)
            if is_eval or is_save:
                checkpoint_now(step, is_eval)
                tick = time.perf_counter()  # evaluation and saving are not training time
            bar.update(1)
            if stop_after is not None:
                stop_after -= 1
    finally:
        bar.close()
    return {"step": step, "wall_s": wall, "out": str(out), "probe_hash": probe_hash,
            "final": {p[1]: p[2] for p in logs.points if p[0] == step}}


@cli.command("train")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m empirical.train", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__, epilog="presets:\n" + describe() + "\n\nkeys for --set (defaults as in tiny):\n  " + ", ".join(
            f"{k}={v}" for k, v in TrainConfig().to_json().items() if k != "preset"),
    )
    parser.add_argument("--preset", default="tiny", help=f"one of {', '.join(PRESETS)} (default tiny)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field, e.g. --set steps=2000 --set sep.color=0.6 (repeatable)")
    parser.add_argument("--out", type=Path, default=None,
                        help="run folder (default runs/train/<preset>-color<Δ>-size<Δ>-seed<seed>); rerun to resume")
    args = parser.parse_args(argv)
    cfg = make_config(args.preset, args.overrides)
    out = args.out or Path("runs/train") / (f"{cfg.preset}-" + "-".join(f"{c}{v:g}" for c, v in cfg.sep.items()) + f"-seed{cfg.seed}")
    cli.output_dir(out, "--out")
    try:
        summary = train(cfg, out)
    except KeyboardInterrupt:
        print("train: interrupted; run the same command again to resume from the last checkpoint", file=sys.stderr)
        return 130
    final = "; ".join(f"{k}: ({', '.join(f'{v:.3f}' for v in z)})" for k, z in summary["final"].items())
    print(f"trained {summary['step']} steps in {summary['wall_s']:.0f} s of training; final points {final}")
    print(f"wrote {out / 'trajectories.csv'}, {out / 'metrics.jsonl'}, {out / 'samples'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
