"""Training and elicitation under bad input: nothing lost, nothing poisoned, one clean line and exit 2."""

import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from empirical.training import checkpoint  # noqa: E402
from empirical.nets import tensorfile  # noqa: E402
from empirical import data as data_cli  # noqa: E402
from empirical import elicit  # noqa: E402
from empirical.training.config import make_config  # noqa: E402
from empirical.training.run import Diverged  # noqa: E402
from empirical.training.loop import train  # noqa: E402
from empirical.train import main as train_main  # noqa: E402
from empirical.nets.vdm import VDM  # noqa: E402
from core.trajectory import read_csv  # noqa: E402


@pytest.fixture(scope="module")
def run(smoke_run):
    return smoke_run


def copy_run(run, tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(run, dst)
    return dst


def one_error_line(capsys, prog):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line or "Traceback" in line]
    assert errors == lines[-1:] and lines[-1].startswith(f"python -m empirical.{prog}: error: "), (
        err
    )  # progress lines may come before
    return lines[-1]


def naive_rows(path):
    return {
        (t.label, int(s)): (tuple(z), a)
        for t in read_csv(path)
        if t.protocol == "naive"
        for s, z, a in zip(t.step, t.z, t.accuracy)
    }


@pytest.mark.slow  # trains and elicits, 20 s
def test_elicit_after_the_log_was_deleted_keeps_every_naive_row(run, tmp_path):
    r = copy_run(run, tmp_path)
    before = naive_rows(r / "trajectories.csv")
    (r / "trajectories.csv").unlink()
    assert elicit.main([str(r), "--protocols", "overprompt"]) == 0
    after = naive_rows(r / "trajectories.csv")
    assert set(after) == set(before)
    for key, (z, a) in before.items():
        np.testing.assert_allclose(after[key][0], z, atol=1e-12)
        assert after[key][1] == pytest.approx(a)
    assert any(t.protocol == "overprompt" for t in read_csv(r / "trajectories.csv"))


@pytest.mark.slow  # long end to end: run with -m slow
def test_a_diverging_run_stops_before_saving_nan_and_can_resume(tmp_path, monkeypatch):
    out = tmp_path / "div"
    real = VDM.loss
    calls = {"n": 0}

    def poisoned(self, x, h, **draws):
        calls["n"] += 1
        terms = real(self, x, h, **draws)
        if calls["n"] == 25:  # smoke evaluates at steps 0, 4, 17, 40 and saves at 20 (save_every)
            terms = {k: v * float("nan") for k, v in terms.items()}
        return terms

    monkeypatch.setattr(VDM, "loss", poisoned)
    with pytest.raises(Diverged, match=r"diverged at step 25 .*last\.pt still holds step 20"):
        train(make_config("smoke"), out, progress=False)
    state = checkpoint.load(out / "checkpoints" / "last.pt")
    assert state["step"] == 20
    for p in state["logs"][
        "points"
    ]:  # a point is finite, or missing because nothing was readable; never NaN otherwise
        assert np.isfinite(p[3]) and (np.all(np.isfinite(p[2])) or p[4]["unreadable"] == 1.0), p
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())
    monkeypatch.setattr(VDM, "loss", real)
    summary = train(make_config("smoke"), out, progress=False)  # resumes from step 20 and finishes
    assert summary["step"] == 40


def test_a_diverged_evaluation_is_not_logged(tmp_path, monkeypatch, capsys, smoke_probe):
    """Non-finite generated images stop the run; they are not read as 'nothing readable' (a missing point)."""
    from empirical.training import evaluate

    real_naive, real_generate = evaluate.naive, evaluate.generate

    def naive(*args, **kwargs):
        if kwargs["step"] == 17:  # from the third evaluation on, the sampler returns NaN images
            monkeypatch.setattr(
                evaluate, "generate", lambda *a, **k: real_generate(*a, **k) * np.nan
            )
        return real_naive(*args, **kwargs)

    monkeypatch.setattr(evaluate, "naive", naive)
    out = tmp_path / "eval"
    assert (
        train_main(["--preset", "smoke", "--set", f"probe={smoke_probe}", "--out", str(out)]) == 2
    )
    line = one_error_line(capsys, "train")
    assert "diverged at step 17" in line and "non-finite values" in line
    assert checkpoint.load(out / "checkpoints" / "last.pt")["step"] == 4
    assert all(t.step.max() <= 4 for t in read_csv(out / "trajectories.csv"))


@pytest.mark.parametrize(
    "setting, words",
    [
        ("gamma_max=inf", "finite"),
        ("lr=1e6", "lr=1000000.0 is not valid"),
        ("lr=nan", "finite"),
        ("sep.color=nan", "sep.color=nan"),
        ("seed=-1", "seed"),
        ("guidance=inf", "finite"),
        ("gamma_min=-1e9", "gamma_min"),
        ("probe=", "probe"),
        ("mask_p=nan", "finite"),
    ],
)
def test_config_values_are_finite_and_in_range(setting, words, capsys, tmp_path):
    assert train_main(["--preset", "smoke", "--set", setting, "--out", str(tmp_path / "x")]) == 2
    assert words in one_error_line(capsys, "train")
    assert not (tmp_path / "x").exists()


