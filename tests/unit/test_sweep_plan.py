"""The sweep's plan (grid expansion, --then steps, run state), its locks, and runs collected as data
(covariates.csv, sweep.csv, load_runs, read_metrics) on hand-made run folders: no training here."""

import csv
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline import collect
from pipeline import sweep_plan as plan
from empirical.training import lock
from empirical.training.config import make_config
from core.files import write_json
from core.stamp import stamp
from core.trajectory import Trajectory, read_csv, write_csv


# --- the grid -------------------------------------------------------------------------------------------


def test_grid_expands_to_the_product_with_a_shared_absolute_probe(tmp_path):
    grid = plan.parse_grid(["seed=0,1", "sep.color=0.3,0.8"])
    runs = plan.expand("smoke", grid, ["steps=20"], tmp_path / "sw")
    assert [r.name for r in runs] == [
        "seed=0,sep.color=0.3",
        "seed=0,sep.color=0.8",
        "seed=1,sep.color=0.3",
        "seed=1,sep.color=0.8",
    ]
    assert [(r.cfg.seed, r.cfg.sep["color"], r.cfg.steps) for r in runs] == [
        (0, 0.3, 20),
        (0, 0.8, 20),
        (1, 0.3, 20),
        (1, 0.8, 20),
    ]
    probes = {r.cfg.probe_path(f"/elsewhere/{r.name}") for r in runs}
    assert probes == {
        str((tmp_path / "sw").resolve() / "probe" / "color-size-8px")
    }  # one, not one per run ({out})


def test_tuple_keys_take_semicolon_separated_values(tmp_path):
    runs = plan.expand("smoke", plan.parse_grid(["channels=8,16;16,32"]), [], tmp_path)
    assert [r.cfg.channels for r in runs] == [(8, 16), (16, 32)]
    assert [r.name for r in runs] == ["channels=8-16", "channels=16-32"]


@pytest.mark.parametrize(
    "items, match",
    [
        (["nonsense=1,2"], "unknown key 'nonsense'.*valid: sep.<concept>"),
        (["seed=0,0"], "repeated"),
        (["seed=0,,1"], "empty value"),
        (["seed=0", "seed=1"], "already a grid key"),
        (["seed"], "KEY=V1,V2"),
    ],
)
def test_bad_grids_are_refused(items, match):
    with pytest.raises(ValueError, match=match):
        plan.parse_grid(items)


@pytest.mark.parametrize(
    "grid, sets, match",
    [
        (["seed=0,1"], ["seed=3"], "also given by --set"),
        (["probe=a,b"], [], "shares its probe"),
        (["seed=0"], ["probe={out}/p"], "one probe across its runs"),
        (["lr=0.001,2"], [], r"run lr=2: lr=2.0 is not valid"),
        (["sep.color=0.3,0.30"], [], "same config"),
    ],
)
def test_bad_expansions_are_refused_before_any_work(tmp_path, grid, sets, match):
    with pytest.raises(ValueError, match=match):
        plan.expand("smoke", plan.parse_grid(grid), sets, tmp_path)


def test_steps_parse_into_commands_without_a_shell(tmp_path):
    step = plan.parse_step("elicit --every 3 --protocols 'cfg'")
    assert step.text == "elicit --every 3 --protocols cfg"
    assert step.argv(tmp_path)[1:] == [
        "-m",
        "empirical.elicit",
        str(tmp_path),
        "--every",
        "3",
        "--protocols",
        "cfg",
    ]
    assert plan.parse_step("fit --class 11").argv(tmp_path)[3] == f"{tmp_path}/trajectories.csv"
    assert plan.parse_step("turn --class '11; rm -rf /'").args == (
        "--class",
        "11; rm -rf /",
    )  # never a shell: one argument
    with pytest.raises(ValueError, match="unknown step 'turn;'"):
        plan.parse_step("turn; rm -rf /")
    with pytest.raises(ValueError, match="unknown step 'train'.*valid: elicit"):
        plan.parse_step("train")
    with pytest.raises(ValueError, match="No closing quotation"):
        plan.parse_step("elicit '--every")


def test_every_then_step_is_documented_in_the_help_and_the_guide():
    """A --then step the sweep accepts is listed, with its command, in pipeline.sweep's --help and in
    docs/sweeps.md (`forecast` was accepted and listed in neither)."""
    import pipeline.sweep as sweep

    guide = (Path(__file__).resolve().parents[2] / "docs" / "sweeps.md").read_text()
    for step, (module, _) in plan.STEPS.items():
        assert f"\n  {step} ARGS" in sweep.__doc__ and f"python -m {module} RUN" in sweep.__doc__
        assert f"| `{step} ARGS` | `python -m {module} RUN" in guide, step


