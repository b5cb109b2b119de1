"""The package's probe as a walk reader: the walk's reading of a batch equals the probe's own (differential)."""

import numpy as np
import pytest

pytest.importorskip("torch")

from empirical.data import DataConfig, sample  # noqa: E402
from empirical.probe import ProbeReader, coordinates  # noqa: E402
from empirical.walk import reading  # noqa: E402


@pytest.mark.parametrize("label", ["00", "01", "10", "11"])
def test_the_walk_reads_a_batch_as_the_probe_does(pristine_smoke_run, label):
    reader = ProbeReader(pristine_smoke_run / "probe")
    assert reader.concepts == ("color", "size")
    images = sample(DataConfig(resolution=8), {"00": 8, "01": 8, "10": 8, "11": 8}, 3).images  # every corner
    images[::5] = np.random.default_rng(0).random(images[::5].shape)  # and noise the probe should refuse
    ours = reading(0, label, *reader.read(images), len(images), "test")
    theirs = coordinates(reader.model, images, [int(d) for d in label])
    np.testing.assert_allclose(ours.z, theirs["z"], rtol=1e-6, equal_nan=True)
    assert ours.accuracy == pytest.approx(theirs["joint_accuracy"])
    assert ours.shares == pytest.approx(theirs["shares"])
