"""Training CLI: configs and presets, the smoke run end to end, resume (in process and after kill -9)."""

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.training.config import TRAIN_PRESETS, TrainConfig, make_config  # noqa: E402
from empirical.nets.ema import ema_decay, ema_lag  # noqa: E402
from empirical.training.run import Run, batch_rows  # noqa: E402
from empirical.training.loop import train  # noqa: E402
from empirical.train import main  # noqa: E402
from core.trajectory import read_csv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def probe_dir(smoke_probe):
    """The session's smoke probe: the module's runs train none of their own."""
    return smoke_probe


def smoke(probe_dir, *more):
    return make_config("smoke", [f"probe={probe_dir}", *more])


def comparable(metrics):
    """Metric records without the timing fields (which differ between runs)."""
    drop = {"wall_s", "images_per_s", "eval_s"}
    return [{k: v for k, v in r.items() if k not in drop} for r in metrics]


def read_metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


# -- configuration ---------------------------------------------------------------------------


def test_presets_build_and_schedule_is_dense_early(tmp_path):
    # the faces presets need a CelebA selection (python -m empirical.celeba writes these two files)
    (tmp_path / "selection.csv").write_text("file,class,split\n")
    (tmp_path / "classes.json").write_text('{"root": "x", "concepts": ["!Male", "Smiling"]}')
    for name in TRAIN_PRESETS:
        cfg = make_config(name, [f"celeba={tmp_path}"] if name.startswith("celeba") else [])
        s = cfg.eval_schedule()
        assert s[-1] == cfg.steps and s == sorted(set(s))
        gaps = np.diff(s)
        assert gaps[0] <= gaps[-1]  # quadratic spacing: denser early
    paper = make_config("paper")
    s = paper.eval_schedule()
    assert (paper.resolution, paper.channels, paper.steps, len(s), s[0]) == (
        32,
        (64, 128, 256),
        20000,
        60,
        500,
    )
    assert s[1] == 594 and s[20] == 3933  # the official save steps
    assert (paper.p_cfg, paper.ema, paper.clip, paper.clip_scope) == (
        0.0,
        0.0,
        0.01,
        "all",
    )  # the official recipe


def test_every_set_key_has_one_line_of_help_from_the_docstring(capsys):
    import dataclasses

    from empirical.training.config_help import key_help

    fields = [f.name for f in dataclasses.fields(TrainConfig) if f.name != "preset"]
    meaning = key_help()
    assert sorted(meaning) == sorted(fields)  # every key, once, and nothing else
    assert all(len(text) > 10 for text in meaning.values())
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for name in fields:
        assert f"\n  {name} " in text, name
    assert "ema_warmup" in text and "decay min(ema, (1 + n) / (10 + n))" in text


def test_small_is_the_composing_recipe_at_24px():
    small, tiny = make_config("small"), make_config("tiny")
    assert (small.resolution, small.channels, small.blocks) == (24, (32, 64, 128), 1)
    assert (small.p_cfg, small.clip, small.clip_scope, small.ema, small.steps) == (
        0.0,
        0.01,
        "all",
        0.999,
        10000,
    )
    assert (small.sep, small.per_class, small.lr) == (
        tiny.sep,
        tiny.per_class,
        tiny.lr,
    )  # tiny's data and optimizer
    s = small.eval_schedule()
    assert (
        len(s) == 41 and len([p for p in s if 2000 <= p <= 6000]) >= 20
    )  # dense where class 11 turns


def test_quick_is_small_shortened_at_a_composing_level_reading_the_shipped_probe():
    """quick changes only the length, the checkpoints, the EMA's warm-up and the separations of small:
    the recipe that composes, the shipped probe, and checkpoints over the turn."""
    quick, small = make_config("quick").to_json(), make_config("small").to_json()
    changed = {k for k in quick if quick[k] != small[k]} - {"preset"}
    assert changed <= {"steps", "evals", "eval_dense", "ema_warmup", "sep", "sample_steps"}
    cfg = make_config("quick")
    assert cfg.sep["color"] == 0.8 and cfg.probe == make_config("small").probe
    assert cfg.steps < small["steps"] and cfg.ema_warmup
    turn = [p for p in cfg.eval_schedule() if 1500 <= p <= cfg.steps]
    assert len(turn) >= 10  # the turn and composition are seen, not jumped over


