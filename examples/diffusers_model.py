"""A diffusers model in concept space, end to end: train a small conditional U-Net on the package's 2x2 data,
keep its checkpoints, and walk them with the package's probe (docs/your-model.md, "A diffusers model").

    python examples/diffusers_model.py OUT --probe empirical/probes/color-size-24px [--steps 800]

Needs diffusers: pip install -c constraints.txt -e ".[diffusers]" from a clone. The model is a diffusers ``UNet2DConditionModel`` conditioned on the
package's concept vector (11 numbers per image, embedded and added to the time embedding), trained with
diffusers' ``DDPMScheduler`` on classes 00, 01 and 10 (11 held out), saved with ``save_pretrained`` every ``--every``
steps (``--condition labels``: a ``UNet2DModel`` with one embedding per class label instead, walked
naively). The walk then draws every class from every checkpoint with DDIM, over-prompts the held-out class, and
writes OUT/walk/trajectories.csv; every fitting and figure command reads it. The probe sets the resolution:
the package ships one at 24 px (empirical/probes/color-size-24px); train another with ``python -m
empirical.probe --res 16 --out runs/probe/color-size-16px`` (a few minutes).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from diffusers import DDIMScheduler, DDPMScheduler, UNet2DConditionModel, UNet2DModel

from empirical.images.dgp import DataConfig, sample
from empirical.elicitation.diffusers_sampler import (
    DiffusersSampler,
    class_condition,
    concept_condition,
)
from empirical.probing.reader import ProbeReader
from empirical.elicitation.walk import walk

TRAIN, HELD_OUT = ("00", "01", "10"), ("11",)
CLASSES = TRAIN + HELD_OUT  # the label-conditioned model's label indices


def make_unet(resolution: int, width: int, condition: str = "vector"):
    """Two levels of two ResNet blocks, no attention (on a CPU, attention at 24 px costs 5x the whole net).
    ``vector``: the concept vector is embedded and added to the time embedding (a ``UNet2DConditionModel``
    with ``class_embed_type="projection"``); ``labels``: a ``UNet2DModel`` with one learned embedding per
    class label (``num_class_embeds``), the way most label-conditioned models are built."""
    shared = dict(
        sample_size=resolution,
        in_channels=3,
        out_channels=3,
        layers_per_block=2,
        block_out_channels=(width, 2 * width),
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
    )
    if condition == "labels":
        return UNet2DModel(**shared, add_attention=False, num_class_embeds=len(CLASSES))
    return UNet2DConditionModel(
        **shared,
        mid_block_type=None,
        class_embed_type="projection",
        projection_class_embeddings_input_dim=11,
    )


def train(
    out: Path,
    data: DataConfig,
    *,
    steps: int,
    every: int,
    width: int,
    batch: int = 32,
    per_class: int = 512,
    seed: int = 0,
    condition: str = "vector",
) -> list[tuple[int, str]]:
    """DDPM training (epsilon prediction, AdamW); returns the kept checkpoints as (step, folder)."""
    torch.manual_seed(seed)
    drawn = sample(data, {label: per_class for label in TRAIN}, seed)
    x, h = (
        torch.from_numpy(drawn.images) * 2 - 1,
        torch.from_numpy(drawn.h),
    )  # diffusers' images are in [-1, 1]
    if condition == "labels":  # a label's index in CLASSES, in place of its concept vector
        h = torch.tensor([CLASSES.index(label) for label in drawn.labels], dtype=torch.long)
    unet, noise_schedule = (
        make_unet(data.resolution, width, condition),
        DDPMScheduler(num_train_timesteps=1000),
    )
    noise_schedule.save_pretrained(out / "scheduler")
    opt = torch.optim.AdamW(unet.parameters(), lr=1e-3)
    kept, gen, start = [], torch.Generator().manual_seed(seed), time.perf_counter()
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            path = out / "checkpoints" / f"step_{step:06d}"
            unet.save_pretrained(path)
            kept.append((step, str(path)))
            print(f"step {step}: saved {path} ({time.perf_counter() - start:.0f} s)", flush=True)
        if step == steps:
            return kept
        rows = torch.randint(0, len(x), (batch,), generator=gen)
        noise = torch.randn(x[rows].shape, generator=gen)
        t = torch.randint(0, noise_schedule.config.num_train_timesteps, (batch,), generator=gen)
        extra = {} if condition == "labels" else {"encoder_hidden_states": None}
        eps = unet(noise_schedule.add_noise(x[rows], noise, t), t, class_labels=h[rows], **extra)
        eps = eps.sample
        loss = torch.nn.functional.mse_loss(eps, noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return kept


def parser() -> argparse.ArgumentParser:
    """The example's command line (the module docstring is its help)."""
    parser = argparse.ArgumentParser(
        prog="examples/diffusers_model.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--probe", required=True, help="a probe folder of the package (sets the resolution)"
    )
    parser.add_argument(
        "--steps", type=int, default=800, help="training steps (default %(default)s)"
    )
    parser.add_argument(
        "--every",
        type=int,
        default=200,
        help="steps between kept checkpoints (default %(default)s)",
    )
    parser.add_argument(
        "--width", type=int, default=32, help="channels of the first level (default %(default)s)"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=32,
        help="images per class and checkpoint (default %(default)s)",
    )
    parser.add_argument(
        "--sample-steps", type=int, default=25, help="DDIM steps per image (default %(default)s)"
    )
    parser.add_argument(
        "--condition",
        choices=("vector", "labels"),
        default="vector",
        help="vector: the concept vector, embedded (over-prompting works); labels: one learned "
        "embedding per class label, 11's never trained, so it has nothing to compose from "
        "(default %(default)s)",
    )
    return parser


def main(argv=None) -> Path:
    """Train the diffusers U-Net, then walk its checkpoints with the package's probe; returns the log."""
    args = parser().parse_args(argv)
    if args.steps < 1 or args.every < 1:
        parser().error(f"--steps {args.steps}, --every {args.every}: both must be >= 1")
    reader = ProbeReader(args.probe)
    data = DataConfig(
        ("color", "size"), {"color": 0.8, "size": 0.4}, resolution=reader.config.resolution
    )
    kept = train(
        args.out,
        data,
        steps=args.steps,
        every=args.every,
        width=args.width,
        condition=args.condition,
    )
    labels = args.condition == "labels"
    sampler = DiffusersSampler(
        DDIMScheduler.from_pretrained(args.out / "scheduler"),
        class_condition(CLASSES) if labels else concept_condition(data),
        shape=(3, data.resolution, data.resolution),
        steps=args.sample_steps,
        load=(UNet2DModel if labels else UNet2DConditionModel).from_pretrained,
    )
    log = walk(
        kept,
        sampler,
        reader,
        args.out / "walk",
        classes=list(TRAIN + HELD_OUT),
        held_out=list(HELD_OUT),
        samples=args.samples,
        strengths=() if labels else [1.5, 2, 3],  # a label has no strength to push
    )
    print(
        f"wrote {log}; next: python -m fitting.turn {args.out / 'walk'}; python -m figures.training {args.out / 'walk'}"
    )
    return log


if __name__ == "__main__":
    main()
