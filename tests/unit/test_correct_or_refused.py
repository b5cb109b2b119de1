"""Issue #74's reproducers, each refused or correct: the guarded writer (never through a symbolic link, never over a
file another command reads, never over another run), finite-or-refused solvers, a reader that goes away."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core import cli
from core.files import atomic_write
from pipeline import keep
from fitting import forecast, outside

ROOT = Path(__file__).parents[2]
RUN = ROOT / "results/study-small/weak-cpu/runs/sep.color=0.2,seed=1"


def _run(folder: Path, seed: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"train": {"preset": "smoke", "seed": seed}}))
    (folder / "trajectories.csv").write_text("step,class,z_color\n0,00,0.5\n")
    (folder / "metrics.jsonl").write_text('{"kind": "train", "step": 0}\n')
    return folder


def test_keep_refuses_a_destination_holding_another_run(tmp_path, capsys):
    a, b = _run(tmp_path / "a", 0), _run(tmp_path / "b", 7)
    before = {p.name: p.read_bytes() for p in b.iterdir()}
    assert keep.main([str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "holds another run" in err and "seed (7 there, 0 here)" in err
    assert {
        p.name: p.read_bytes() for p in b.iterdir()
    } == before  # nothing replaced, nothing deleted


def test_keep_never_writes_through_a_symbolic_link(tmp_path, capsys):
    a = _run(tmp_path / "a", 0)
    dest, elsewhere = tmp_path / "dest", tmp_path / "precious.json"
    dest.mkdir()
    elsewhere.write_text("keep me")
    (dest / "config.json").symlink_to(elsewhere)
    assert keep.main([str(a), str(dest)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert elsewhere.read_text() == "keep me"


def test_the_atomic_writer_refuses_a_symbolic_link(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    (tmp_path / "link.txt").symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        atomic_write(tmp_path / "link.txt", lambda fh: fh.write("new"))
    assert target.read_text() == "old"


@pytest.mark.parametrize(
    "name",
    [
        "elicit/intervention.json",
        "elicit/patch.json",
        "elicit/cfg.json",
        "turn.json",
        "config.json",
    ],
)
def test_a_forecast_never_writes_over_a_file_another_command_reads(tmp_path, name, capsys):
    out = tmp_path / name
    out.parent.mkdir(exist_ok=True)
    out.write_text("{}")
    assert forecast.main([str(RUN), "--at", "3000", "--json", str(out)]) == 2
    assert "which other commands read" in capsys.readouterr().err
    assert out.read_text() == "{}"


def test_every_elicitation_protocol_file_is_guarded():
    from empirical.training.protocols import PROTOCOLS

    from core.layout import held

    assert all(held(Path("run/elicit") / f"{p}.json") for p in PROTOCOLS)
    assert held(Path("run/cfg.json")) is None  # outside a run's elicit/ folder the name is free


def test_every_record_names_a_guarded_file():
    from core.record import KNOWN
    import fitting.analyses.event_records  # noqa: F401  (its records join KNOWN)

    assert all(cls.FILE in cli.guarded() for cls in KNOWN if cls.FILE)


def test_the_outside_score_never_writes_over_its_registration(tmp_path, capsys):
    reg = ROOT / "results/study-small/outside/preregistration.json"
    before = reg.read_bytes()
    assert outside.main(["score", str(reg), str(RUN), "--out", str(reg)]) == 2
    assert reg.read_bytes() == before
    assert "preregistration.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--horizon", "inf"],
        ["--horizon", "nan"],
        ["--watch", "1e-300"],
        ["--watch", "inf"],
    ],
)
def test_forecast_refuses_infinite_and_degenerate_numbers(argv, capsys):
    assert forecast.main([str(RUN), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "eq1", "--param", "lam=1e100"],
        # the same refusal further out, each a new process of 4 s: run with -m slow
        pytest.param(["--model", "eq1", "--param", "lam=1e150"], marks=pytest.mark.slow),
        ["--model", "eq1", "--param", "lam=1e60", "--method", "dopri"],
        pytest.param(
            ["--model", "eq1", "--param", "lam=1e120", "--method", "dopri"], marks=pytest.mark.slow
        ),
        ["--model", "eq1", "--t-end", "1e150"],  # was "done" with 199 of 200 rows empty
    ],
)
def test_an_overflowing_integration_is_refused_and_writes_nothing(tmp_path, args):
    out = tmp_path / "sim"
    r = subprocess.run(
        [sys.executable, "-m", "theory.simulate", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 2, r.stderr
    assert "integration failed" in r.stderr and "Traceback" not in r.stderr
    assert not (out / "trajectories.csv").exists()


@pytest.mark.slow  # a forecast in a new process, 14 s; the command frame's pipe handling: test_a_command_started_with_stderr_closed_ends_as_it_would_with_it_open
def test_a_reader_that_goes_away_does_not_stop_the_output_file(tmp_path):
    out = tmp_path / "f.json"
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command prints
    r = subprocess.run(
        [sys.executable, "-m", "fitting.forecast", str(RUN), "--at", "3000", "--json", str(out)],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    os.close(write)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["at"] == 3000.0


def test_train_refuses_a_run_folder_another_process_is_training(tmp_path, capsys):
    from empirical import train
    from empirical.training import lock

    out = tmp_path / "run"
    with lock.hold(out):  # as a sweep or another batch's training holds it
        assert train.main(["--preset", "smoke", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "in use by pid" in err and "Traceback" not in err
    assert not (out / "trajectories.csv").exists()


@pytest.mark.parametrize(
    "energy, said",
    [
        ("1e-400*z1 + (z2 - 1)**2/2", "below the smallest float"),
        ("(z01 - 1)**2 + (z1 - 1)**2", "no leading zero"),
        ("(z_1 - 1)**2 + (z1 - 1)**2", "name one coordinate twice"),
    ],
)
def test_an_energy_whose_coordinates_would_be_misread_is_refused(energy, said):
    from theory.models.user_energy import from_expression

    with pytest.raises(ValueError, match=said):
        from_expression(energy)


def test_coordinates_are_named_as_written_and_abs_differentiates():
    from theory.models.user_energy import from_expression

    assert from_expression("(z2 - 1)**2/2").concepts == ("c2",)
    assert from_expression("(z1 - 1)**2/2 + (z2 - 1)**2/2").concepts == ("color", "size")
    land = from_expression(
        "Abs(z1 - 1) + (z2 - 1)**2/2"
    )  # a printer error before (the symbols were complex)
    out = np.empty(2)
    land.numpy_flow(0.0, np.array([0.5, 0.5]), land.pack(land.resolve(None))[0], out)
    assert out == pytest.approx([1.0, 0.5])
    for fn in ("Min", "Max", "min", "max"):
        land = from_expression(f"{fn}(z1, 0.5)**2/2 + (z2 - 1)**2/2")
        land.numpy_flow(0.0, np.array([0.2, 0.5]), land.pack(land.resolve(None))[0], out)
        assert np.isfinite(out).all()


def test_a_huge_sparse_log_is_refused_before_it_is_read(tmp_path):
    from core.files import read_text

    big = tmp_path / "trajectories.csv"
    with open(big, "wb") as fh:
        fh.truncate((1 << 30) + 1)  # sparse: no disk, 1 GiB and a byte
    with pytest.raises(ValueError, match="GiB, more than the 1 GiB"):
        read_text(big, "trajectory log")


def test_celeba_refuses_a_resolution_past_its_cap(capsys):
    from empirical import celeba

    argv = ["nowhere", "--concepts", "Male,Smiling", "--out", "x", "--resolution", "20000"]
    assert celeba.main(argv) == 2
    assert "--resolution from 4 to 512" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--model", "eq1", "--concepts", ",".join(f"c{i}" for i in range(1000))], "at most 32"),
        (["--energy", "+".join(f"z{i}**2" for i in range(1, 41))], "40 coordinates; at most 32"),
    ],
)
def test_a_thousand_concepts_are_refused_in_a_line_not_compiled_for_minutes(
    argv, words, tmp_path, capsys
):
    from theory.simulate import main

    assert main([*argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not (tmp_path / "x").exists()


@pytest.mark.slow  # writes and reads 32 MiB, 7 s
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from /proc")
def test_a_huge_metrics_log_is_read_a_line_at_a_time(tmp_path):
    """32 MiB of valid metrics lines (a few hundred kB gzipped): the ladder's reading stays near the
    interpreter's own size (the whole log as dicts took 450 MiB here, 14 GB for 1 GiB of lines)."""
    import gzip

    line = json.dumps({"kind": "train", "step": 1, "wall_s": 1.0, "loss": 0.5})
    with gzip.open(tmp_path / "metrics.jsonl.gz", "wt", compresslevel=1) as fh:
        for _ in range(32 * 1024 * 1024 // (len(line) + 1)):
            fh.write(line + "\n")
        fh.write(json.dumps({"kind": "train", "step": 9, "wall_s": 3.0}) + "\n")
    code = (
        "import re, sys; from pathlib import Path\n"
        "from fitting.analyses.ladder_rows import cost\n"
        "c = cost(Path(sys.argv[1]), {'train': {'steps': 9}})\n"
        # this process's own peak (ru_maxrss would count the forking parent's memory)
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(c['steps'], int(hwm) >> 10)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=600,
    )
    steps, peak_mib = map(int, done.stdout.split())
    assert steps == 9 and peak_mib < 250, (peak_mib, done.stderr)


def test_a_full_disk_while_saving_a_checkpoint_is_named_not_torch_s_unexpected_pos(
    tmp_path, monkeypatch
):
    torch = pytest.importorskip("torch")
    import errno

    from empirical.nets import tensorfile

    def full(obj, fh):
        fh.write(b"PK")
        raise RuntimeError(
            "[enforce fail at inline_container.cc:603] . unexpected pos 4416 vs 4352"
        )

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OSError) as caught:
        tensorfile.save(tmp_path / "last.pt", {"step": 1})
    assert caught.value.errno == errno.ENOSPC and "last.pt: could not be written" in str(
        caught.value
    )
    assert "MiB free" in cli.describe_os_error(caught.value)
    assert list(tmp_path.iterdir()) == []  # no half file, no temp file left


