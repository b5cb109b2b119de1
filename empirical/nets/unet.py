"""The conditional U-Net that predicts the noise ε̂(z_t, t, h) (paper App. A.2).

Layout, with channels (64, 128, 256) by default and 2 ResNet blocks per level:

    stem conv -> down[0] (R) -> down[1] (R/2) -> down[2] (R/4) -> mid (ResBlock, attention,
    ResBlock)
              -> up[2] (R/4) -> up[1] (R/2) -> up[0] (R) -> GroupNorm, GELU, zero-init conv, + input

A level downsamples with a stride-2 conv (the deepest does not) and upsamples with a 2x2 transposed
conv; each up level concatenates the skip of its down level before its first block.

Every ResNet block adds two projections to its features, broadcast over space: ``time`` (an MLP of
the shared time embedding) and ``cond`` (an MLP of the raw conditioning vector h: Linear -> GELU ->
Linear -> GELU). The module names are stable, for the latent interventions and embedding patching
that hook into them:

    down.<level>.<block>.cond    mid.0.cond    mid.2.cond    up.<level>.<block>.cond

(and ``.time`` likewise). :func:`cond_modules` lists them in order.
"""

from __future__ import annotations

import contextlib
import math
import threading
from typing import Sequence

import torch
from torch import nn
from torch.nn import functional as F

TIME_DIM, HIDDEN_DIM = 64, 256


