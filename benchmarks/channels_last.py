"""`small`'s network in NCHW against channels-last memory, bf16 autocast and fp32: one AdamW step.

    python benchmarks/channels_last.py [--threads 2] [--rounds 4] [--profile]

One AdamW update of the VDM loss on a batch of 64 images at 24 px (the U-Net (32, 64, 128), 1 block:
`--preset small`), each of the four setups built once and warmed up, then timed in interleaved
rounds of 5 steps, best round of each (wall time). The last column is the step rate over NCHW's at
the same precision. ``--profile``: torch's operator table of 3 bf16 steps in each layout, where the
time goes (convolutions, GroupNorm, copies). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from empirical.nets.unet import UNet  # noqa: E402
from empirical.nets.vdm import VDM  # noqa: E402

LAYOUTS, PRECISIONS = ("nchw", "channels-last"), ("bf16", "fp32")


def setup(layout: str):
    """(model, optimizer, images, conditions) of `small`'s net, in ``layout``."""
    torch.manual_seed(0)
    vdm = VDM(UNet((32, 64, 128), 1))
    x, h = torch.rand(64, 3, 24, 24), torch.rand(64, 11)
    if layout == "channels-last":
        vdm = vdm.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return vdm, torch.optim.AdamW(vdm.parameters(), 1e-3, fused=True), x, h


def step(vdm, opt, x, h, precision: str) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        loss = vdm.loss(x, h)["total"].mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--profile", action="store_true", help="also the operator tables")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    built = {(lay, pre): setup(lay) for lay in LAYOUTS for pre in PRECISIONS}
    for (_, pre), parts in built.items():
        for _ in range(3):
            step(*parts, pre)
    best = dict.fromkeys(built, float("inf"))
    for _ in range(args.rounds):
        for (lay, pre), parts in built.items():
            start = time.perf_counter()
            for _ in range(5):
                step(*parts, pre)
            best[lay, pre] = min(best[lay, pre], (time.perf_counter() - start) / 5)
    print(f"{args.threads} threads, batch 64 at 24 px, best of {args.rounds} rounds of 5 steps")
    print("| layout | precision | ms per step | steps/s | vs NCHW |\n|---|---|---|---|---|")
    for (lay, pre), seconds in best.items():
        ratio = best["nchw", pre] / seconds
        print(f"| {lay} | {pre} | {seconds * 1e3:.1f} | {1 / seconds:.2f} | {ratio:.2f}x |")
    if args.profile:
        from torch.profiler import profile

        for lay in LAYOUTS:
            with profile() as prof:
                for _ in range(3):
                    step(*built[lay, "bf16"], "bf16")
            print(f"\n{lay}, bf16, 3 steps:")
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))


if __name__ == "__main__":
    main()