@pytest.mark.parametrize(
    "text, match",
    [
        ("elicit --bogus 3", "unrecognized arguments: --bogus 3"),
        ("elicit --every 0", "--every 0: must be >= 1"),
        ("elicit --protocols foo", "unknown protocol 'foo'; valid: overprompt"),
        ("fit --class", "--class: expected one argument"),
        ("fit --boot 3", "--boot 3: need at least 10"),
        ("turn --min-angle 400", "--min-angle 400.0: give degrees in"),
        ("capability --persist 0", "--persist 0: must be >= 1"),
        ("figure --out x.jpg", "--out x.jpg: must end in .png"),
    ],
)
def test_a_steps_flags_are_checked_before_its_run_exists(tmp_path, text, match):
    run = tmp_path / "sweep" / "runs" / "seed=0"
    with pytest.raises(ValueError, match=f"--then '{text}': .*{match}"):
        plan.parse_step(text).check(run)
    assert not (tmp_path / "sweep").exists()  # checked, nothing read or written


@pytest.mark.parametrize(
    "text",
    [
        "elicit --every 3 --protocols overprompt",
        "fit --class 11 --no-figures",
        "turn --class 11",
        "capability --persist 3",
        "figure --out fig.pdf",
    ],
)
def test_a_valid_step_passes_its_check_and_writes_nothing(tmp_path, text):
    run = tmp_path / "sweep" / "runs" / "seed=0"
    plan.parse_step(text).check(run)
    assert not (tmp_path / "sweep").exists() and not (Path.cwd() / "fig.pdf").exists()


def test_a_fit_step_is_refused_for_runs_that_log_too_few_checkpoints(tmp_path):
    fit = plan.parse_step("fit --class 11")
    smoke = plan.expand("smoke", plan.parse_grid(["seed=0,1"]), [], tmp_path / "sw")
    with pytest.raises(
        ValueError,
        match=r"--then 'fit --class 11': a model fit needs at least 8 checkpoints .* run "
        r"'seed=0' logs 4 \(smoke: evals=4\); give a preset that logs more \(tiny logs \d+\)",
    ):
        fit.check_runs(smoke)
    fit.check_runs(
        plan.expand("smoke", plan.parse_grid(["seed=0,1"]), ["evals=10"], tmp_path / "sw")
    )
    fit.check_runs(plan.expand("tiny", [], [], tmp_path / "sw"))
    plan.parse_step("turn").check_runs(smoke)  # only fit has a minimum


def test_a_failed_steps_own_message_is_its_cause(capfd):
    from pipeline.sweep_jobs import run_step

    code = "import sys; print('working', file=sys.stderr); sys.exit(print('python -m x: error: --every 0: must be >= 1', file=sys.stderr) or 2)"
    assert run_step([sys.executable, "-c", code]) == (2, "--every 0: must be >= 1")
    assert "working" in capfd.readouterr().err  # passed on to the job's log as it came
    assert run_step(
        [sys.executable, "-c", "import sys; sys.stderr.write('Killed\\n'); sys.exit(9)"]
    ) == (9, "Killed")
    assert run_step([sys.executable, "-c", "pass"]) == (0, None)


def test_run_state_records_stages_and_failures(tmp_path):
    steps = (plan.parse_step("elicit"), plan.parse_step("turn"))
    assert plan.pending(tmp_path, steps) == ["train", "elicit", "turn"]
    plan.mark(tmp_path, "train", {"step": 40})
    plan.mark(tmp_path, "elicit", {"error": "boom"}, failed=True)
    assert plan.pending(tmp_path, steps) == ["elicit", "turn"]
    assert plan.read_state(tmp_path)["failed"]["error"] == "boom"
    plan.mark(tmp_path, "elicit")
    assert "failed" not in plan.read_state(tmp_path) and plan.pending(tmp_path, steps) == ["turn"]
    (tmp_path / plan.STATE).write_text("[1]")
    with pytest.raises(ValueError, match="stages.json: not a sweep state file"):
        plan.read_state(tmp_path)


# --- locks -------------------------------------------------------------------------------------------------

