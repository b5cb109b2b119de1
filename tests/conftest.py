"""Shared test settings: hypothesis profiles and the gpu marker.

The default hypothesis profile is deterministic (derandomized, no deadline, no example database), so
CI and a developer see the same examples. HYPOTHESIS_PROFILE=thorough explores more.
"""

import fcntl
import os
import shutil

# Under pytest-xdist each worker gets one thread (numpy's BLAS, torch, numba, and the commands the tests
# start): two workers on two cores, never four threads fighting for two.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return  # do not import torch for nothing
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def pristine_smoke_run(tmp_path_factory):
    """A finished smoke run (its own 30-step probe inside), trained once per test session, however
    many pytest-xdist workers share it (the first to need it trains it under a lock, in the folder
    above the workers' own; the others wait for it or find it); never modify it."""
    pytest.importorskip("torch")
    from empirical.training.config import make_config
    from empirical.training.loop import train

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out, done = shared / "pristine-smoke" / "run", shared / "pristine-smoke" / "done"
    with open(shared / "pristine-smoke.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # a half-trained run of a worker that died
            train(make_config("smoke"), out, progress=False)
            done.touch()
    return out


@pytest.fixture(scope="session")
def smoke_probe(pristine_smoke_run):
    """The session's smoke probe (the one the finished smoke run trained inside it): pass
    ``probe=<it>`` to a smoke run that needs no probe of its own, and it trains none."""
    return pristine_smoke_run / "probe"


@pytest.fixture(scope="module")
def smoke_run(pristine_smoke_run, tmp_path_factory):
    """This module's own copy of the session's finished smoke run (free to elicit into)."""
    out = tmp_path_factory.mktemp("run") / "run"
    shutil.copytree(pristine_smoke_run, out)
    return out


@pytest.fixture
def few_logistic_bootstraps(monkeypatch):
    """The forecast's logistic baseline with 20 residual-bootstrap fits instead of its 100 (3.3 s a
    forecast, most of one): for tests of what a forecast says and writes, not of that baseline's
    interval (tests/unit/test_forecast.py tests the baseline itself)."""
    import functools

    from fitting.analyses import forecast_baselines

    monkeypatch.setattr(
        forecast_baselines,
        "logistic",
        functools.partial(forecast_baselines.logistic, n_boot=20),
    )
