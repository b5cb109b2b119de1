"""Continuous-time Variational Diffusion Model (Kingma, Salimans, Poole & Ho 2021), in paper
notation.

Forward process, variance preserving: z_t = α_t x + σ_t ε, with α_t² = sigmoid(-γ(t)) and
σ_t² = sigmoid(γ(t)). The learned linear schedule is γ(t) = b + |w| t, initialized at γ(0) = γ_min =
-5 and γ(1) = γ_max = 10.

The loss is the negative ELBO in bits per dimension, with each term returned separately:

1. reconstruction: -log N(x; z_0/α_0, s²), where z_0 = α_0 x + σ_0 ε and s = ``data_noise``;
2. prior: KL(N(α_1 x, σ_1²) || N(0, 1));
3. diffusion: ½ γ'(t) ||ε - ε̂(z_t, t, h)||², with t drawn antithetically (t_k = u + k/B).

Classifier-free guidance: in training, each sample's h is replaced by the null vector (every slot
``null_fill``) with probability ``p_cfg``. At sampling, ε̂ = ε̂(∅) + w (ε̂(h) - ε̂(∅)). The
ancestral sampler takes ``steps`` uniform steps from t = 1 to 0 (VDM eq. 32). The network sees
(γ_t - γ_min) / (γ_max - γ_min), normalized with the *initial* γ_min and γ_max.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class LinearSchedule(nn.Module):
    """γ(t) = b + |w| t, learned; b = γ_min and w = γ_max - γ_min at initialization."""

    def __init__(self, gamma_min: float = -5.0, gamma_max: float = 10.0):
        super().__init__()
        if not gamma_max > gamma_min:
            raise ValueError(f"gamma_max must exceed gamma_min, got {gamma_min}, {gamma_max}")
        self.b = nn.Parameter(torch.tensor(float(gamma_min)))
        self.w = nn.Parameter(torch.tensor(float(gamma_max - gamma_min)))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return self.b + self.w.abs() * t

    def derivative(self, t: torch.Tensor) -> torch.Tensor:
        """γ'(t) = |w|, broadcast to t's shape (exact, and differentiable in w without a double
        backward)."""
        return self.w.abs().expand(t.shape)


class VDM(nn.Module):
    """The diffusion model around a noise-prediction network ``net(z_t, t_in, h)``.

    Args:
        net: the ε̂ network (e.g. :class:`empirical.nets.unet.UNet`).
        gamma_min, gamma_max: the initial schedule endpoints.
        data_noise: s, the sd of the reconstruction likelihood.
        p_cfg: probability of dropping h to the null vector in training (classifier-free guidance).
        null_fill: the value of every slot of the null vector.
    """

    def __init__(
        self,
        net: nn.Module,
        *,
        gamma_min: float = -5.0,
        gamma_max: float = 10.0,
        data_noise: float = 1e-3,
        p_cfg: float = 0.2,
        null_fill: float = -1.0,
    ):
        super().__init__()
        if not 0 <= p_cfg < 1:
            raise ValueError(f"p_cfg must be in [0, 1), got {p_cfg}")
        if not data_noise > 0:
            raise ValueError(f"data_noise must be > 0, got {data_noise}")
        self.net = net
        self.gamma = LinearSchedule(gamma_min, gamma_max)
        self.gamma_min0, self.gamma_max0 = float(gamma_min), float(gamma_max)
        self.data_noise, self.p_cfg, self.null_fill = (
            float(data_noise),
            float(p_cfg),
            float(null_fill),
        )

    # -- pieces ------------------------------------------------------------------------------

    def t_in(self, g_t: torch.Tensor) -> torch.Tensor:
        """The network's time input: γ_t normalized with the initial endpoints."""
        return (g_t - self.gamma_min0) / (self.gamma_max0 - self.gamma_min0)

    def null(self, h: torch.Tensor) -> torch.Tensor:
        """The unconditional prompt (classifier-free guidance): h filled with the null value."""
        return torch.full_like(h, self.null_fill)

    def drop(
        self, h: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """h with each row replaced by the null vector with probability p_cfg; also returns the (B,)
        mask."""
        hit = torch.rand(h.shape[0], generator=generator, device=h.device) < self.p_cfg
        return self.dropped(h, hit), hit

    def dropped(self, h: torch.Tensor, hit: torch.Tensor) -> torch.Tensor:
        """h with the rows where ``hit`` replaced by the null vector."""
        return torch.where(hit[:, None], self.null(h), h)

    @staticmethod
    def antithetic_times(
        batch: int, generator: torch.Generator | None = None, device=None
    ) -> torch.Tensor:
        """(B,) t_k = u + k/B, u ~ U(0, 1/B): one stratified draw covering [0, 1)."""
        return VDM.spread(torch.rand((), generator=generator, device=device), batch)

    @staticmethod
    def spread(u: torch.Tensor, batch: int) -> torch.Tensor:
        """(B,) t_k = u / B + k / B for a draw u ~ U(0, 1)."""
        return u / batch + torch.arange(batch, device=u.device, dtype=torch.float32) / batch

    def eps_hat(
        self, z_t: torch.Tensor, g_t: torch.Tensor, h: torch.Tensor, guidance: float | None = None
    ) -> torch.Tensor:
        """The noise predicted at z_t for prompt h; with ``guidance`` w: ε(null) + w (ε(h) -
        ε(null)) (w = 1: plain conditioning)."""
        t_in = self.t_in(g_t).expand(z_t.shape[0])
        if guidance is None:
            return self.net(z_t, t_in, h)
        both = self.net(
            torch.cat([z_t, z_t]), torch.cat([t_in, t_in]), torch.cat([h, self.null(h)])
        )
        cond, uncond = both.chunk(2)
        return uncond + guidance * (cond - uncond)

    # -- loss --------------------------------------------------------------------------------

    def noise(
        self, x: torch.Tensor, generator: torch.Generator | None = None, cfg_drop: bool = True
    ) -> dict[str, torch.Tensor]:
        """The random draws of one loss evaluation, in the order :meth:`loss` takes them: which rows
        drop h (with classifier-free dropout), the reconstruction noise ε_0, the antithetic offset
        u, the noise ε. Drawn apart so that many runs trained as one (empirical.ensemble) draw each
        run's from its own stream."""
        out = {}
        if cfg_drop and self.p_cfg > 0:
            out["drop"] = torch.rand(x.shape[0], generator=generator, device=x.device) < self.p_cfg
        out["eps_0"] = torch.randn(x.shape, generator=generator, device=x.device)
        out["u"] = torch.rand((), generator=generator, device=x.device)
        out["eps"] = torch.randn(x.shape, generator=generator, device=x.device)
        return out

    def loss(
        self,
        x: torch.Tensor,
        h: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        cfg_drop: bool = True,
        noise: dict[str, torch.Tensor] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Per-sample loss terms in bits per dimension, (B,) each: total, diffusion, prior,
        reconstruction. ``noise``: the draws of :meth:`noise` (default: drawn here, from
        ``generator``)."""
        if noise is None:
            noise = self.noise(x, generator, cfg_drop)
        b = x.shape[0]
        bpd = 1.0 / (x[0].numel() * math.log(2))
        if "drop" in noise:
            h = self.dropped(h, noise["drop"])
        dims = tuple(range(1, x.ndim))

        # 1. reconstruction: -log N(x; z_0/α_0, s²)
        g_0 = self.gamma(torch.zeros((), device=x.device))
        eps_0 = noise["eps_0"]
        z_0 = torch.sqrt(torch.sigmoid(-g_0)) * x + torch.sqrt(torch.sigmoid(g_0)) * eps_0
        x_hat = z_0 / torch.sqrt(torch.sigmoid(-g_0))
        nll = 0.5 * math.log(2 * math.pi * self.data_noise**2) + (x - x_hat) ** 2 / (
            2 * self.data_noise**2
        )
        reconstruction = bpd * nll.sum(dims)

        # 2. prior: KL(q(z_1 | x) || N(0, I))
        g_1 = self.gamma(torch.ones((), device=x.device))
        var_1 = torch.sigmoid(g_1)
        mean_1_sq = torch.sigmoid(-g_1) * x**2
        prior = bpd * 0.5 * (var_1 + mean_1_sq - torch.log(var_1) - 1).sum(dims)

        # 3. diffusion: ½ γ'(t) ||ε - ε̂||² at antithetic t
        t = self.spread(noise["u"], b)
        g_t, dg_dt = self.gamma(t), self.gamma.derivative(t)
        eps = noise["eps"]
        shape = (b,) + (1,) * (x.ndim - 1)
        z_t = (
            torch.sqrt(torch.sigmoid(-g_t)).view(shape) * x
            + torch.sqrt(torch.sigmoid(g_t)).view(shape) * eps
        )
        eps_hat = self.net(z_t, self.t_in(g_t), h)
        diffusion = bpd * 0.5 * dg_dt * ((eps - eps_hat) ** 2).sum(dims)

        return {
            "total": diffusion + prior + reconstruction,
            "diffusion": diffusion,
            "prior": prior,
            "reconstruction": reconstruction,
        }

    def min_vlb(self) -> float:
        """The loss floor log(2π s²) / (2 ln 2) in bits per dimension (the reconstruction term at
        perfect fit)."""
        return math.log(2 * math.pi * self.data_noise**2) / (2 * math.log(2))

    # -- sampling ----------------------------------------------------------------------------

    @torch.no_grad()
    def sample(
        self,
        h: torch.Tensor,
        shape: tuple[int, int, int],
        *,
        steps: int = 50,
        guidance: float | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Ancestral sampling from z_1 ~ N(0, I) in ``steps`` uniform steps; returns z_0 (not
        clipped).

        z_s = (α_s/α_t)(z_t - c σ_t ε̂) + σ_s √c ξ with c = 1 - exp(γ_s - γ_t) (VDM eq. 32).
        """
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        z = torch.randn((h.shape[0], *shape), generator=generator, device=h.device)
        times = torch.linspace(1, 0, steps + 1, device=h.device)
        for t, s in zip(times[:-1], times[1:]):
            g_t, g_s = self.gamma(t), self.gamma(s)
            c = -torch.expm1(g_s - g_t)
            alpha_t, alpha_s = torch.sqrt(torch.sigmoid(-g_t)), torch.sqrt(torch.sigmoid(-g_s))
            sigma_t, sigma_s = torch.sqrt(torch.sigmoid(g_t)), torch.sqrt(torch.sigmoid(g_s))
            eps_hat = self.eps_hat(z, g_t, h, guidance)
            noise = torch.randn(z.shape, generator=generator, device=z.device)
            z = (alpha_s / alpha_t) * (z - c * sigma_t * eps_hat) + sigma_s * torch.sqrt(c) * noise
        return z
