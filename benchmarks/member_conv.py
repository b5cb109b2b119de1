"""Ways to run K ensemble members' convolutions, timed at a preset's own conv layers (issue #54's next step).

    python benchmarks/member_conv.py [--preset small] [--ks 4,24] [--reps 20] [--json FILE]

On an H200 the stacked engine's step at K = 24 spends 65% of its GPU time in the convolutions that vmap turns into
grouped ones, run by cuDNN's generic kernel between NCHW/NHWC conversions (docs/speed.md). This times, for every
Conv2d of the preset's UNet at its batch (shapes recorded by a forward pass), the forward and backward of K
members' convolutions written five ways, and checks that each equals member-by-member convolutions:

- ``vmap``: ``torch.func.vmap`` of ``F.conv2d`` over stacked weights (what the stacked engine does now);
- ``grouped``: one grouped convolution, members side by side in the channels (groups = K), NCHW;
- ``grouped_cl``: the same in channels-last (NHWC) memory, the layout tensor-core kernels want;
- ``bmm``: im2col (``F.unfold``) and one batched matrix product per layer (tensor cores on a GPU);
- ``loop``: K separate convolutions (the reference, and a baseline).

Prints seconds a step (all conv layers, forward + backward) per way and its speed against ``vmap``; on a GPU in
bf16 autocast as the engine trains, on a CPU in fp32. The JSON keeps the same numbers with the device's name.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from empirical.training.checkpoint import build_model  # noqa: E402
from empirical.training.config import make_config  # noqa: E402


def conv_layers(preset: str) -> list[dict]:
    """Every Conv2d of the preset's net as one forward pass at its batch calls it: shapes, stride, padding."""
    cfg = make_config(preset)
    net = build_model(cfg).net
    layers = []

    def record(module, inputs, _output):
        layers.append(
            dict(
                x=tuple(inputs[0].shape),
                w=tuple(module.weight.shape),
                stride=module.stride[0],
                padding=module.padding[0],
            )
        )

    for module in net.modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(record)
    r = cfg.resolution
    with torch.no_grad():
        net(
            torch.zeros(cfg.batch, 3, r, r),
            torch.zeros(cfg.batch),
            torch.zeros(cfg.batch, net.h_dim),
        )
    return layers


def vmap_way(x, w, b, stride, padding):
    return torch.func.vmap(lambda x, w, b: F.conv2d(x, w, b, stride, padding))(x, w, b)


def grouped(x, w, b, stride, padding, channels_last=False):
    k, n, c = x.shape[:3]
    xs = x.transpose(0, 1).reshape(n, k * c, *x.shape[3:])
    ws = w.reshape(k * w.shape[1], *w.shape[2:])
    if channels_last:
        xs = xs.contiguous(memory_format=torch.channels_last)
        ws = ws.contiguous(memory_format=torch.channels_last)
    y = F.conv2d(xs, ws, b.reshape(-1), stride, padding, groups=k)
    return y.reshape(n, k, -1, *y.shape[2:]).transpose(0, 1)


def bmm(x, w, b, stride, padding):
    k, n, c, h, wd = x.shape
    o, size = w.shape[1], w.shape[-1]
    cols = F.unfold(x.reshape(k * n, c, h, wd), size, padding=padding, stride=stride)
    cols = cols.reshape(k, n, c * size * size, -1)
    y = torch.einsum("koc,kncl->knol", w.reshape(k, o, -1), cols) + b[:, None, :, None]
    side = (h + 2 * padding - size) // stride + 1
    return y.reshape(k, n, o, side, side)


def loop(x, w, b, stride, padding):
    return torch.stack([F.conv2d(x[i], w[i], b[i], stride, padding) for i in range(len(x))])


WAYS = {
    "vmap": vmap_way,
    "grouped": grouped,
    "grouped_cl": lambda *a: grouped(*a, channels_last=True),
    "bmm": bmm,
    "loop": loop,
}


def tensors(layers: list[dict], k: int, device: torch.device, seed: int = 0) -> list[tuple]:
    gen = torch.Generator().manual_seed(seed)

    def draw(*shape, scale=1.0):
        return (scale * torch.randn(*shape, generator=gen)).to(device).requires_grad_()

    return [
        (
            draw(k, *lay["x"]),
            draw(k, *lay["w"], scale=lay["w"][1] ** -0.5),
            draw(k, lay["w"][0]),
            lay,
        )
        for lay in layers
    ]


def step(way, batch: list[tuple], device: torch.device) -> list[torch.Tensor]:
    """Forward and backward of every layer; returns the outputs (for the equivalence check)."""
    outs = []
    with torch.autocast(device.type, torch.bfloat16, enabled=device.type == "cuda"):
        for x, w, b, lay in batch:
            outs.append(way(x, w, b, lay["stride"], lay["padding"]))
    sum(o.float().square().mean() for o in outs).backward()
    return outs


def seconds(way, batch: list[tuple], device: torch.device, reps: int) -> float:
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(3):
        step(way, batch, device)
    sync()
    start = time.perf_counter()
    for _ in range(reps):
        step(way, batch, device)
    sync()
    return (time.perf_counter() - start) / reps


def largest_difference(batch: list[tuple], device: torch.device) -> dict[str, float]:
    """Largest |output - loop's| / max |loop's| over every layer, per way (fp32 on a CPU: rounding only)."""
    ref = [o.detach().float() for o in step(loop, batch, device)]
    worst = {}
    for name, way in WAYS.items():
        outs = step(way, batch, device)
        worst[name] = max(
            float((o.detach().float() - r).abs().max() / r.abs().max().clamp_min(1e-12))
            for o, r in zip(outs, ref)
        )
    return worst


def measure(preset: str, ks: list[int], reps: int, device: torch.device) -> dict:
    layers = conv_layers(preset)
    rows = []
    for k in ks:
        batch = tensors(layers, k, device)
        times = {name: seconds(way, batch, device, reps) for name, way in WAYS.items()}
        diff = largest_difference(batch, device)
        rows.append(dict(k=k, seconds=times, max_rel_diff=diff))
        said = ", ".join(
            f"{n} {t * 1e3:.1f} ms ({times['vmap'] / t:.2f}x)" for n, t in times.items()
        )
        print(f"K={k}: {said}", flush=True)
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    return dict(preset=preset, device=name, conv_layers=len(layers), reps=reps, rows=rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument(
        "--ks", default="4,24", help="ensemble sizes, comma-separated (default 4,24)"
    )
    parser.add_argument("--reps", type=int, default=20, help="timed steps per way (default 20)")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args(argv)
    try:
        ks = [int(k) for k in args.ks.split(",")]
    except ValueError:
        parser.error(f"--ks {args.ks!r}: give whole numbers separated by commas, e.g. 4,24")
    if min(ks) < 1 or args.reps < 1:
        parser.error("--ks and --reps must be >= 1")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        result = measure(args.preset, ks, args.reps, device)
    except ValueError as err:  # an unknown preset, named with the valid ones
        parser.error(f"--preset: {err}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
