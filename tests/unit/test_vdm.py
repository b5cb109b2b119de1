"""VDM and U-Net: schedule, loss terms against closed forms, sampler, guidance, CFG drop rate, overfitting."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.images.dgp import DataConfig, sample  # noqa: E402
from empirical.nets.unet import UNet, cond_modules  # noqa: E402
from empirical.nets.vdm import VDM, LinearSchedule  # noqa: E402


class Zero(torch.nn.Module):
    """ε̂ = 0: isolates the loss arithmetic from any network."""

    def forward(self, z, t, h):
        return torch.zeros_like(z)


def test_schedule_endpoints_monotone_and_variance_preserving():
    g = LinearSchedule(-5.0, 10.0)
    t = torch.linspace(0, 1, 101)
    gamma = g(t)
    assert gamma[0].item() == pytest.approx(-5.0) and gamma[-1].item() == pytest.approx(10.0)
    assert torch.all(gamma[1:] > gamma[:-1])
    torch.testing.assert_close(torch.sigmoid(-gamma) + torch.sigmoid(gamma), torch.ones(101))
    with torch.no_grad():
        g.w.fill_(-7.0)  # |w|: still increasing
    assert torch.all(g(t)[1:] > g(t)[:-1])
    with pytest.raises(ValueError, match="gamma_max must exceed"):
        LinearSchedule(1.0, 1.0)


def test_dgamma_dt_is_abs_w():
    g = LinearSchedule(-5.0, 10.0)
    t = torch.rand(7, requires_grad=True)
    (d,) = torch.autograd.grad(g(t).sum(), t)
    torch.testing.assert_close(d, torch.full((7,), 15.0))


def test_loss_terms_match_closed_forms():
    vdm = VDM(Zero(), p_cfg=0.0)
    x = torch.rand(3, 3, 4, 4)
    h = torch.zeros(3, 11)
    out = vdm.loss(x, h, generator=torch.Generator().manual_seed(5), cfg_drop=False)
    d = 48
    bpd = 1 / (d * math.log(2))
    # the same draws, in the same order: ε_0, u, ε
    gen = torch.Generator().manual_seed(5)
    eps_0 = torch.randn(x.shape, generator=gen)
    u = torch.rand((), generator=gen) / 3
    eps = torch.randn(x.shape, generator=gen)
    s2 = 1e-6
    ratio = math.exp(-5.0)  # σ_0² / α_0² = exp(γ_0)
    rec = bpd * (0.5 * math.log(2 * math.pi * s2) + ratio * eps_0**2 / (2 * s2)).sum((1, 2, 3))
    var_1 = 1 / (1 + math.exp(-10.0))
    prior = bpd * 0.5 * (var_1 + (1 - var_1) * x**2 - math.log(var_1) - 1).sum((1, 2, 3))
    diffusion = bpd * 0.5 * 15.0 * (eps**2).sum((1, 2, 3))
    torch.testing.assert_close(out["reconstruction"], rec, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(out["prior"], prior, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(out["diffusion"], diffusion, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out["total"], rec + prior + diffusion, rtol=1e-4, atol=1e-3)
    assert u.item() < 1 / 3
    assert vdm.min_vlb() == pytest.approx(-8.640, abs=1e-3)


def test_antithetic_times_cover_the_unit_interval():
    t = VDM.antithetic_times(8, torch.Generator().manual_seed(0))
    assert t.min() >= 0 and t.max() < 1
    torch.testing.assert_close(torch.diff(t), torch.full((7,), 1 / 8))


def test_cfg_null_drop_rate():
    vdm = VDM(Zero(), p_cfg=0.2)
    h = torch.rand(20_000, 11)
    dropped, hit = vdm.drop(h, torch.Generator().manual_seed(0))
    n = h.shape[0]
    assert abs(hit.float().sum().item() - 0.2 * n) < 4 * math.sqrt(n * 0.2 * 0.8)
    assert torch.all(dropped[hit] == -1.0) and torch.equal(dropped[~hit], h[~hit])
    with pytest.raises(ValueError, match="p_cfg"):
        VDM(Zero(), p_cfg=1.0)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return VDM(UNet((16, 32), blocks=1, dropout=0.0))


def test_sampler_shape_finiteness_and_guidance(tiny):
    h = torch.rand(4, 11)
    a = tiny.sample(h, (3, 16, 16), steps=5, generator=torch.Generator().manual_seed(1))
    assert a.shape == (4, 3, 16, 16) and torch.isfinite(a).all()
    b = tiny.sample(
        h, (3, 16, 16), steps=5, guidance=1.0, generator=torch.Generator().manual_seed(1)
    )
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)  # guidance 1 is plain conditioning
    c = tiny.sample(
        h, (3, 16, 16), steps=5, guidance=3.0, generator=torch.Generator().manual_seed(1)
    )
    assert torch.isfinite(c).all()
    with pytest.raises(ValueError, match="steps"):
        tiny.sample(h, (3, 16, 16), steps=0)


def test_unet_starts_as_identity_and_names_its_conditioning():
    net = UNet((16, 32, 64), blocks=2)
    z = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(
        net(z, torch.rand(2), torch.rand(2, 11)), z
    )  # zero-initialized output conv
    names = [n for n, _ in cond_modules(net)]
    assert (
        names[:2] == ["down.0.0.cond", "down.0.1.cond"]
        and "mid.0.cond" in names
        and names[-1] == "up.0.1.cond"
    )
    assert len(names) == 3 * 2 * 2 + 2
    full = UNet()
    assert 10_000_000 < sum(p.numel() for p in full.parameters()) < 12_000_000  # the paper's ~10.9M
    with pytest.raises(ValueError, match="multiples of 8"):
        UNet((12, 24))
    with pytest.raises(ValueError, match="divisible by 4"):
        net(torch.randn(1, 3, 18, 18), torch.rand(1), torch.rand(1, 11))


def test_a_model_overfits_a_fixed_batch():
    torch.manual_seed(0)
    data = DataConfig(("color", "size"), {"color": 0.6, "size": 0.4}, resolution=16)
    batch = sample(data, {"00": 4, "01": 4}, 0)
    x, h = torch.from_numpy(batch.images), torch.from_numpy(batch.h)
    vdm = VDM(UNet((16, 32), blocks=1, dropout=0.0), p_cfg=0.0)
    opt = torch.optim.AdamW(vdm.parameters(), lr=2e-3)

    def evaluate():
        with torch.enable_grad():  # dγ/dt needs autograd
            terms = vdm.loss(x, h, generator=torch.Generator().manual_seed(123))
        return {k: float(v.detach().mean()) for k, v in terms.items()}

    before = evaluate()
    for step in range(80):
        loss = vdm.loss(x, h, generator=torch.Generator().manual_seed(step))["total"].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = evaluate()
    assert after["total"] < before["total"] and after["diffusion"] < 0.7 * before["diffusion"], (
        before,
        after,
    )
    assert np.isfinite(list(after.values())).all()


def test_schedule_derivative_matches_autograd_and_its_gradient():
    """γ'(t) without a double backward: the value and its gradient in w are autograd's, for either sign of w."""
    for w in (15.0, -4.0):
        g = LinearSchedule(-5.0, 10.0)
        with torch.no_grad():
            g.w.fill_(w)
        t = torch.rand(5, requires_grad=True)
        (auto,) = torch.autograd.grad(g(t).sum(), t, create_graph=True)
        (d_auto,) = torch.autograd.grad(auto.sum(), g.w)
        exact = g.derivative(t.detach())
        (d_exact,) = torch.autograd.grad(exact.sum(), g.w)
        torch.testing.assert_close(exact, auto)
        torch.testing.assert_close(d_exact, d_auto)


def test_dropout_drops_at_rate_p_in_every_lane_and_keeps_the_mean():
    from empirical.nets.unet import Dropout

    torch.manual_seed(0)
    for p in (0.1, 0.3):
        drop = Dropout(p)
        x = torch.ones(4 * 100_003)
        y = drop(x)
        kept = y != 0
        sd = math.sqrt(p * (1 - p) / x.numel())
        assert abs((1 - kept.float().mean()).item() - p) < 5 * sd
        for lane in range(4):  # the top 16 bits of a draw have only 15 random ones: still rate p
            assert abs((1 - kept[lane::4].float().mean()).item() - p) < 5 * 2 * sd
        torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p)))
        assert abs(y.mean().item() - 1) < 5 * sd / (1 - p)
    drop.eval()
    x = torch.randn(3, 5)
    assert drop(x) is x
    assert Dropout(0.0).train()(x) is x
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        Dropout(1.0)


def test_dropout_follows_the_global_seed_and_fits_odd_shapes():
    from empirical.nets.unet import Dropout

    drop = Dropout(0.1)
    x = torch.randn(3, 5, 7)  # 105 elements: not a multiple of 4
    torch.manual_seed(3)
    a = drop(x)
    torch.manual_seed(3)
    b = drop(x)
    assert a.shape == x.shape and torch.equal(a, b)
    assert not torch.equal(drop(x), a)
