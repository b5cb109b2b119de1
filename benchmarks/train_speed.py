"""Training and sampling speed on this machine: U-Net sizes, or a shortened tiny run end to end.

  python benchmarks/train_speed.py [--threads 2]
  python benchmarks/train_speed.py --end-to-end [--steps 500] [--evals 5] [--threads 2]

Sizes: for each (resolution, channels, blocks), AdamW steps/s on batch 64 (VDM loss, backward,
step) and the time to draw 128 images with 50 ancestral steps (scaled from 32), best of 3 and of 2
after a warm-up, in fp32. The ratio column is the step rate relative to the tiny preset's network
(16 px, (32, 64), 1 block).

End to end: the tiny preset shortened to --steps updates and --evals evaluations (same network,
same evaluation per checkpoint), trained twice, each in a subprocess of its own and one after the
other: the plain eager path (precision=fp32, torch's own nn.Dropout, AdamW's per-parameter loop: the
package before issue 16) and the default path (precision=auto, the U-Net's cheap dropout mask, fused
AdamW). Then, for each, the parts:
a training step, sampling and probe reading of one checkpoint's evaluation, and one elicitation
protocol (overprompt, held-out class) at the last checkpoint. The last line is the end-to-end
speedup (wall time of the plain path over the default's), training and evaluation together.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from timing import best_time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from empirical.nets.unet import UNet  # noqa: E402
from empirical.nets.vdm import VDM  # noqa: E402

CASES = [
    (16, (16, 32), 1),
    (16, (32, 64), 1),
    (16, (32, 64), 2),
    (16, (32, 64, 128), 1),
    (16, (64, 128), 1),
    (32, (32, 64), 1),
    (32, (64, 128, 256), 2),
]


def measure(res: int, channels: tuple, blocks: int) -> tuple[int, float, float]:
    torch.manual_seed(0)
    vdm = VDM(UNet(channels, blocks))
    opt = torch.optim.AdamW(vdm.parameters(), 1e-3)
    x, h = torch.rand(64, 3, res, res), torch.rand(64, 11)

    def step():
        loss = vdm.loss(x, h)["total"].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()
    per_step = best_time(lambda: [step() for _ in range(5)], 3) / 5
    vdm.eval()
    with torch.no_grad():
        sampling = 4 * best_time(
            lambda: vdm.sample(torch.rand(32, 11), (3, res, res), steps=50), 2
        )  # scaled from 32 images
    return sum(p.numel() for p in vdm.net.parameters()), 1 / per_step, sampling


PATHS = {
    "eager": "plain eager (fp32, nn.Dropout, AdamW loop)",
    "default": "default (precision=auto)",
}


def short_tiny(path: str, steps: int, evals: int, probe: str):
    """The tiny preset cut to ``steps`` updates and ``evals`` evaluations, on the plain or the default path."""
    from empirical.training.config import make_config

    return make_config(
        "tiny",
        [
            f"steps={steps}",
            f"evals={evals}",
            "eval_dense=none",
            "grids=0",
            f"save_every={steps}",
            f"probe={probe}",
            f"precision={'fp32' if path == 'eager' else 'auto'}",
        ],
    )


def one_path(path: str, out: Path, steps: int, evals: int, probe: str) -> dict:
    """Train one shortened tiny run on ``path`` in this process and time its parts (JSON-ready)."""
    import numpy as np

    from empirical.training import checkpoint, evaluate, protocols, run
    from empirical.nets import unet
    from empirical.training.loop import train

    if path == "eager":
        unet.Dropout = (
            torch.nn.Dropout
        )  # the U-Net as it was: torch's dropout, one random draw per element
        run.optimizer = lambda params, cfg: torch.optim.AdamW(
            params, lr=cfg.lr, weight_decay=cfg.weight_decay
        )  # unfused
    cfg = short_tiny(path, steps, evals, probe)
    start = time.perf_counter()
    summary = train(cfg, out, progress=False)
    wall = time.perf_counter() - start
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    eval_s = sum(r["eval_s"] for r in records if r["kind"] == "eval")
    model = checkpoint.load_model(out, cfg.steps, cfg)
    from empirical.probing.reader import load

    probe_model = load(Path(probe))[0]
    label = cfg.data.held_out[0]
    h = np.repeat(evaluate.class_prompts(cfg.data)[label][None], cfg.samples_for(label), axis=0)
    gen = lambda: evaluate.generator_for(cfg.seed, cfg.steps, label, torch.device("cpu"))  # noqa: E731
    images = evaluate.generate(
        model, h, cfg.resolution, steps=cfg.sample_steps, generator=gen(), precision=cfg.precision
    )
    sampling = best_time(
        lambda: evaluate.generate(
            model,
            h,
            cfg.resolution,
            steps=cfg.sample_steps,
            generator=gen(),
            precision=cfg.precision,
        ),
        2,
    )
    reading = best_time(lambda: evaluate.score(probe_model, cfg.data, label, images), 3)
    t0 = time.perf_counter()
    protocols.elicit_step(model, probe_model, cfg, cfg.steps, "overprompt", [label])
    return {
        "wall_s": wall,
        "train_s": summary["wall_s"],
        "eval_s": eval_s,
        "step_ms": 1e3 * summary["wall_s"] / cfg.steps,
        "sampling_s": sampling,
        "reading_s": reading,
        "elicit_s": time.perf_counter() - t0,
        "samples": len(h),
    }


def end_to_end(args) -> None:
    """Both paths in subprocesses, one after the other; the table, then the speedup as the last line."""
    from empirical.nets import device as nets_device
    from empirical.training.probes import provide_probe

    probe = str(Path(args.probe).resolve())
    provide_probe(
        short_tiny("default", args.steps, args.evals, probe), Path(probe), progress=False
    )  # trained once, untimed
    device = torch.device("cpu")
    print(
        f"tiny cut to {args.steps} steps and {args.evals} evaluations, {args.threads} threads; bf16 native on this "
        f"CPU: {nets_device.bf16_native(device)} (auto -> {nets_device.resolve_precision('auto', device)})",
        flush=True,
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in PATHS:
            cmd = [
                sys.executable,
                __file__,
                "--one",
                path,
                "--out",
                f"{tmp}/{path}",
                "--steps",
                str(args.steps),
                "--evals",
                str(args.evals),
                "--threads",
                str(args.threads),
                "--probe",
                probe,
            ]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"the {path} run failed:\n{done.stderr[-2000:]}")
            results[path] = json.loads(done.stdout.strip().splitlines()[-1])
    from doc_tables import train_end_to_end  # benchmarks/: the table docs/speed.md shows

    doc = {"steps": args.steps, "evals": args.evals, "threads": args.threads, **results}
    print(train_end_to_end(doc))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--end-to-end", action="store_true", help="time a shortened tiny run on both paths"
    )
    parser.add_argument(
        "--steps", type=int, default=500, help="updates of the shortened tiny run (default 500)"
    )
    parser.add_argument("--evals", type=int, default=5, help="evaluations after step 0 (default 5)")
    parser.add_argument(
        "--probe",
        default="runs/probe/color-size-16px",
        help="probe folder (trained there if missing)",
    )
    parser.add_argument("--json", help="also write the measurements here")
    parser.add_argument("--one", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        print(json.dumps(one_path(args.one, args.out, args.steps, args.evals, args.probe)))
        return
    if args.end_to_end:
        end_to_end(args)
        return
    rows = [(case, *measure(*case)) for case in CASES]
    base = next(r[2] for r in rows if r[0] == (16, (32, 64), 1))
    print(
        f"{'res':>4} {'channels':>16} {'blocks':>6} {'params':>9} {'steps/s':>8} {'vs tiny':>8} {'sample 128':>11}"
    )
    for (res, ch, blocks), params, rate, sampling in rows:
        print(
            f"{res:>4} {str(ch):>16} {blocks:>6} {params / 1e6:>8.2f}M {rate:>8.2f} {rate / base:>7.2f}x {sampling:>10.1f}s"
        )


if __name__ == "__main__":
    main()
