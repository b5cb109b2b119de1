"""results/ladder/keep.sh: what results/ keeps of a training run (no checkpoints, the metrics log
compressed, the last sample grid), checked on a hand-made run folder."""

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

KEEP = Path(__file__).resolve().parents[2] / "results" / "ladder" / "keep.sh"
pytestmark = pytest.mark.skipif(
    not (shutil.which("bash") and shutil.which("gzip")), reason="needs bash and gzip"
)


def keep(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(KEEP), *map(str, args)], capture_output=True, text=True)


def test_keep_copies_the_logs_compresses_the_metrics_and_leaves_the_checkpoints(tmp_path):
    run = tmp_path / "runs" / "sep.color=0.3,seed=2"
    for name in ("samples", "checkpoints", "elicit"):
        (run / name).mkdir(parents=True)
    (run / "config.json").write_text("{}\n")
    (run / "trajectories.csv").write_text("t,z\n")
    metrics = '{"kind": "train", "step": 10}\n{"kind": "train", "step": 20}\n'
    (run / "metrics.jsonl").write_text(metrics)
    (run / "elicit" / "overprompt.json").write_text("{}\n")
    for step in (0, 900, 10000):  # sorted by number, not by name: step_010000 is the last
        (run / "samples" / f"step_{step:06d}.png").write_bytes(b"png")
    (run / "checkpoints" / "last.pt").write_bytes(b"weights")
    run.with_name(run.name + ".log").write_text("train small: step 20\n")
    dest = tmp_path / "docs" / run.name
    done = keep(run, dest)
    assert done.returncode == 0, done.stderr
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "config.json",
        "metrics.jsonl.gz",
        "overprompt.json",
        "samples/step_010000.png",
        "train.log",
        "trajectories.csv",
    ]
    assert gzip.decompress((dest / "metrics.jsonl.gz").read_bytes()).decode() == metrics
    (run / "metrics.jsonl").write_text(metrics + '{"kind": "train", "step": 30}\n')
    assert keep(run, dest).returncode == 0  # kept again after more training: the newer log wins
    assert b'"step": 30' in gzip.decompress((dest / "metrics.jsonl.gz").read_bytes())


def test_keep_without_a_run_folder_prints_its_usage_and_exits_2(tmp_path):
    done = keep(tmp_path / "nothing", tmp_path / "dest")
    assert done.returncode == 2 and "holds no config.json" in done.stderr
    assert not (tmp_path / "dest").exists()
    assert keep().returncode == 2