def test_small_reads_the_committed_probe_and_never_trains_into_the_package(tmp_path):
    from empirical.probing.reader import load
    from empirical.training.probes import load_probe, provide_probe

    small = make_config("small")
    _, path, digest = load_probe(small, tmp_path)
    assert digest == "16e18d564fed732e" and Path(path).parent.name == "probes"
    assert load(path)[2] == digest  # the committed weights match their recorded hash
    wide = make_config("small", ["resolution=32"])
    for reader in (load_probe, functools.partial(provide_probe, progress=False)):
        with pytest.raises(
            ValueError, match="ships no probe for color-size at 32 px.*color-size-24px"
        ):
            reader(wide, tmp_path)
    assert not (Path(path).parent / "color-size-32px").exists()
    # three concepts (issue #55): one shipped instrument for every small-3d run too
    _, cube, digest = load_probe(make_config("small-3d"), tmp_path)
    assert Path(cube).name == "color-size-bg-24px" and digest == "77a84a8ade650338"
    assert load(cube)[2] == digest
    # no probe of shape x color is shipped: small-mask trains its own, as the defaults do
    assert make_config("small-mask").probe == make_config("tiny").probe


def test_opening_a_run_never_trains_a_probe_and_training_refuses_another_run_s_folder_first(
    probe_dir, tmp_path
):
    """Issue #53: opening a Run trained a missing probe as a side effect. Now Run only reads it, and
    open_run (what training calls) checks the folder before it trains one."""
    from empirical.training.run import open_run

    missing = tmp_path / "no-probe-here"
    with pytest.raises(
        ValueError, match=re.escape(f"no probe at {missing}; python -m empirical.train trains")
    ):
        Run(make_config("smoke", [f"probe={missing}"]), tmp_path / "run")
    # nothing trained, nothing written
    assert not missing.exists() and not (tmp_path / "run").exists()
    Run(smoke(probe_dir), tmp_path / "other")  # writes the folder's config.json
    with pytest.raises(ValueError, match="holds a run with another config"):
        open_run(
            make_config("smoke", [f"probe={missing}", "seed=5"]), tmp_path / "other", progress=False
        )
    assert not missing.exists()  # refused before a probe was trained for it


def test_dense_checkpoints_join_the_quadratic_schedule():
    tiny = make_config("tiny")
    dense = [1000, 1250, 1500, 1750, 2000, 2250, 2500, 2750, 3000, 3250, 3500]
    assert set(dense) <= set(tiny.eval_schedule()) and len(tiny.eval_schedule()) == 41
    assert (
        len([s for s in tiny.eval_schedule() if 1000 <= s <= 3500]) >= 15
    )  # was 6-8 inside the turn's window
    assert (
        make_config("tiny", ["steps=2000"]).eval_schedule()[-1] == 2000
    )  # dense points past the end are dropped
    plain = make_config("tiny", ["eval_dense=none"])
    assert (
        plain.eval_schedule() == sorted(set(plain.eval_schedule()))
        and len(plain.eval_schedule()) == 30
    )


def test_held_out_classes_get_more_samples_and_the_grid_is_in_the_config():
    cfg = make_config("tiny")
    assert cfg.samples_for("11") == 64 and cfg.samples_for("01") == 32
    assert cfg.sweep("overprompt") == (0.25, 0.5, 0.75, 1.0) and cfg.sweep("patch") == ("final",)
    assert cfg.sweep("intervention")[:2] == ((1.0, 0.0), (2.0, 0.0))
    assert make_config("tiny", ["grid_cfg=2,4"]).sweep("cfg") == (2.0, 4.0)
    assert make_config("tiny", ["grid_overprompt=0.5"]).to_json()["grid_overprompt"] == [0.5]


def test_overrides_parse_types_and_separations():
    cfg = make_config(
        "tiny",
        ["steps=123", "channels=16,32", "sep.color=0.6", "keep_checkpoints=false", "ema=0.99"],
    )
    assert cfg.steps == 123 and cfg.channels == (16, 32) and cfg.sep["color"] == 0.6
    assert cfg.keep_checkpoints is False and cfg.ema == 0.99


