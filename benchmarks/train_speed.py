"""Training and sampling speed of U-Net sizes on this machine: what fits the 15-minute tiny budget.

  python benchmarks/train_speed.py [--threads 2]

For each (resolution, channels, blocks): AdamW steps/s on batch 64 (VDM loss, backward, step) and
the time to draw 128 images with 50 ancestral steps (scaled from 32), best of 3 and of 2 after a warm-up. The ratio
column is the step rate relative to the tiny preset's network (16 px, (32, 64), 1 block).
"""

import argparse

import torch
from timing import best_time

from empirical.unet import UNet
from empirical.vdm import VDM

CASES = [(16, (16, 32), 1), (16, (32, 64), 1), (16, (32, 64), 2), (16, (32, 64, 128), 1), (16, (64, 128), 1),
         (32, (32, 64), 1), (32, (64, 128, 256), 2)]


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
        sampling = 4 * best_time(lambda: vdm.sample(torch.rand(32, 11), (3, res, res), steps=50), 2)  # scaled from 32 images
    return sum(p.numel() for p in vdm.net.parameters()), 1 / per_step, sampling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [(case, *measure(*case)) for case in CASES]
    base = next(r[2] for r in rows if r[0] == (16, (32, 64), 1))
    print(f"{'res':>4} {'channels':>16} {'blocks':>6} {'params':>9} {'steps/s':>8} {'vs tiny':>8} {'sample 128':>11}")
    for (res, ch, blocks), params, rate, sampling in rows:
        print(f"{res:>4} {str(ch):>16} {blocks:>6} {params / 1e6:>8.2f}M {rate:>8.2f} {rate / base:>7.2f}x {sampling:>10.1f}s")


if __name__ == "__main__":
    main()
