"""The EMA of the weights: its decay at a step (constant, or with warm-up) and how far it lags the
weights."""

from __future__ import annotations


def ema_decay(decay: float, step: int, warmup: bool) -> float:
    """The EMA decay of the update at ``step`` (0-based): constant, or with warm-up min(decay, (1 +
    n) / (10 + n)), which averages over about n / 10 steps early and reaches ``decay`` at step 10 /
    (1 - decay) - 1."""
    return min(decay, (1 + step) / (10 + step)) if warmup else decay


def ema_lag(decay: float, fraction: float = 0.5, *, at: int = 0, warmup: bool = False) -> int:
    """Updates after a step change of the weights (at update ``at``) until the EMA has moved
    ``fraction`` of the way: what every learning time, turn and capability step read off the EMA
    weights lags the weights by. Without warm-up 1 - decay^k >= fraction: 139 (0.995) and 693
    (0.999) updates to half way."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction={fraction} is not valid; valid: (0, 1)")
    if decay == 0:
        return 1
    moved, k = 0.0, 0
    while moved < fraction:
        d = ema_decay(decay, at + k, warmup)
        moved, k = d * moved + (1 - d), k + 1
    return k
