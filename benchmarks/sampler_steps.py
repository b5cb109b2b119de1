"""Does the evaluation need 50 sampler steps? The concept-space reading of finished runs' checkpoints at fewer steps.

  python benchmarks/sampler_steps.py RUN_DIR [RUN_DIR ...] [--steps 50 25 12] [--checkpoints 481 1165 2378 5000]

For each run and checkpoint, every class is sampled as the naive evaluation samples it (same noise
stream, the run's precision) with each step count, and a second time with 50 steps on an independent
noise stream (the sampling noise floor). Printed per step count: the mean and max over (run,
checkpoint, class) of the distance between its concept-space point and the 50-step point, of the
total-variation distance between their shares (what the samples were read as), and the same for the
independent 50-step draw; and the time per checkpoint. A step count whose distances sit at the noise
floor reads the same concept space.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from empirical.training import checkpoint, evaluate  # noqa: E402
from empirical.elicitation.finished_run import load_run  # noqa: E402
from empirical.probing.reader import load as load_probe  # noqa: E402


def readings(model, probe, cfg, step: int, steps: int, stream: int) -> dict[str, evaluate.Point]:
    """Every class's naive reading at a checkpoint with ``steps`` sampler steps, on the given noise stream."""
    out = {}
    for label, h in evaluate.class_prompts(cfg.data).items():
        gen = evaluate.generator_for(cfg.seed, step, label, torch.device("cpu"), stream=stream)
        n = cfg.samples_for(label)
        images = evaluate.generate(
            model,
            np.repeat(h[None], n, axis=0),
            cfg.resolution,
            steps=steps,
            generator=gen,
            precision=cfg.precision,
        )
        out[label] = evaluate.score(probe, cfg.data, label, images)
    return out


def tv(a: dict, b: dict) -> float:
    """Total-variation distance between two share dicts."""
    keys = set(a) | set(b)
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--steps", type=int, nargs="+", default=[25, 12])
    parser.add_argument("--checkpoints", type=int, nargs="+", default=[481, 1165, 2378, 5000])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = {s: {"dz": [], "tv": [], "time": []} for s in [*args.steps, "50, other draw"]}
    for run in args.runs:
        cfg, doc = load_run(run)
        probe = load_probe(Path(doc["probe"]["path"]))[0]
        for step in args.checkpoints:
            model = checkpoint.load_model(run, step, cfg)
            t0 = time.perf_counter()
            ref = readings(model, probe, cfg, step, 50, evaluate.SCORE)
            ref_time = time.perf_counter() - t0
            for s in [*args.steps, "50, other draw"]:
                t0 = time.perf_counter()
                got = readings(
                    model,
                    probe,
                    cfg,
                    step,
                    50 if isinstance(s, str) else s,
                    evaluate.SELECT if isinstance(s, str) else evaluate.SCORE,
                )
                rows[s]["time"].append(time.perf_counter() - t0)
                for label, p in got.items():
                    q = ref[label]
                    if np.isfinite(p.z).all() and np.isfinite(q.z).all():
                        rows[s]["dz"].append(float(np.linalg.norm(p.z - q.z)))
                    rows[s]["tv"].append(tv(p.shares, q.shares))
            print(f"{run.name} step {step}: 50 steps {ref_time:.1f} s", flush=True)
    print(
        f"{'sampler steps':>16} {'|dz| mean':>10} {'|dz| max':>9} {'TV mean':>8} {'TV max':>7} {'s/checkpoint':>13}"
    )
    for s, r in rows.items():
        print(
            f"{s!s:>16} {np.mean(r['dz']):>10.3f} {np.max(r['dz']):>9.3f} {np.mean(r['tv']):>8.3f} {np.max(r['tv']):>7.3f} "
            f"{np.mean(r['time']):>13.1f}"
        )


if __name__ == "__main__":
    main()