def test_an_empty_config_in_the_run_folder_is_refused_and_kept(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text("{}")
    assert train_main(["--preset", "smoke", "--out", str(out)]) == 2
    assert "no 'train' section" in one_error_line(capsys, "train")
    assert (out / "config.json").read_text() == "{}"


def test_a_checkpoint_of_another_architecture_is_refused_before_config_is_written(
    run, tmp_path, capsys
):
    out = tmp_path / "other"
    (out / "checkpoints").mkdir(parents=True)
    shutil.copy(run / "checkpoints" / "last.pt", out / "checkpoints" / "last.pt")
    assert train_main(["--preset", "smoke", "--set", "channels=8,16", "--out", str(out)]) == 2
    line = one_error_line(capsys, "train")
    assert "another config" in line and "channels" in line
    assert not (out / "config.json").exists()


def test_weights_of_another_architecture_give_one_line(run):
    cfg = make_config("smoke", ["channels=8,16"])
    with pytest.raises(ValueError, match="do not fit the configured model") as err:
        checkpoint.load_model(run, checkpoint.saved_steps(run)[-1], cfg)
    assert "\n" not in str(err.value)


def test_a_missing_probe_file_is_refused_before_training(tmp_path, capsys):
    assert (
        train_main(
            [
                "--preset",
                "smoke",
                "--set",
                f"probe={tmp_path}/none/probe.pt",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "is not a file" in one_error_line(capsys, "train")
    assert not (tmp_path / "r").exists()


def test_a_probe_folder_under_a_file_is_refused_before_training(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert (
        train_main(
            [
                "--preset",
                "smoke",
                "--set",
                f"probe={tmp_path}/file/probe",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "which is a file" in one_error_line(capsys, "train")


def corrupt_probe(r):
    doc = json.loads((r / "config.json").read_text())
    doc["probe"]["path"] = str(r / "probe")  # the copy's own probe, not the fixture's
    (r / "config.json").write_text(json.dumps(doc))
    (r / "probe" / "probe.pt").write_bytes(b"not a torch file")


class _Payload:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_a_malicious_pickle_is_refused_and_not_run(tmp_path):
    canary, bad = tmp_path / "ran", tmp_path / "probe.pt"
    torch.save({"config": {}, "state_dict": _Payload(canary), "hash": "x"}, bad)
    with pytest.raises(ValueError, match="cannot read this probe"):
        tensorfile.load(bad, "probe")
    assert not canary.exists()


@pytest.mark.parametrize(
    "make, words",
    [
        (
            lambda r: (r / "config.json").write_text(
                json.dumps({"preset": "fig5", "model": "eq1"})
            ),
            "no 'train' section",
        ),
        (lambda r: (r / "config.json").write_text("[1, 2]"), "no 'train' section"),
        (lambda r: (r / "config.json").write_bytes(b"\xff\xfe{\x00}\x00"), "NUL bytes"),
        (lambda r: corrupt_probe(r), "cannot read this probe"),
        (
            lambda r: (r / "elicit").mkdir() or (r / "elicit" / "overprompt.json").write_text("[]"),
            "not an elicitation file",
        ),
        (
            lambda r: (
                (r / "elicit").mkdir()
                or (r / "elicit" / "overprompt.json").write_text(
                    json.dumps({"steps": {"2": {"11": [[0.5, "x"], 0.1, "s=2"]}}})
                )
            ),
            "z is not a list of numbers",
        ),
    ],
)
def test_elicit_refuses_broken_run_folders(run, tmp_path, make, words, capsys):
    r = copy_run(run, tmp_path)
    make(r)
    before = (r / "trajectories.csv").read_bytes()
    assert elicit.main([str(r), "--protocols", "overprompt"]) == 2
    assert words in one_error_line(capsys, "elicit")
    assert (r / "trajectories.csv").read_bytes() == before


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--classes", ""], "--classes"),
        (["--classes", " , "], "--classes"),
        (["--protocols", ""], "--protocols"),
        (["--protocols", "overprompt", "--classes", "22"], "unknown class"),
    ],
)
def test_elicit_refuses_empty_or_unknown_choices(run, tmp_path, flags, words, capsys):
    r = copy_run(run, tmp_path)
    assert elicit.main([str(r), *flags]) == 2
    assert words in one_error_line(capsys, "elicit")
    assert not (r / "elicit").exists()


def test_elicit_on_a_file_or_missing_folder(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert elicit.main([str(tmp_path / "f")]) == 2
    assert "not a folder" in one_error_line(capsys, "elicit")
    assert elicit.main([str(tmp_path / "none")]) == 2
    one_error_line(capsys, "elicit")


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--seed", "-1"], "--seed -1"),
        (["--sep", "color=nan,size=0.4"], "finite"),
        (["--n", "0"], "--n 0"),
        (["--concepts", ""], "at least one concept"),
    ],
)
def test_data_cli_refuses(flags, words, tmp_path, capsys):
    assert data_cli.main([*flags, "--out", str(tmp_path / "d")]) == 2
    assert words in one_error_line(capsys, "data")
    assert not (tmp_path / "d").exists()
