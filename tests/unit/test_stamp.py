"""The reproducibility stamp: which code, versions, device, host, command and start time; never imports torch."""

import datetime
import subprocess
import sys

from core import stamp as stamp_mod
from core.stamp import stamp


def test_the_stamp_names_code_versions_machine_and_command():
    stamp_mod.git_state.cache_clear()  # read once per process; this process may have outlived a commit
    s = stamp(device="cuda: X", command=["python", "-m", "fitting.fit", "a b.csv"])
    assert s["command"] == "python -m fitting.fit 'a b.csv'"  # quoted so it can be pasted back
    assert s["device"] == "cuda: X" and s["host"]
    assert s["python"] == ".".join(map(str, sys.version_info[:3]))
    import numpy

    assert s["numpy"] == numpy.__version__
    started = datetime.datetime.fromisoformat(s["started"])
    assert abs((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()) < 60
    commit, dirty = stamp_mod.git_state()
    if (stamp_mod.ROOT / ".git").exists():
        head = subprocess.run(
            ["git", "-C", str(stamp_mod.ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        assert s["commit"] == commit == head and isinstance(dirty, bool)
    else:
        assert s["commit"] is None and s["dirty"] is None


def test_a_missing_distribution_is_null():
    assert stamp_mod.version("no-such-distribution-xyz") is None


def test_stamping_does_not_import_torch():
    code = "import sys; from core.stamp import stamp; s = stamp(); print('torch' in sys.modules, bool(s['torch']))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "False"
