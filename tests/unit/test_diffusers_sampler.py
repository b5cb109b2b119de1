"""The diffusers adapter: a tiny randomly initialised diffusers U-Net as a walk sampler (no download), read by the
package's probe, written in the one trajectory format."""

import importlib.util

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("diffusers") is None, reason="needs diffusers"
)

import torch  # noqa: E402

from empirical.images.dgp import DataConfig  # noqa: E402
from empirical.elicitation.diffusers_sampler import (  # noqa: E402
    DiffusersSampler,
    class_condition,
    concept_condition,
)
from empirical.elicitation.walk import Prompt  # noqa: E402

DATA = DataConfig(resolution=8)


def diffusers():
    """diffusers, imported by the first test that needs it: at collection it would cost every
    pytest-xdist worker about 3 s, and one of them runs these tests."""
    import diffusers

    return diffusers


def conditional_unet(seed: int, via: str = "projection"):
    """A tiny random U-Net conditioned on the concept vector: a projection class embedding (the example's), or
    one cross-attention token."""
    torch.manual_seed(seed)
    common = dict(
        sample_size=8,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        norm_num_groups=4,
    )
    if via == "token":
        return diffusers().UNet2DConditionModel(
            **common,
            cross_attention_dim=11,
            attention_head_dim=4,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        )
    return diffusers().UNet2DConditionModel(
        **common,
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        mid_block_type=None,
        class_embed_type="projection",
        projection_class_embeddings_input_dim=11,
    )


def sampler(via: str = "projection", **kwargs) -> DiffusersSampler:
    return DiffusersSampler(
        diffusers().DDIMScheduler(num_train_timesteps=100),
        concept_condition(DATA, via),
        shape=(3, 8, 8),
        steps=3,
        **kwargs,
    )


@pytest.mark.parametrize("via", ["projection", "token"])
def test_the_concept_vector_reaches_the_unet_either_way(via):
    s, unet = sampler(via), conditional_unet(0, via)
    plain = s.sample(unet, Prompt("11"), 3, seed=7)
    assert not np.allclose(plain, s.sample(unet, Prompt("00"), 3, seed=7))
    assert not np.allclose(plain, s.sample(unet, Prompt("11", 3.0), 3, seed=7))


def test_images_are_in_the_probes_format_reproducible_and_follow_the_prompt():
    s, unet = sampler(), conditional_unet(0)
    plain = s.sample(unet, Prompt("11"), 5, seed=7)
    assert (
        plain.shape == (5, 3, 8, 8)
        and plain.dtype == np.float32
        and 0 <= plain.min()
        and plain.max() <= 1
    )
    assert np.array_equal(plain, s.sample(unet, Prompt("11"), 5, seed=7))
    assert not np.array_equal(plain, s.sample(unet, Prompt("11"), 5, seed=8))
    assert not np.allclose(
        plain, s.sample(unet, Prompt("00"), 5, seed=7)
    )  # the condition reaches the U-Net
    assert not np.allclose(
        plain, s.sample(unet, Prompt("11", 3.0), 5, seed=7)
    )  # and so does over-prompting
    chunked = sampler(batch=2).sample(
        unet, Prompt("11"), 5, seed=7
    )  # batching does not change a draw's noise
    np.testing.assert_allclose(chunked, plain, atol=1e-5)


def test_a_stochastic_scheduler_draws_from_the_walks_seed():
    s = DiffusersSampler(
        diffusers().DDPMScheduler(num_train_timesteps=100),
        concept_condition(DATA),
        shape=(3, 8, 8),
        steps=3,
    )
    unet = conditional_unet(0)
    assert np.array_equal(
        s.sample(unet, Prompt("01"), 3, seed=1), s.sample(unet, Prompt("01"), 3, seed=1)
    )


def test_checkpoints_are_loaded_once_each_through_load(tmp_path):
    paths = []
    for i in range(2):
        conditional_unet(i).save_pretrained(tmp_path / f"step_{i}")
        paths.append(str(tmp_path / f"step_{i}"))
    loads = []

    def load(path):
        loads.append(path)
        return diffusers().UNet2DConditionModel.from_pretrained(path)

    s = sampler(load=load)
    a = s.sample(paths[0], Prompt("10"), 2, seed=0)
    s.sample(paths[0], Prompt("01"), 2, seed=0)
    b = s.sample(paths[1], Prompt("10"), 2, seed=0)
    assert loads == paths and not np.allclose(a, b)


def test_integer_class_labels_draw_the_plain_prompt_and_refuse_over_prompting():
    torch.manual_seed(0)
    unet = diffusers().UNet2DModel(
        sample_size=8,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        norm_num_groups=4,
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        num_class_embeds=4,
    )
    s = DiffusersSampler(
        diffusers().DDIMScheduler(num_train_timesteps=100),
        class_condition(DATA.classes),
        shape=(3, 8, 8),
        steps=2,
    )
    assert s.sample(unet, Prompt("01"), 2, seed=0).shape == (2, 3, 8, 8)
    with pytest.raises(ValueError, match="cannot be over-prompted; run the walk without strengths"):
        s.sample(unet, Prompt("01", 2.0), 2, seed=0)
    with pytest.raises(ValueError, match="class '12': this model's classes are 00, 01, 10, 11"):
        s.sample(unet, Prompt("12"), 2, seed=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda: DiffusersSampler(object(), concept_condition(DATA), shape=(3, 8, 8)),
            "has no set_timesteps",
        ),
        (
            lambda: sampler().sample("not a model", Prompt("11"), 2, 0),
            "load returned a str, not a U-Net",
        ),
        (
            lambda: DiffusersSampler(
                diffusers().DDIMScheduler(), concept_condition(DATA), shape=(8, 8)
            ),
            r"give \(channels, height, width\)",
        ),
        (
            lambda: DiffusersSampler(
                diffusers().DDIMScheduler(), concept_condition(DATA), shape=(3, 8, 8), steps=0
            ),
            "integers >= 1",
        ),
        (lambda: sampler().sample(conditional_unet(0), Prompt("11", 0.5), 2, 0), "strengths >= 1"),
        (lambda: concept_condition(DATA, "vector"), "valid: projection"),
    ],
)
def test_bad_input_is_named(make, match):
    with pytest.raises((TypeError, ValueError), match=match):
        make()


@pytest.mark.slow  # long end to end: run with -m slow
def test_a_walk_of_diffusers_checkpoints_writes_the_standard_log(pristine_smoke_run, tmp_path):
    from empirical.probing.reader import ProbeReader
    from empirical.elicitation.walk import walk
    from core.trajectory import read_csv

    checkpoints = [(0, conditional_unet(0)), (100, conditional_unet(1))]
    log = walk(
        checkpoints,
        sampler(),
        ProbeReader(pristine_smoke_run / "probe"),
        tmp_path / "walked",
        classes=DATA.classes,
        held_out=["11"],
        strengths=[2.0],
        samples=4,
        progress=False,
    )
    trajs = read_csv(log)
    assert {(t.protocol, t.label) for t in trajs} == {("naive", c) for c in DATA.classes} | {
        ("overprompt", "11")
    }
    assert all(list(t.step) == [0, 100] for t in trajs)