PULSE = (  # z1 pulled toward 1 at rate 1000 for 0.001 of model time: it ends at 1 - e^-1
    "1000*(sigmoid(20000*(t - 5.3)) - sigmoid(20000*(t - 5.301)))*(z1 - 1)**2/2 + (z2 - 0.5)**2/2"
)


def test_a_pulse_narrower_than_the_output_spacing_is_not_stepped_over():
    """The exact quadrature cannot resolve it and said so; auto then gave it to dopri, whose
    adaptive step jumped the pulse (z1 0.0, 'ok'). Now dopri's steps are bounded by the time scale
    the quadrature found, and --max-step bounds any method's."""
    from theory.models.user_energy import from_expression
    from theory.solvers.integrate import integrate, time_grid

    land = from_expression(PULSE, {})
    t, z0 = time_grid(10, 11), {"z0": np.array([[0.0, 0.0]])}
    auto = integrate(land, t, z0, method="auto")
    assert auto.success and auto.method == "exact+dopri" and "steps of at most" in auto.message
    assert auto.z[0, -1, 0] == pytest.approx(1 - np.exp(-1), abs=1e-3)
    bounded = integrate(land, t, z0, method="dopri", max_step=2e-5)
    assert bounded.z[0, -1, 0] == pytest.approx(1 - np.exp(-1), abs=1e-3)
    with pytest.raises(ValueError, match="max_step must be > 0"):
        integrate(land, t, z0, max_step=0.0)


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_max_step_must_be_a_positive_time(value, tmp_path, capsys):
    from theory.simulate import main

    assert main(["--model", "eq1", "--max-step", value, "--out", str(tmp_path / "x")]) == 2
    assert f"--max-step {float(value)}: must be a positive time" in capsys.readouterr().err


