"""Benchmark: K runs trained as one ensemble in one process (empirical.ensemble) against K separate processes.

    python benchmarks/ensemble_speed.py [--quick] [--preset small] [--json FILE]

For K = 1, 2, 4, 8, 16, 32 (--quick: 1 and 2): training steps per second of each run, and runs per hour
(K runs of the preset's length, training only: evaluation is the same work either way), for

  ensemble   one process training the K members together, all the machine's threads (CPU: 2);
  separate   K processes side by side, the threads shared out (CPU: max(1, 2 // K) each), as pipeline.batch
             runs them today.

Each row is timed after a warm-up, in processes of its own (nothing else training). On the CPU and, where one is
present, on the GPU (rows in ``gpu``; null without one). Equivalence: a member against the same run trained alone
(same seed) on the CPU in fp32 over 50 steps: the largest relative difference in the logged loss and the largest
in a concept-space point (--quick: the smoke preset's net; otherwise the preset's).

JSON keys: ``cpu`` and ``gpu`` (lists of {k, steps_per_s_ensemble, steps_per_s_separate, runs_per_hour_ensemble,
runs_per_hour_separate}; null where not timed), ``gpu_eval`` (seconds to evaluate the largest K's members at one
checkpoint: s_one_by_one, each drawing its own samples; s_at_once, every member's samples drawn at once), ``equivalence`` ({max_loss_diff, max_z_diff, steps, preset}; null with --devices cuda).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def way(engine: str) -> tuple[str, bool, float | None]:
    """A worker's engine spec, e.g. 'threaded-lockstep@5e-5': the engine, whether its members meet after every
    update (-lockstep: as empirical.ensemble ran them before 2026-11-29) and the threaded engine's interpreter
    switch interval in seconds (@: None, its default)."""
    name, _, switch = engine.partition("@")
    return (
        name.removesuffix("-lockstep"),
        name.endswith("-lockstep"),
        float(switch) if switch else None,
    )


def lockstep(ens, n: int) -> None:
    for _ in range(n):
        ens.train_step()


def gate(folder: str, procs: int, wait: float = 600.0) -> None:
    """Wait until all ``procs`` workers of one timing are warmed up, so that their timed spans start together (a
    worker that started later would otherwise time part of its span alone on the machine)."""
    ready = Path(folder).parent / "ready"
    ready.mkdir(exist_ok=True)
    (ready / Path(folder).name).touch()
    deadline = time.monotonic() + wait
    while len(list(ready.iterdir())) < procs:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{procs - len(list(ready.iterdir()))} worker(s) never got ready")
        time.sleep(0.005)


def worker(
    preset: str, k: int, steps: int, device: str, folder: str, engine: str, procs: int = 1
) -> tuple[float, float]:
    """Steps per second of each member of a K-member ensemble (k = 0: one run alone, empirical.train's path),
    timed from when all ``procs`` workers are ready: over the whole span (the ensemble's pace: members wait for
    each other at its end), and the mean of each member's own (its updates' time, without that wait; the
    lockstep engine does not keep it: the span's then)."""
    import torch

    from empirical.training.config import make_config
    from empirical.training import stacked
    from empirical.ensemble import open_members
    from empirical.training import threaded
    from empirical.training.threaded import updates

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    probe = [f"probe={Path(folder).parent}/probe"] if preset == "smoke" else []  # one, shared
    cfgs = [
        make_config(preset, [f"seed={i}", f"device={device}", *probe]) for i in range(max(k, 1))
    ]
    runs = open_members(cfgs, [Path(folder) / f"m{i}" for i in range(len(cfgs))], progress=False)
    if k == 0:  # as empirical.train updates it
        runs[0].vdm.train()
        train = partial(updates, runs[0])
    else:  # as empirical.ensemble updates them: from one record to the next
        (name, meet, switch), threads = way(engine), torch.get_num_threads()
        if stacked.engine_name(runs, name) == "threaded":
            torch.set_num_threads(max(1, threads // min(k, threads)))
        threaded.SWITCH = threaded.SWITCH if switch is None else switch
        ens = stacked.engine(runs, name, workers=threads)
        train = partial(lockstep, ens) if meet else ens.train_steps
    train(3)  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    gate(folder, procs)
    walls, start = [run.wall for run in runs], time.perf_counter()
    train(steps)
    if device == "cuda":
        torch.cuda.synchronize()
    span = steps / (time.perf_counter() - start)
    own = [run.wall - w for run, w in zip(runs, walls)]
    return span, sum(steps / t for t in own) / len(own) if all(own) else span


def timed(
    preset: str, k: int, steps: int, device: str, threads: int, procs: int, engine: str = "auto"
) -> float:
    """The mean steps/s of each run: ``procs`` worker processes side by side, each an ensemble of k."""
    return timed_both(preset, k, steps, device, threads, procs, engine)[0]


def timed_both(
    preset: str, k: int, steps: int, device: str, threads: int, procs: int, engine: str = "auto"
) -> tuple[float, float]:
    """The mean steps/s of each run, over each worker's span and each member's own (:func:`worker`): ``procs``
    worker processes side by side, each an ensemble of k, their timed spans started together."""
    from pipeline.processes import thread_env

    env = thread_env(threads)
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--worker",
                    preset,
                    str(k),
                    str(steps),
                    device,
                    f"{tmp}/{i}",
                    engine,
                    str(procs),
                ],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(procs)
        ]
        rates = [job.communicate()[0].split()[-2:] for job in jobs]
        if any(job.returncode for job in jobs):
            raise RuntimeError(f"a worker failed (k={k}, procs={procs}, device={device})")
        span, own = (sum(float(r[i]) for r in rates) / len(rates) for i in (0, 1))
    return span, own


def table(preset: str, ks: list[int], steps: int, device: str, cores: int) -> list[dict]:
    from empirical.training.config import make_config

    length = make_config(preset).steps
    rows = []
    for k in ks:
        n = (
            max(5, steps * 2 // k) if device == "cpu" else steps
        )  # a CPU step of K members costs about K
        ens = timed(preset, k, n, device, cores, 1)
        sep = timed(preset, 0, n, device, max(1, cores // k), k)
        other = timed(preset, k, n, device, cores, 1, "stacked") if device == "cpu" else None
        row = {
            "k": k,
            "engine": "threaded" if device == "cpu" else "stacked",
            "steps_per_s_ensemble": round(ens, 3),
            "steps_per_s_separate": round(sep, 3),
            "runs_per_hour_ensemble": round(k * ens * 3600 / length, 3),
            "runs_per_hour_separate": round(k * sep * 3600 / length, 3),
        }
        if other is not None:
            row["steps_per_s_stacked"] = round(other, 3)  # the GPU's engine, on the CPU
        rows.append(row)
        print(
            f"{device} K={k:>2}: ensemble {ens:7.2f} steps/s a run, {row['runs_per_hour_ensemble']:7.2f} runs/h | "
            f"separate {sep:7.2f} steps/s a run, {row['runs_per_hour_separate']:7.2f} runs/h | "
            f"ratio {ens / sep:5.2f}"
            + ("" if other is None else f" | stacked {other:7.2f} steps/s a run"),
            flush=True,
        )
    return rows


def evaluation(preset: str, k: int, device: str) -> dict:
    """Seconds to evaluate K members at a checkpoint (sampling and the probe, as a run's evaluate): each drawing
    its own samples, one after the other, against the stacked engine drawing every member's at once."""
    import torch

    from empirical.training.config import make_config
    from empirical.ensemble import open_members
    from empirical.training.stacked import Stacked

    row = {"k": k}
    with tempfile.TemporaryDirectory() as tmp:
        cfgs = [make_config(preset, [f"seed={i}", f"device={device}"]) for i in range(k)]
        runs = open_members(cfgs, [Path(tmp) / f"m{i}" for i in range(k)], progress=False)
        ens = Stacked(runs)
        ens.sample_at_once = True  # timed on any device (by default on a GPU only)
        for mode in ("at_once", "one_by_one", "at_once"):  # the first a warm-up
            start = time.perf_counter()
            drawn = ens.naive_images() if mode == "at_once" else None
            for run in runs:
                run.evaluate(images=None if drawn is None else drawn[id(run)])
            if device == "cuda":
                torch.cuda.synchronize()
            row[f"s_{mode}"] = round(time.perf_counter() - start, 3)
    print(f"{device} K={k:>2}: evaluating every member {row}", flush=True)
    return row


def equivalence(preset: str, steps: int) -> dict:
    """A member of a two-member ensemble against its run alone, CPU, fp32, ``steps`` steps."""
    import numpy as np
    import torch

    from empirical.training.config import make_config
    from empirical.ensemble import train_members
    from empirical.training.loop import train
    from core.trajectory import read_csv

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        shared = [
            "precision=fp32",
            "device=cpu",
            f"steps={steps}",
            "evals=2",
            "log_every=1",
            "save_every=1000",
        ]
        if preset == "smoke":
            shared.append(f"probe={tmp}/probe")
        cfgs = [make_config(preset, [*shared, f"seed={s}"]) for s in (0, 1)]
        train_members(cfgs, [Path(tmp, "m0"), Path(tmp, "m1")], progress=False)
        train(cfgs[1], Path(tmp, "alone"), progress=False)

        def read(folder):
            rows = [
                json.loads(line)
                for line in Path(tmp, folder, "metrics.jsonl").read_text().splitlines()
            ]
            loss = {r["step"]: r["total"] for r in rows if r["kind"] == "train"}
            z = {
                (t.label, s): p
                for t in read_csv(Path(tmp, folder, "trajectories.csv"))
                for s, p in zip(t.step, t.z)
            }
            return loss, z

        (la, za), (lb, zb) = read("m1"), read("alone")
    loss = max(abs(la[s] - lb[s]) / abs(lb[s]) for s in lb)
    z = max(float(np.nanmax(np.abs(za[key] - zb[key]), initial=0.0)) for key in zb)
    return {"max_loss_diff": loss, "max_z_diff": z, "steps": steps, "preset": preset}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        preset, k, steps, device, folder, engine, procs = sys.argv[2:9]
        print(*worker(preset, int(k), int(steps), device, folder, engine, int(procs)))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="K = 1, 2 on the smoke net: within 3 minutes"
    )
    parser.add_argument("--preset", default="small", help="the runs' preset (default small)")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    parser.add_argument(
        "--ks", help="the K to time, e.g. 1,2,4 (default 1,2,4,8,16,32; --quick: 1,2)"
    )
    parser.add_argument(
        "--steps", type=int, help="timed steps a row (default 60; --quick 20), fewer for large K"
    )
    parser.add_argument(
        "--devices",
        default="cpu,cuda",
        help="where to time: cpu, cuda or both (default; cuda only where a GPU is present)",
    )
    args = parser.parse_args()
    import torch

    preset = "smoke" if args.quick else args.preset
    ks = (
        [int(k) for k in args.ks.split(",")]
        if args.ks
        else [1, 2]
        if args.quick
        else [1, 2, 4, 8, 16, 32]
    )
    steps = args.steps or (20 if args.quick else 60)
    devices = args.devices.split(",")
    if not set(devices) <= {"cpu", "cuda"} or not devices:
        parser.error(f"--devices {args.devices}: valid: cpu, cuda or cpu,cuda")
    out = {"cpu": None, "gpu": None, "gpu_eval": None, "equivalence": None}
    if "cpu" in devices:
        out["cpu"] = table(preset, ks, steps, "cpu", 2)
    if "cuda" in devices and torch.cuda.is_available():
        out["gpu"] = table(preset, ks, 10 * steps, "cuda", 1)
        out["gpu_eval"] = [evaluation(preset, max(ks), "cuda")]
    if "cpu" in devices:  # on the CPU in fp32 whatever the machine: --devices cuda leaves it out
        out["equivalence"] = equivalence("smoke" if args.quick else preset, 50)
        print(f"equivalence over 50 steps: {out['equivalence']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