HOLDER = """
import sys, time
from empirical.training import lock
with lock.hold(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_lock_excludes_other_processes_and_dies_with_its_holder(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        assert lock.held(tmp_path)
        with pytest.raises(lock.Busy, match=f"in use by pid {proc.pid}"):
            with lock.hold(tmp_path):
                pass
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not lock.held(tmp_path)  # kill -9 leaves no stale lock
    with lock.hold(tmp_path):
        assert lock.held(tmp_path)  # seen from another open file, even in the same process
    assert not lock.held(tmp_path)


def test_waiting_for_a_lock_returns_once_it_is_free(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER.replace("60", "1.5"), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    t0 = time.perf_counter()
    with lock.hold(tmp_path, wait=True, poll=0.05):
        waited = time.perf_counter() - t0
    proc.wait()
    assert 0.3 < waited < 30


# --- runs as data ----------------------------------------------------------------------------------------


def fake_run(folder: Path, overrides, *, steps_logged=(0, 10, 20), name=None) -> Path:
    """A run folder as training leaves it (config.json, trajectories.csv, metrics.jsonl), without training."""
    cfg = make_config("smoke", ["steps=20", *overrides])
    run = folder / (name or ",".join(overrides) or "run")
    run.mkdir(parents=True)
    write_json(
        run / "config.json",
        {"train": cfg.to_json(), "probe": {"path": "p", "hash": "h"}, "stamps": [stamp()]},
    )
    steps = np.array(steps_logged)
    rng = np.random.default_rng(cfg.seed)
    trajs = [
        Trajectory(
            steps,
            rng.uniform(size=(steps.size, 2)),
            cfg.concepts,
            label,
            "naive",
            cfg.seed,
            run.name,
            accuracy=np.linspace(0, 1, steps.size),
            extra={"samples": ("8",) * steps.size},
        )
        for label in cfg.data.classes
    ]
    write_csv(run / "trajectories.csv", trajs)
    lines = [
        {"kind": "train", "step": s, "total": 5.0 - s / 10, "images_per_s": 100.0} for s in (10, 20)
    ]
    lines.append(
        {
            "kind": "eval",
            "step": 20,
            "classes": {"01": {"z": [0.1, None], "accuracy": 0.5, "unreadable": 0.25}},
        }
    )
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return run


def test_covariates_hold_what_varies_separations_and_measured_signals(tmp_path):
    for seed in (0, 1):
        for sep in (0.3, 0.8):
            fake_run(
                tmp_path / "runs", [f"seed={seed}", f"sep.color={sep}", f"lr={0.001 * (1 + seed)}"]
            )
    fake_run(
        tmp_path / "runs", ["seed=2", "sep.color=0.5", "lr=0.004"], steps_logged=(0, 10)
    )  # unfinished
    log, cov, runs = collect.collect(tmp_path)
    assert len(runs) == 4
    rows = list(csv.reader(cov.open()))
    header, body = rows[0], rows[1:]
    assert header == [
        "run",
        "seed",
        "lr",
        "sep_color",
        "sep_size",
        "signal_color",
        "signal_size",
    ]  # seed and lr vary
    by_sep = {
        float(r[header.index("sep_color")]): float(r[header.index("signal_color")]) for r in body
    }
    assert by_sep[0.8] > 5 * by_sep[0.3] > 0  # the measured signal grows with the separation
    trajs = read_csv(log)
    assert len(trajs) == 16 and {t.run for t in trajs} == {r.name for r in runs}
    assert all(
        t.extra["sep_color"][0] in ("0.3", "0.8") and t.extra["samples"] == ("8",) * 3
        for t in trajs
    )
    log, cov, runs = collect.collect(tmp_path, partial=True)
    assert len(runs) == 5


def test_masking_runs_get_mask_p_and_mixed_concepts_are_refused(tmp_path):
    fake_run(tmp_path / "a" / "runs", ["mask_p=0.25", "concepts=shape,color"], name="p0.25")
    fake_run(tmp_path / "a" / "runs", ["mask_p=0.5", "concepts=shape,color"], name="p0.5")
    _, cov, _ = collect.collect(tmp_path / "a")
    header = cov.read_text().splitlines()[0].split(",")
    assert header == [
        "run",
        "seed",
        "mask_p",
        "sep_shape",
        "sep_color",
        "signal_shape",
        "signal_color",
    ]
    fake_run(tmp_path / "b" / "runs", ["seed=0"], name="x")
    runs = collect.read_runs([tmp_path / "a", tmp_path / "b" / "runs" / "x"])
    with pytest.raises(ValueError, match="different concepts"):
        collect.table(runs, collect.covariates(runs))
    with pytest.raises(ValueError, match="not a sweep folder"):
        collect.run_folders(tmp_path / "b" / "runs" / "x")
    with pytest.raises(ValueError, match="neither a run folder"):
        collect.expand([tmp_path / "nothing"])


def test_load_runs_keeps_labels_as_strings_and_joins_covariates(tmp_path):
    pd = pytest.importorskip("pandas")
    for sep in (0.3, 0.8):
        fake_run(tmp_path / "runs", [f"sep.color={sep}"])
    df = collect.load_runs(tmp_path)
    assert isinstance(df, pd.DataFrame) and len(df) == 2 * 4 * 3
    assert sorted(df["class"].unique()) == ["00", "01", "10", "11"]
    assert df["sep_color"].dtype.kind == "f" and set(df["sep_color"]) == {0.3, 0.8}
    assert df.groupby("run")["signal_color"].nunique().eq(1).all()
    assert df["step"].dtype.kind == "i"
    train = collect.read_metrics(tmp_path / "runs" / "sep.color=0.3")
    assert list(train["step"]) == [10, 20] and train["total"].iloc[-1] == pytest.approx(3.0)
    evals = collect.read_metrics(tmp_path / "runs" / "sep.color=0.3", "eval")
    assert (
        evals.loc[0, "class"] == "01"
        and np.isnan(evals.loc[0, "z_size"])
        and evals.loc[0, "unreadable"] == 0.25
    )
    with pytest.raises(ValueError, match="kind='loss': valid: train, eval"):
        collect.read_metrics(tmp_path / "runs" / "sep.color=0.3", "loss")
    both = collect.read_metrics(sorted((tmp_path / "runs").iterdir()))  # a list, as load_runs takes
    assert list(both["run"]) == ["sep.color=0.3"] * 2 + ["sep.color=0.8"] * 2 and list(
        both["step"]
    ) == [10, 20, 10, 20]
    with pytest.raises(TypeError, match="a run folder or a list of them, got int"):
        collect.read_metrics(3)


def test_a_gzip_compressed_metrics_log_reads_as_the_plain_one(tmp_path):
    """results keeps metrics.jsonl gzip-compressed: read_metrics and last_step read it the same."""
    pytest.importorskip("pandas")
    run = fake_run(tmp_path / "runs", ["sep.color=0.3"])
    plain = run / "metrics.jsonl"
    before = collect.read_metrics(run), collect.read_metrics(run, "eval"), collect.last_step(run)
    (run / "metrics.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    after = collect.read_metrics(run), collect.read_metrics(run, "eval"), collect.last_step(run)
    assert before[0].equals(after[0]) and before[1].equals(after[1]) and before[2] == after[2] == 20


def test_colliding_run_names_fall_back_to_their_paths(tmp_path):
    a = fake_run(tmp_path / "a", ["seed=0"], name="r")
    b = fake_run(tmp_path / "b", ["seed=1"], name="r")
    runs = collect.read_runs([a, b])
    assert [r.name for r in runs] == [str(a), str(b)]


def test_a_users_thread_cap_is_respected():
    from argparse import Namespace

    from pipeline.executor import cores, job_threads

    local = Namespace(cpus_per_job=None, executor="local", max_parallel=1)
    assert job_threads(local, {}) == cores()
    assert job_threads(local, {"OMP_NUM_THREADS": "1"}) == 1  # the user's cap wins over the cores
    assert job_threads(local, {"OMP_NUM_THREADS": "999"}) == cores()  # but never oversubscribes
    assert (
        job_threads(local, {"OMP_NUM_THREADS": "zero"})
        == job_threads(local, {"OMP_NUM_THREADS": "0"})
        == cores()
    )
    slurm = Namespace(cpus_per_job=None, executor="slurm", max_parallel=8)
    assert job_threads(slurm, {}) == 4 and job_threads(slurm, {"OMP_NUM_THREADS": "2"}) == 2
    assert (
        job_threads(
            Namespace(cpus_per_job=3, executor="local", max_parallel=2), {"OMP_NUM_THREADS": "1"}
        )
        == 3
    )


def test_status_counts_failures_in_its_exit_code(tmp_path, capsys):
    from pipeline.sweep import main as sweep

    (tmp_path / "runs").mkdir()
    assert sweep(["status", str(tmp_path)]) == 2  # nothing to report is not "0 runs", exit 0
    assert "no runs (no run folder in runs/" in capsys.readouterr().err
    ok = fake_run(tmp_path / "runs", ["seed=0"])
    plan.mark(ok, "train", {})
    assert sweep(["status", str(tmp_path)]) == 0
    bad = fake_run(tmp_path / "runs", ["seed=1"])
    plan.mark(
        bad, "train", {"error": "diverged at step 12", "log": "logs/1_0_log.err"}, failed=True
    )
    assert sweep(["status", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert (
        "seed=1: FAILED at train: diverged at step 12" in out and "2 runs: 1 done, 1 failed" in out
    )
    (tmp_path / "sweep.json").write_text("[1, 2]")  # not the sweep's own file: named, no traceback
    assert sweep(["status", str(tmp_path)]) == 2
    assert (
        "sweep.json: not a sweep file written by python -m pipeline.sweep"
        in capsys.readouterr().err
    )


def test_a_job_that_died_in_its_own_code_is_reported_with_the_cause_from_its_log(tmp_path):
    from pipeline.executor import with_cause
    from pipeline.processes import last_error

    log = tmp_path / "job.err"
    log.write_text(
        "train: step 10\nTraceback (most recent call last):\n  File x\n"
        "torch.OutOfMemoryError: CUDA out of memory\nsubmitit ERROR: job failed\n"
    )
    assert last_error(log) == "torch.OutOfMemoryError: CUDA out of memory"
    assert (
        with_cause("failed during processing with trace: -----", log)
        == "failed during processing: torch.OutOfMemoryError: CUDA out of memory"
    )
    assert (
        with_cause("--then step 'fit' failed: too few points", log)
        == "--then step 'fit' failed: too few points"
    )
    assert (
        with_cause("failed during processing with trace: -----", tmp_path / "none")
        == "failed during processing with trace: -----"
    )  # no log: the message as it came


def test_collect_names_the_runs_it_leaves_out(tmp_path, capsys):
    fake_run(tmp_path / "runs", ["seed=0"])
    fake_run(tmp_path / "runs", ["seed=1"], steps_logged=(0, 10))  # unfinished
    assert collect.main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "collected 1 runs (1 unfinished left out; --partial includes them)" in captured.out
    assert "left out (unfinished): seed=1" in captured.err
    assert collect.main([str(tmp_path), "--partial"]) == 0
    assert "left out" not in capsys.readouterr().err


def test_run_folder_names_fit_the_file_system_and_stay_distinct(tmp_path):
    long = ",".join(["0.25"] * 80)  # a grid value that makes a 400-byte name
    a = plan.folder_name([("grid_overprompt", long), ("seed", "0")])
    b = plan.folder_name([("grid_overprompt", long), ("seed", "1")])
    assert len(a.encode()) <= 255 and len(b.encode()) <= 255 and a != b
    assert a == plan.folder_name(
        [("grid_overprompt", long), ("seed", "0")]
    )  # stable: a rerun finds its folder
    (tmp_path / a).mkdir()  # and the file system takes it
    assert plan.folder_name([("seed", "0")]) == "seed=0"  # short names are unchanged


def test_slurm_where_there_is_none_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, capsys
):
    from pipeline.sweep import main as sweep

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert (
        sweep(
            [
                "--preset",
                "smoke",
                "--grid",
                "seed=0,1",
                "--executor",
                "slurm",
                "--out",
                str(tmp_path / "sw"),
            ]
        )
        == 2
    )
    assert "--executor slurm: no SLURM here (sbatch is not on PATH)" in capsys.readouterr().err
    assert not (tmp_path / "sw").exists()


def test_status_shows_each_runs_latest_forecast(tmp_path, capsys):
    """Issue #56: the forecast a step (or fitting.forecast --watch --json RUN/forecast.json) wrote, one line."""
    from pipeline.sweep import main as sweep
    from fitting.records import ForecastRecord

    run = fake_run(tmp_path / "runs", ["seed=0"])
    plan.mark(run, "train", {})
    ForecastRecord.from_json(
        dict(
            run=str(run),
            at=4000.0,
            horizon=10000.0,
            observed_behavior_step=None,
            behavior_step=6400.0,
            interval=[5200.0, 8100.0],
            p_compose=0.86,
            method="clock",
            methods=[],
        )
    ).write(run / "forecast.json")
    other = fake_run(tmp_path / "runs", ["seed=1"])
    (other / "forecast.json").write_text("{}")
    assert sweep(["status", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "seed=0: done: train; class 11 composes ~ step 6,400 [5,200, 8,100], p 0.86 by 10,000"
        in out
    )
    assert "seed=1:" in out and "forecast unreadable" in out


def test_a_forecast_step_writes_into_the_run_unless_told_where():
    step = plan.parse_step("forecast --pool a b")
    assert step.argv(Path("r"))[-2:] == ["--json", "r/forecast.json"]
    assert plan.parse_step("forecast --json x.json").argv(Path("r"))[-1] == "x.json"