@pytest.mark.parametrize(
    "preset, overrides, match",
    [
        ("huge", [], "unknown preset 'huge'; valid: smoke, tiny, small, paper"),
        ("tiny", ["stepz=3"], "unknown key 'stepz'; valid: sep.<concept>"),
        ("tiny", ["steps"], "expected KEY=VALUE"),
        ("tiny", ["steps=many"], "steps=many"),
        ("tiny", ["sep.color=9"], "separation color=9.0 is outside the valid range"),
        ("tiny", ["sep.shape=0.2"], "not an active concept"),
        ("tiny", ["ema=1"], r"ema=1.0 is not valid; valid: \[0, 1\)"),
        ("tiny", ["channels=32,64,128", "resolution=10"], "divisible by 4"),
        ("tiny", ["keep_checkpoints=maybe"], "true or false"),
        ("tiny", ["device=tpu"], "valid: auto, cpu or cuda"),
        ("tiny", ["eval_dense=1000,3500"], "give start,end,count"),
        ("tiny", ["eval_dense=3000,1000,5"], "start < end"),
        ("tiny", ["eval_dense=1000,2000,0"], "1 <= count"),
        ("tiny", ["grid_overprompt=0.5,2"], r"reaches in \[0, 1\]"),
        ("tiny", ["grid_intervention=1,0,2"], "an even number of values"),
        ("tiny", ["grid_cfg=0"], r"guidance scales in \(0, 100\]"),
        ("tiny", ["samples_held_out=0"], "samples_held_out must be >= 1"),
    ],
)
def test_bad_config_names_key_and_valid_values(preset, overrides, match):
    with pytest.raises(ValueError, match=match):
        make_config(preset, overrides)