def sinusoidal(t: torch.Tensor, dim: int = TIME_DIM) -> torch.Tensor:
    """(B,) times in [0, 1] -> (B, dim): sin and cos of 1000 t at frequencies log-spaced from 1 to
    1e-4."""
    half = dim // 2
    freqs = torch.exp(
        -math.log(1e4) * torch.arange(half, device=t.device, dtype=torch.float32) / (half - 1)
    )
    angles = 1000 * t.float()[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


# Where this thread's dropout masks come from, for many runs trained in one process
# (empirical.training.stacked): each run
# draws its masks from its own stream, as alone. Per thread: the runs of one process may train in
# threads.
_LOCAL = threading.local()


def _stack(name: str) -> list:
    if not hasattr(_LOCAL, name):
        setattr(_LOCAL, name, [])
    return getattr(_LOCAL, name)


@contextlib.contextmanager
def _pushed(name: str, value):
    """Inside, ``value`` tops this thread's stack ``name``."""
    stack = _stack(name)
    stack.append(value)
    try:
        yield
    finally:
        stack.pop()


@contextlib.contextmanager
def given_masks(masks: list[torch.Tensor]):
    """Inside, each Dropout in training takes the next of ``masks`` instead of drawing its own
    (under vmap, where nothing can be drawn per member)."""
    left = list(masks)  # Dropout takes them from the front
    with _pushed("given", left):
        yield
    if left:
        raise RuntimeError(f"{len(left)} dropout mask(s) given but not used")


def drawing_from(generator: torch.Generator | None):
    """Inside, each Dropout in training draws its mask from ``generator`` (None: torch's global
    stream)."""
    return _pushed("generator", generator)


class Dropout(nn.Module):
    """Inverted dropout whose mask costs a quarter of the random draws of ``nn.Dropout`` on a CPU.

    Each 64-bit draw of torch's generator gives four 16-bit lanes (the top one has 15 random bits,
    as ``random_`` leaves the sign bit clear); an element is dropped when its lane falls below p of
    the lane's range, so the drop rate is p to within 2^-15. Random numbers on a CPU cost about 4 ns
    each, a third of a tiny training step's dropout time went to drawing them. Same global
    generator, so resuming and seeding behave as before.
    """

    def __init__(self, p: float = 0.1):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"dropout must be in [0, 1), got {p}")
        self.p = float(p)
        lo, top = -(2**15) + round(p * 2**16), round(p * 2**15)
        self.register_buffer(
            "floor", torch.tensor([lo, lo, lo, top], dtype=torch.int16), persistent=False
        )

    def mask(
        self, shape: torch.Size, device: torch.device, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """A boolean keep-mask of ``shape``: True with probability 1 - p."""
        n = math.prod(shape)
        lanes = (
            torch.empty((n + 3) // 4, dtype=torch.int64, device=device)
            .random_(generator=generator)
            .view(torch.int16)
        )
        return (lanes.view(-1, 4) >= self.floor).view(-1)[:n].view(shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        given, source = _stack("given"), _stack("generator")
        if given:
            keep = given[-1].pop(0)
        else:
            keep = self.mask(x.shape, x.device, source[-1] if source else None)
        return x * keep * (1 / (1 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"


def mlp(d_in: int, d_out: int) -> nn.Sequential:
    """Linear, GELU, Linear, GELU: the shape of every embedding MLP in the U-Net."""
    return nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(), nn.Linear(d_out, d_out), nn.GELU())


class ResBlock(nn.Module):
    """GN -> GELU -> conv, + time(t_emb) + cond(h), GN -> GELU -> dropout -> zero-init conv, +
    skip."""

    def __init__(self, c_in: int, c_out: int, h_dim: int, dropout: float = 0.1):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, c_in, eps=1e-6)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.time = mlp(HIDDEN_DIM, c_out)
        self.cond = mlp(h_dim, c_out)
        self.norm2 = nn.GroupNorm(8, c_out, eps=1e-6)
        self.drop = Dropout(dropout)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        nn.init.zeros_(self.conv2.weight)
        nn.init.zeros_(self.conv2.bias)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, t_emb: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        a = self.conv1(F.gelu(self.norm1(x)))  # (B, C, H, W)
        a = a + (self.time(t_emb) + self.cond(h))[:, :, None, None]
        a = self.conv2(self.drop(F.gelu(self.norm2(a))))
        return self.skip(x) + a


def explicit_attention():
    """Inside, attention is computed with plain matrix products rather than torch's fused kernel:
    under ``torch.func.vmap`` (empirical.training.stacked) the fused CPU kernel has no batching rule
    and runs member by member."""
    return _pushed("explicit", True)


class Attention(nn.Module):
    """Multi-head self-attention over pixels, with GroupNorm and a residual connection."""

    def __init__(self, c: int, heads: int = 4):
        super().__init__()
        self.norm = nn.GroupNorm(8, c, eps=1e-6)
        self.attn = nn.MultiheadAttention(c, heads, batch_first=True)

    def forward(self, x: torch.Tensor, *_) -> torch.Tensor:
        b, c, hh, ww = x.shape
        seq = self.norm(x).flatten(2).transpose(1, 2)  # (B, H*W, C)
        if _stack("explicit"):
            out = self._explicit(seq.float() if x.device.type == "cpu" else seq)
        # bf16 attention on a CPU is 4x slower than fp32 (its backward above all)
        elif x.device.type == "cpu":
            with torch.autocast("cpu", enabled=False):
                out, _ = self.attn(seq.float(), seq.float(), seq.float(), need_weights=False)
        else:
            out, _ = self.attn(seq, seq, seq, need_weights=False)
        return x + out.transpose(1, 2).reshape(b, c, hh, ww).to(x.dtype)

    def _explicit(self, seq: torch.Tensor) -> torch.Tensor:
        """The same attention as ``self.attn`` (its weights), as softmax(q kᵀ / √d) v per head."""
        mha, (b, n, c) = self.attn, seq.shape
        heads = mha.num_heads
        cpu = seq.device.type == "cpu"  # kept in fp32 there, as the fused path keeps it
        with torch.autocast("cpu", enabled=False) if cpu else contextlib.nullcontext():
            q, k, v = F.linear(seq, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
            q, k, v = (a.reshape(b, n, heads, c // heads).transpose(1, 2) for a in (q, k, v))
            # the scores and softmax in fp32 under any autocast, as the fused kernel accumulates
            # them (in bf16
            # q kᵀ would be rounded before the softmax); the weights then meet v in v's precision,
            # as there
            with torch.autocast(seq.device.type, enabled=False):
                scores = q.float() @ k.float().transpose(-2, -1) * (c // heads) ** -0.5
                weights = torch.softmax(scores, dim=-1)
            out = (weights.to(v.dtype) @ v).transpose(1, 2).reshape(b, n, c)
            return F.linear(out, mha.out_proj.weight, mha.out_proj.bias)


class UNet(nn.Module):
    """ε̂(z_t, t, h). Args: channels per level, ResNet blocks per level, the size of h, dropout."""

    def __init__(
        self,
        channels: Sequence[int] = (64, 128, 256),
        blocks: int = 2,
        h_dim: int = 11,
        dropout: float = 0.1,
    ):
        super().__init__()
        channels = tuple(int(c) for c in channels)
        if not channels or any(c % 8 for c in channels):
            raise ValueError(
                f"channels must be multiples of 8 (GroupNorm with 8 groups), got {channels}"
            )
        if blocks < 1:
            raise ValueError(f"blocks per level must be >= 1, got {blocks}")
        self.channels, self.h_dim = channels, h_dim
        self.time_mlp = nn.Sequential(
            nn.Linear(TIME_DIM, HIDDEN_DIM), nn.GELU(), nn.Linear(HIDDEN_DIM, HIDDEN_DIM), nn.GELU()
        )
        self.stem = nn.Conv2d(3, channels[0], 3, padding=1)
        self.down, self.downsample = nn.ModuleList(), nn.ModuleList()
        c_prev = channels[0]  # the stem's output
        for level, c in enumerate(channels):
            self.down.append(
                nn.ModuleList(
                    [ResBlock(c_prev if j == 0 else c, c, h_dim, dropout) for j in range(blocks)]
                )
            )
            last = level == len(channels) - 1
            self.downsample.append(
                nn.Identity() if last else nn.Conv2d(c, c, 3, stride=2, padding=1)
            )
            c_prev = c
        top = channels[-1]
        self.mid = nn.ModuleList(
            [ResBlock(top, top, h_dim, dropout), Attention(top), ResBlock(top, top, h_dim, dropout)]
        )
        self.up, self.upsample = nn.ModuleList(), nn.ModuleList()
        for level, c in enumerate(channels):
            # the deepest level continues from mid; the others take the level below, upsampled, +
            # the skip
            c_in = top if level == len(channels) - 1 else channels[level + 1] + c
            self.up.append(
                nn.ModuleList(
                    [ResBlock(c_in if j == 0 else c, c, h_dim, dropout) for j in range(blocks)]
                )
            )
        for level in range(len(channels) - 1):
            self.upsample.append(
                nn.ConvTranspose2d(channels[level + 1], channels[level + 1], 2, stride=2)
            )
        self.out_norm = nn.GroupNorm(8, channels[0], eps=1e-6)
        self.out = nn.Conv2d(channels[0], 3, 3, padding=1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, z: torch.Tensor, t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """z: (B, 3, R, R) noisy images; t: (B,) network time in [0, 1]; h: (B, h_dim)."""
        n_levels = len(self.channels)
        if z.shape[-1] % 2 ** (n_levels - 1):
            raise ValueError(
                f"image side {z.shape[-1]} must be divisible by {2 ** (n_levels - 1)} for "
                f"{n_levels} levels"
            )
        t_emb = self.time_mlp(sinusoidal(t))  # (B, 256)
        x = self.stem(z)
        skips = []
        for level in range(n_levels):
            for block in self.down[level]:
                x = block(x, t_emb, h)
            skips.append(x)
            x = self.downsample[level](x)
        for layer in self.mid:
            x = layer(x, t_emb, h)
        for level in reversed(range(n_levels)):
            if level < n_levels - 1:
                x = torch.cat([self.upsample[level](x), skips[level]], dim=1)
            for block in self.up[level]:
                x = block(x, t_emb, h)
        return z + self.out(F.gelu(self.out_norm(x)))


def cond_modules(net: UNet) -> list[tuple[str, nn.Module]]:
    """The conditioning MLPs, by stable name, in the order the forward pass uses them."""
    n = len(net.channels)
    order = [f"down.{lv}.{j}" for lv in range(n) for j in range(len(net.down[lv]))]
    order += ["mid.0", "mid.2"]
    order += [f"up.{lv}.{j}" for lv in reversed(range(n)) for j in range(len(net.up[lv]))]
    return [(f"{name}.cond", net.get_submodule(f"{name}.cond")) for name in order]
