"""Many runs' evaluation samples at once (empirical.training.batched_sampling): each member's images are the ones its run
alone draws (empirical.training.evaluate.generate from the same generator), to rounding."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.training.batched_sampling import sample_members  # noqa: E402
from empirical.training.evaluate import generate  # noqa: E402
from empirical.nets.unet import UNet  # noqa: E402
from empirical.nets.vdm import VDM  # noqa: E402

RES = 8


def model(seed: int) -> VDM:
    torch.manual_seed(seed)
    vdm = VDM(UNet((8, 16), blocks=1, h_dim=11, dropout=0.1), p_cfg=0.2)
    with torch.no_grad():  # a schedule of its own, as a trained member has
        for p in vdm.gamma.parameters():
            p.add_(0.1 * seed)
    return vdm.train()


def asks(member: int, counts: dict[str, int]):
    rng = np.random.default_rng(member)
    prompts = {label: np.repeat(rng.random((1, 11)), n, axis=0) for label, n in counts.items()}
    gens = {
        label: torch.Generator().manual_seed(1000 * member + i) for i, label in enumerate(counts)
    }
    return prompts, gens


@pytest.mark.parametrize("guidance, rows_at_once", [(0.0, 8192), (2.0, 8192), (0.0, 10)])
def test_each_member_draws_what_it_draws_alone(guidance, rows_at_once):
    """Also when the members are sampled one group at a time (10 rows at once: one member, 9 rows, a group)."""
    counts = {"00": 3, "01": 2, "11": 4}
    models = [model(s) for s in (0, 1, 2)]
    drawn = sample_members(
        models,
        [asks(k, counts)[0] for k in range(3)],
        [asks(k, counts)[1] for k in range(3)],
        RES,
        steps=4,
        guidance=guidance,
        precision="fp32",
        rows_at_once=rows_at_once,
    )
    for k, vdm in enumerate(models):
        prompts, gens = asks(k, counts)
        for label, h in prompts.items():
            alone = generate(
                vdm, h, RES, steps=4, guidance=guidance, generator=gens[label], precision="fp32"
            )
            assert drawn[k][label].shape == (counts[label], 3, RES, RES)
            np.testing.assert_allclose(drawn[k][label], alone, atol=1e-5)
    assert not np.allclose(drawn[0]["00"], drawn[1]["00"])  # each member its own weights and noise
    assert all(m.training for m in models)  # left in the mode it was given


def test_members_must_ask_for_the_same_classes_and_counts():
    models = [model(0), model(1)]
    a, b = asks(0, {"00": 2}), asks(1, {"00": 3})
    with pytest.raises(ValueError, match="member 1 asks for other classes or counts"):
        sample_members(
            models, [a[0], b[0]], [a[1], b[1]], RES, steps=2, guidance=0.0, precision="fp32"
        )
    with pytest.raises(ValueError, match="steps must be >= 1"):
        sample_members(
            models, [a[0], a[0]], [a[1], a[1]], RES, steps=0, guidance=0.0, precision="fp32"
        )