def test_cli_bad_input_exits_2(capsys, tmp_path):
    assert main(["--preset", "nope", "--out", str(tmp_path / "r")]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err
    assert main(["--preset", "smoke", "--set", "lr=-1", "--out", str(tmp_path / "r")]) == 2
    assert "lr=-1.0 is not valid; valid: (0, 1]" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_batch_rows_are_epochs_of_permutations():
    n, b = 10, 4
    rows = torch.cat([batch_rows(s, n, b, seed=3) for s in range(5)])  # 20 rows = 2 epochs
    assert sorted(rows[:10].tolist()) == list(range(10)) and sorted(rows[10:].tolist()) == list(
        range(10)
    )
    assert torch.equal(batch_rows(2, n, b, 3), batch_rows(2, n, b, 3))
    assert not torch.equal(batch_rows(0, n, b, 3), batch_rows(0, n, b, 4))


# -- the smoke run -----------------------------------------------------------------------------


def test_smoke_run_writes_a_valid_log(probe_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--preset", "smoke", "--set", f"probe={probe_dir}", "--out", str(out)]) == 0
    cfg = smoke(probe_dir)
    trajectories = read_csv(out / "trajectories.csv")
    assert sorted(t.label for t in trajectories) == ["00", "01", "10", "11"]
    for t in trajectories:
        assert t.protocol == "naive" and t.concepts == ("color", "size") and t.seed == 0
        assert t.step.tolist() == cfg.eval_schedule()
        assert t.accuracy is not None and np.all((t.accuracy >= 0) & (t.accuracy <= 1))
    metrics = read_metrics(out)
    train_recs = [r for r in metrics if r["kind"] == "train"]
    for key in (
        "total",
        "diffusion",
        "prior",
        "reconstruction",
        "gamma_0",
        "gamma_1",
        "grad_norm",
        "wall_s",
        "images_per_s",
    ):
        assert all(np.isfinite(r[key]) for r in train_recs), key
    assert [r["step"] for r in metrics if r["kind"] == "eval"] == cfg.eval_schedule()
    doc = json.loads((out / "config.json").read_text())
    assert doc["train"]["steps"] == cfg.steps and len(doc["probe"]["hash"]) == 16
    assert (
        len(doc["stamps"]) == 1
        and doc["stamps"][0]["step"] == 0
        and doc["stamps"][0]["device"].startswith("cpu")
    )
    assert doc["stamps"][0]["torch"].startswith(torch.__version__.split("+")[0])
    assert sorted(p.name for p in (out / "samples").glob("*.png")) == [
        "step_000000.png",
        "step_000040.png",
    ]
    assert len(list((out / "checkpoints").glob("step_*.pt"))) == len(cfg.eval_schedule())
    # rerunning a finished run changes nothing and duplicates nothing
    before = (out / "trajectories.csv").read_text()
    assert main(["--preset", "smoke", "--set", f"probe={probe_dir}", "--out", str(out)]) == 0
    assert (out / "trajectories.csv").read_text() == before
    assert [s["step"] for s in json.loads((out / "config.json").read_text())["stamps"]] == [
        0,
        cfg.steps,
    ]  # one per start
    # the same folder with another config is refused
    assert (
        main(
            [
                "--preset",
                "smoke",
                "--set",
                f"probe={probe_dir}",
                "--set",
                "lr=0.01",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "holds a run with another config (lr: 0.001 -> 0.01)" in capsys.readouterr().err


def test_a_log_file_gets_one_line_per_checkpoint(probe_dir, tmp_path, capsys):
    """Where stderr is not a terminal (a background run's log) tqdm draws nothing; each checkpoint is a line."""
    train(smoke(probe_dir, "steps=4", "evals=2"), tmp_path / "quiet", progress=False)
    assert "train smoke: step" not in capsys.readouterr().err
    cfg = smoke(probe_dir)
    train(cfg, tmp_path / "run", progress=True)
    lines = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("train smoke: step")
    ]
    evals = [s for s in cfg.eval_schedule() if s > 0]  # step 0 is evaluated before training starts
    assert [int(line.split()[3].split("/")[0].replace(",", "")) for line in lines] == evals
    assert all(f"/{cfg.steps:,}, " in line and "steps/s, loss " in line for line in lines)
    held = cfg.data.held_out[0]
    last = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    z = ", ".join("nan" if v is None else f"{v:.2f}" for v in last["classes"][held]["z"])
    assert f"class {held} at ({z}), accuracy {last['classes'][held]['accuracy']:.2f}" in lines[-1]
    assert lines[-1].endswith("training left 0 min")


def test_resume_equals_uninterrupted_run(probe_dir, tmp_path):
    cfg = smoke(probe_dir, "ema=0.9")  # EMA too: its state must be restored
    train(cfg, tmp_path / "whole", progress=False)
    train(
        cfg, tmp_path / "cut", progress=False, stop_after=27
    )  # dies 7 updates after the step-20 checkpoint
    partial = read_csv(tmp_path / "cut" / "trajectories.csv")
    assert partial[0].step.tolist() == [0, 4, 17]
    train(cfg, tmp_path / "cut", progress=False)
    a, b = (
        read_csv(tmp_path / "whole" / "trajectories.csv"),
        read_csv(tmp_path / "cut" / "trajectories.csv"),
    )
    for ta, tb in zip(a, b):
        assert ta.label == tb.label and ta.step.tolist() == tb.step.tolist()
        np.testing.assert_allclose(tb.z, ta.z, atol=1e-6)
        np.testing.assert_allclose(tb.accuracy, ta.accuracy, atol=1e-6)
    ma, mb = (
        comparable(read_metrics(tmp_path / "whole")),
        comparable(read_metrics(tmp_path / "cut")),
    )
    assert [r["step"] for r in mb] == [r["step"] for r in ma]  # nothing lost, nothing duplicated
    for ra, rb in zip(ma, mb):
        if ra["kind"] == "train":
            assert rb["total"] == pytest.approx(ra["total"], rel=1e-5)


def test_ema_warmup_shortens_the_average_early_and_reaches_the_decay():
    assert ema_decay(0.999, 0, False) == ema_decay(0.999, 5000, False) == 0.999
    assert ema_decay(0.999, 0, True) == pytest.approx(0.1) and ema_decay(
        0.999, 90, True
    ) == pytest.approx(0.91)
    warm = [ema_decay(0.999, n, True) for n in range(0, 12000, 7)]
    assert np.all(np.diff(warm) >= 0) and max(warm) == 0.999
    assert (
        ema_decay(0.999, 8989, True) < 0.999 == ema_decay(0.999, 8990, True)
    )  # the full decay from 10 / (1 - d) - 1


def test_ema_lag_is_the_closed_form_without_warmup_and_shorter_with_it():
    import math

    for decay in (0.995, 0.999):
        for fraction in (0.5, 0.8):
            assert ema_lag(decay, fraction) == math.ceil(math.log(1 - fraction) / math.log(decay))
    assert (ema_lag(0.995), ema_lag(0.995, 0.8), ema_lag(0.999), ema_lag(0.999, 0.8)) == (
        139,
        322,
        693,
        1609,
    )
    warm = [ema_lag(0.999, at=n, warmup=True) for n in (1000, 3000, 6000, 20000)]
    assert (
        warm == sorted(warm) and warm[0] < 150 and warm[-1] == 693
    )  # capped at the constant decay from step 8,990
    assert ema_lag(0.0) == 1
    with pytest.raises(ValueError, match="fraction=1"):
        ema_lag(0.999, 1)


@pytest.mark.parametrize("warmup", [False, True])
def test_the_ema_update_uses_the_warmed_decay(probe_dir, tmp_path, warmup):
    cfg = smoke(probe_dir, "ema=0.9", f"ema_warmup={warmup}")
    run = Run(cfg, tmp_path / "run")
    before = [p.detach().clone() for p in run.ema.parameters()]
    run.train_step()
    decay = 0.1 if warmup else 0.9  # the first update: (1 + 0) / (10 + 0)
    for old, ema, new in zip(before, run.ema.parameters(), run.vdm.parameters()):
        torch.testing.assert_close(ema, decay * old + (1 - decay) * new.detach())
    assert (
        json.loads((tmp_path / "run" / "config.json").read_text())["train"]["ema_warmup"] is warmup
    )


@pytest.mark.slow  # long end to end: run with -m slow
def test_resume_after_kill_9(probe_dir, tmp_path):
    """A real SIGKILL at an arbitrary moment, then the same command: the log equals an uninterrupted run."""
    args = [
        "--preset",
        "smoke",
        "--set",
        f"probe={probe_dir}",
        "--set",
        "steps=150",
        "--set",
        "save_every=10",
        "--set",
        "evals=8",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "empirical.train", *args]
    subprocess.run(
        [*cmd, "--out", str(tmp_path / "whole")], check=True, env=env, capture_output=True
    )
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [*cmd, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    last = out / "checkpoints" / "last.pt"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if last.exists() and torch.load(last, weights_only=False)["step"] >= 30:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert torch.load(last, weights_only=False)["step"] < 150
    done = subprocess.run([*cmd, "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr
    a, b = read_csv(tmp_path / "whole" / "trajectories.csv"), read_csv(out / "trajectories.csv")
    for ta, tb in zip(a, b):
        assert ta.step.tolist() == tb.step.tolist()
        np.testing.assert_allclose(tb.z, ta.z, atol=1e-6)
    steps = [r["step"] for r in read_metrics(out)]
    assert steps == [r["step"] for r in read_metrics(tmp_path / "whole")]


def test_default_config_is_the_tiny_preset():
    assert TrainConfig() == make_config("tiny")


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_masking_rate_matches_p(p):
    """Underspecification: only 'red triangle' (10) prompts lose their color, at rate p."""
    from empirical.images.dgp import MASK_FILL, SLOTS
    from empirical.training.run import training_set

    cfg = make_config("tiny-mask", [f"mask_p={p}", "resolution=8", "per_class=2000"])
    _, h, hit = training_set(cfg, torch.device("cpu"))
    h = h.numpy()
    labels = np.repeat(cfg.data.train_classes, cfg.per_class)
    masked = np.all(h[:, SLOTS["color"]] == MASK_FILL, axis=1)
    assert np.array_equal(masked, hit)
    assert not masked[labels != "10"].any()
    rate = masked[labels == "10"].mean()
    assert abs(rate - p) <= 4 * np.sqrt(p * (1 - p) / cfg.per_class) + 1e-12
    assert np.all(h[masked][:, SLOTS["shape"]] == [0, 1])  # the shape word stays


def test_small_mask_is_the_composing_net_with_tiny_masks_setup():
    masked, small, tiny_mask = (make_config(n, []) for n in ("small-mask", "small", "tiny-mask"))
    assert (masked.resolution, masked.channels, masked.p_cfg, masked.clip, masked.ema) == (
        small.resolution,
        small.channels,
        small.p_cfg,
        small.clip,
        small.ema,
    )
    assert (masked.concepts, masked.mask_p, masked.mask_classes, masked.mask_concepts) == (
        tiny_mask.concepts,
        tiny_mask.mask_p,
        tiny_mask.mask_classes,
        tiny_mask.mask_concepts,
    )


def test_masking_config_errors():
    with pytest.raises(ValueError, match="'11' is not a training class; valid: 00, 01, 10"):
        make_config("tiny-mask", ["mask_classes=11"])
    with pytest.raises(ValueError, match="mask_concepts: 'size' is not an active concept"):
        make_config("tiny-mask", ["mask_concepts=size"])


def test_clip_scope_net_leaves_the_schedule_out(probe_dir, tmp_path):
    """The schedule's gradient (driven by the ~4,800 bits/dim reconstruction term) dominates 'all', not 'net'."""
    norms = {}
    for scope in ("net", "all"):
        cfg = smoke(probe_dir, f"clip_scope={scope}", "steps=10", "evals=2", "grids=0")
        train(cfg, tmp_path / scope, progress=False)
        norms[scope] = next(
            r["grad_norm"] for r in read_metrics(tmp_path / scope) if r["kind"] == "train"
        )
    assert norms["all"] > 1000 and norms["all"] > 100 * norms["net"]
    with pytest.raises(ValueError, match="clip_scope=some is not valid; valid: net or all"):
        make_config("smoke", ["clip_scope=some"])


# -- precision ---------------------------------------------------------------------------------


@pytest.mark.slow  # two trainings, 10 s
def test_bf16_run_matches_the_fp32_reference(probe_dir, tmp_path):
    """The default path on a bf16 CPU (autocast) against the fp32 reference: the same run within a stated tolerance.

    Same seed, data, dropout masks and sampling noise; only the arithmetic differs. Tolerance: loss within
    1e-4 relative, every concept coordinate within 0.06 and every accuracy within 0.1 (one or two of the smoke
    preset's 4-16 samples), far inside the sampling noise of a point at these sample counts.
    """
    runs = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / precision
        train(smoke(probe_dir, f"precision={precision}"), out, progress=False)
        runs[precision] = out
        assert json.loads((out / "config.json").read_text())["stamps"][-1]["precision"] == precision
    a, b = read_csv(runs["fp32"] / "trajectories.csv"), read_csv(runs["bf16"] / "trajectories.csv")
    for ta, tb in zip(a, b):
        assert ta.label == tb.label and ta.step.tolist() == tb.step.tolist()
        np.testing.assert_array_equal(np.isnan(ta.z), np.isnan(tb.z))
        np.testing.assert_allclose(tb.z, ta.z, atol=0.06)
        np.testing.assert_allclose(tb.accuracy, ta.accuracy, atol=0.1)
    la = [r["total"] for r in read_metrics(runs["fp32"]) if r["kind"] == "train"]
    lb = [r["total"] for r in read_metrics(runs["bf16"]) if r["kind"] == "train"]
    np.testing.assert_allclose(lb, la, rtol=1e-4)


def test_precision_is_checked_and_old_runs_read_as_fp32(probe_dir, tmp_path, capsys):
    from empirical.training.config import saved_config
    from empirical.nets.device import resolve_precision

    with pytest.raises(
        ValueError, match=r"precision=fp16 is not valid; valid: auto \(bf16 autocast"
    ):
        make_config("smoke", ["precision=fp16"])
    assert resolve_precision("fp32", torch.device("cpu")) == "fp32"
    assert resolve_precision("auto", torch.device("cpu")) in ("bf16", "fp32")
    out = tmp_path / "old"
    train(smoke(probe_dir, "precision=fp32", "steps=4", "evals=1", "grids=0"), out, progress=False)
    doc = json.loads((out / "config.json").read_text())
    del doc["train"]["precision"]  # as written before the field existed
    (out / "config.json").write_text(json.dumps(doc))
    assert saved_config(out)["train"]["precision"] == "fp32"
    args = [
        "--preset",
        "smoke",
        "--set",
        f"probe={probe_dir}",
        "--set",
        "steps=4",
        "--set",
        "evals=1",
        "--set",
        "grids=0",
        "--out",
        str(out),
    ]
    if (
        resolve_precision("auto", torch.device("cpu")) == "bf16"
    ):  # resuming it on the default path would mix precisions
        assert main(args) == 2
        assert "precision: 'fp32' -> 'auto'" in capsys.readouterr().err
    assert main([*args, "--set", "precision=fp32"]) == 0


def test_adamw_is_fused_where_torch_has_it_and_steps_like_the_loop():
    from empirical.training.run import optimizer

    cfg = make_config("smoke")
    torch.manual_seed(0)
    a, b = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    b.load_state_dict(a.state_dict())
    fused, loop = (
        optimizer(a.parameters(), cfg),
        torch.optim.AdamW(b.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay),
    )
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 4):
        assert fused.defaults["fused"] is True
    x = torch.randn(8, 5)
    for _ in range(3):
        for model, opt in ((a, fused), (b, loop)):
            opt.zero_grad()
            model(x).square().sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_tuples_lists_every_tuple_field():
    """TUPLES (normalized on construction, lists in config.json) names exactly the tuple-typed fields."""
    import dataclasses
    import typing

    from empirical.training.config import TUPLES

    hints = typing.get_type_hints(TrainConfig)
    tuples = {
        f.name for f in dataclasses.fields(TrainConfig) if typing.get_origin(hints[f.name]) is tuple
    }
    assert set(TUPLES) == tuples
    cfg = TrainConfig(**{**TrainConfig().to_json(), "preset": "tiny"})  # lists in, tuples held
    assert all(isinstance(getattr(cfg, name), tuple) for name in TUPLES)
