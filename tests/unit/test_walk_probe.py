"""The package's probe as a walk reader: the walk's reading of a batch equals the probe's own (differential)."""

import numpy as np
import pytest

pytest.importorskip("torch")

from empirical.images.dgp import DataConfig, sample  # noqa: E402
from empirical.probing.reader import ProbeReader, coordinates  # noqa: E402
from empirical.elicitation.walk import reading  # noqa: E402


@pytest.mark.parametrize("label", ["00", "01", "10", "11"])
def test_the_walk_reads_a_batch_as_the_probe_does(pristine_smoke_run, label):
    reader = ProbeReader(pristine_smoke_run / "probe")
    assert reader.concepts == ("color", "size")
    images = sample(
        DataConfig(resolution=8), {"00": 8, "01": 8, "10": 8, "11": 8}, 3
    ).images  # every corner
    images[::5] = np.random.default_rng(0).random(
        images[::5].shape
    )  # and noise the probe should refuse
    ours = reading(0, label, *reader.read(images), len(images), "test")
    theirs = coordinates(reader.model, images, [int(d) for d in label])
    np.testing.assert_allclose(ours.z, theirs["z"], rtol=1e-6, equal_nan=True)
    assert ours.accuracy == pytest.approx(theirs["joint_accuracy"])
    assert ours.shares == pytest.approx(theirs["shares"])


def test_walking_a_runs_own_checkpoints_reproduces_its_naive_log(pristine_smoke_run, tmp_path):
    from empirical.elicitation.run_sampler import RunSampler
    from empirical.elicitation.walk import walk
    from core.trajectory import read_csv

    sampler = RunSampler(pristine_smoke_run)
    own = {
        t.label: t
        for t in read_csv(pristine_smoke_run / "trajectories.csv")
        if t.protocol == "naive"
    }
    assert [s for s, _ in sampler.checkpoints] == list(own["11"].step)
    log = walk(
        sampler.checkpoints,
        sampler,
        ProbeReader(sampler.probe_path),
        tmp_path / "walked",
        classes=sampler.classes,
        held_out=[],
        samples=sampler.cfg.samples,
        seeds=sampler.seeds,
        progress=False,
    )
    for t in read_csv(log):
        mine = own[t.label]
        assert list(t.step) == list(mine.step)
        np.testing.assert_allclose(t.z, mine.z, atol=1e-5, equal_nan=True)
        np.testing.assert_allclose(t.accuracy, mine.accuracy, atol=1e-9)
        assert t.extra["samples"] == mine.extra["samples"]


def test_a_run_sampler_over_prompts_and_names_what_it_cannot_do(pristine_smoke_run):
    from empirical.elicitation.run_sampler import RunSampler
    from empirical.elicitation.walk import Prompt

    sampler = RunSampler(pristine_smoke_run)
    step = sampler.checkpoints[-1][0]
    plain = sampler.sample(step, Prompt("11"), 4, 7)
    assert plain.shape == (4, 3, 8, 8) and np.array_equal(
        plain, sampler.sample(step, Prompt("11"), 4, 7)
    )
    assert not np.array_equal(plain, sampler.sample(step, Prompt("11", 3.0), 4, 7))
    with pytest.raises(ValueError, match="strengths >= 1"):
        sampler.sample(step, Prompt("11", 0.5), 4, 7)
    with pytest.raises(ValueError, match="the run's classes are 00, 01, 10, 11"):
        sampler.sample(step, Prompt("12"), 4, 7)


def test_the_reader_refuses_images_off_its_probe_s_resolution(pristine_smoke_run, capsys):
    """A probe is a biased instrument off its resolution: refused in one line, or resampled when
    asked, with a note."""
    images = sample(DataConfig(resolution=16), {"00": 4, "11": 4}, 0).images
    with pytest.raises(ValueError, match="16x16 px, but the probe .* reads 8x8 px"):
        ProbeReader(pristine_smoke_run / "probe").read(images)
    reader = ProbeReader(pristine_smoke_run / "probe", resample=True)
    z, readable = reader.read(images)
    z_again, _ = reader.read(images)
    assert z.shape == (8, 2) and readable.shape == (8,) and np.array_equal(z, z_again)
    assert capsys.readouterr().err.count("resampling 16x16 px images") == 1
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        reader.read(images[0])