def test_a_command_started_with_stderr_closed_ends_as_it_would_with_it_open(monkeypatch, tmp_path):
    """Issue #74: with `2>&-` Python starts with sys.stderr None; a progress bar's isatty() or an error line
    was an AttributeError. The command now runs and exits as usual; what it would say goes nowhere."""
    from core import progress

    @cli.command("planted")
    def planted(argv):
        for _ in progress.bar(range(3), desc="work"):
            pass
        if argv:
            raise ValueError("planted bad input")
        (tmp_path / "done").write_text("ok")
        return 0

    monkeypatch.setattr(sys, "stderr", None)
    assert planted([]) == 0 and (tmp_path / "done").read_text() == "ok"
    assert planted(["bad"]) == 2
    assert sys.stderr is None  # given back as it was
    monkeypatch.undo()
    shell = f"{sys.executable} -m fitting.fit {tmp_path / 'missing.csv'} 2>&-"
    done = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stdout, done.stdout


def test_a_forecast_of_a_run_whose_config_is_edited_into_another_shape_is_refused_in_one_line(
    tmp_path, capsys
):
    """Issue #74: "train": [] was an AttributeError, "steps": [15000] a TypeError, deep in the forecast."""
    import shutil

    for edit, said in (
        ({"train": []}, "not a training run's config (no 'train' section in config.json)"),
        ({"steps": [15000]}, "config.json's train.steps is [15000], not a whole number"),
        ({"seed": "1"}, "config.json's train.seed is '1', not a whole number"),
        ({"sep": {"color": "0.8"}}, "train.sep is {'color': '0.8'}; it needs a number for each"),
    ):
        run = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("samples", "*.png"))
        doc = json.loads((run / "config.json").read_text())
        if "train" in edit:
            doc.update(edit)
        else:
            doc["train"].update(edit)
        (run / "config.json").write_text(json.dumps(doc))
        assert forecast.main([str(run), "--at", "2000"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err, err


def test_keep_on_a_full_disk_leaves_the_older_copy_whole(tmp_path, monkeypatch, capsys):
    """Issue #74: keep on a full disk left DEST/trajectories.csv cut mid-row (only metrics was written whole)."""
    import errno
    import shutil

    import core.files

    run, dest = tmp_path / "run", tmp_path / "dest"
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("samples", "*.png"))
    assert keep.main([str(run), str(dest)]) == 0
    before = {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()}
    log = run / "trajectories.csv"  # the run went on: a longer log to keep
    log.write_bytes(log.read_bytes() + log.read_bytes().split(b"\n", 1)[1])

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(core.files.os, "fsync", full)
    assert keep.main([str(run), str(dest)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left" in err, err
    assert {p.name: p.read_bytes() for p in dest.iterdir() if p.is_file()} == before
    assert not [p for p in dest.iterdir() if p.name.endswith(".tmp")]  # no half-written temp left
