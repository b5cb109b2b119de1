"""python -m empirical.convert: an array saved elsewhere (.npy, .npz, .pth) becomes the trajectory log, checked."""

import numpy as np
import pytest

from empirical.convert import main
from core.trajectory import read_csv

CLASSES, CONCEPTS = "00,01,10,11", "color,size"


def points(runs=2, classes=4, steps=5):
    """(runs, classes, steps, concepts) points in [0, 1], one missing point."""
    z = np.random.default_rng(0).random((runs, classes, steps, 2))
    z[0, 3, 1] = np.nan
    return z


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_an_npy_in_another_axis_order_round_trips(tmp_path, capsys):
    z = points(runs=1)[0]  # (classes, steps, concepts)
    np.save(tmp_path / "z.npy", np.transpose(z, (2, 1, 0)))  # stored as (concepts, steps, classes)
    code, _ = run(
        capsys,
        tmp_path / "z.npy",
        "--layout",
        "concept,step,class",
        "--concepts",
        CONCEPTS,
        "--classes",
        CLASSES,
        "--steps",
        "0,100,200,400,800",
        "--out",
        tmp_path / "t.csv",
    )
    assert code == 0
    trajs = {t.label: t for t in read_csv(tmp_path / "t.csv")}
    np.testing.assert_allclose(trajs["11"].z, z[3], atol=1e-6, equal_nan=True)
    assert list(trajs["00"].step) == [0, 100, 200, 400, 800]


def test_an_npz_entry_with_its_steps_and_run_names(tmp_path, capsys):
    z = points()
    np.savez(tmp_path / "z.npz", data=z, steps=np.array([0, 10, 20, 30, 40]))
    code, _ = run(
        capsys,
        tmp_path / "z.npz",
        "--key",
        "data",
        "--steps-key",
        "steps",
        "--layout",
        "run,class,step,concept",
        "--concepts",
        CONCEPTS,
        "--classes",
        CLASSES,
        "--runs",
        "sep0.2,sep0.8",
        "--out",
        tmp_path / "t.csv",
    )
    assert code == 0
    trajs = read_csv(tmp_path / "t.csv")
    assert sorted({t.run for t in trajs}) == ["sep0.2", "sep0.8"] and len(trajs) == 8


def test_a_pth_dict_of_tensors_as_the_official_exports(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    z = points()
    torch.save(
        {"fig": {"data": torch.tensor(z, dtype=torch.float32)}, "steps": [0, 10, 20, 30, 40]},
        tmp_path / "d.pth",
    )
    code, _ = run(
        capsys,
        tmp_path / "d.pth",
        "--key",
        "fig.data",
        "--steps-key",
        "steps",
        "--layout",
        "run,class,step,concept",
        "--concepts",
        CONCEPTS,
        "--classes",
        CLASSES,
        "--out",
        tmp_path / "t.csv",
    )
    assert code == 0
    first = read_csv(tmp_path / "t.csv")[0]
    np.testing.assert_allclose(first.z, z[0, 0], atol=1e-6)


class Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_pth_with_objects_is_refused_without_unpickling_them(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    torch.save({"data": Evil()}, tmp_path / "evil.pth")
    code, err = run(
        capsys,
        tmp_path / "evil.pth",
        "--key",
        "data",
        "--layout",
        "class,step,concept",
        "--concepts",
        CONCEPTS,
        "--classes",
        CLASSES,
        "--steps",
        "0",
        "--out",
        tmp_path / "t.csv",
    )
    out = capsys.readouterr().out
    assert (
        code == 2
        and "not readable without unpickling arbitrary objects" in err
        and "must never run" not in out
    )
    assert not (tmp_path / "t.csv").exists()


def _cut_npz(path, keep: float = 1.0, damage: bool = False) -> None:
    """A .npz of points(), cut to a fraction of its bytes, or with bytes inside its first member
    flipped."""
    np.savez_compressed(path, a=points())
    data = bytearray(path.read_bytes())
    if damage:
        for i in range(60, 90):
            data[i] ^= 0xFF
    path.write_bytes(bytes(data[: int(len(data) * keep)]))


@pytest.mark.parametrize(
    "setup, args, message",
    [
        (
            lambda d: np.save(d / "z.npy", np.array([{"a": 1}], dtype=object)),
            ["z.npy", "--steps", "0"],
            "holds Python objects, not numbers",
        ),
        (
            lambda d: np.savez(d / "z.npz", a=points(), b=np.arange(5)),
            ["z.npz", "--steps", "0,1,2,3,4"],
            "holds several entries (a, b): name one with --key",
        ),
        (
            lambda d: np.savez(d / "z.npz", a=points()),
            ["z.npz", "--key", "data", "--steps", "0,1,2,3,4"],
            "has no entry 'data'; valid: a",
        ),
        (
            lambda d: np.save(d / "z.npy", points()),
            ["z.npy", "--steps", "0,1,2,3"],
            "steps: 4 given, but the array's step axis has 5",
        ),
        (lambda d: np.save(d / "z.npy", points()), ["z.npy", "--steps", "0,1,1,3,4"], "increasing"),
        (
            lambda d: np.save(d / "z.npy", points() * 2),
            ["z.npy", "--steps", "0,1,2,3,4"],
            "lies outside [0, 1]",
        ),
        (lambda d: np.save(d / "z.npy", points()), ["z.npy"], "give the steps either with --steps"),
        (
            lambda d: np.save(d / "z.npy", points()),
            ["z.npy", "--steps", "0,a"],
            "give numbers, comma-separated",
        ),
        (
            lambda d: (d / "z.txt").write_text("1"),
            ["z.txt", "--steps", "0"],
            "valid: .npy, .npz, .pth, .pt",
        ),
        (  # issue #74: a BadZipFile traceback
            lambda d: _cut_npz(d / "z.npz", keep=0.6),
            ["z.npz", "--steps", "0,1,2,3,4"],
            "z.npz: not a whole .npz file (File is not a zip file)",
        ),
        (  # its directory whole, a member's bytes damaged: found when the entry is read
            lambda d: _cut_npz(d / "z.npz", damage=True),
            ["z.npz", "--steps", "0,1,2,3,4"],
            "z.npz: not a whole .npz file",
        ),
        (
            lambda d: np.save(d / "z.npy", points()),
            ["z.npy", "--steps", "0,1,2,3,4", "--out", "z.npy"],
            "must end in .csv",
        ),
        (
            lambda d: np.save(d / "z.npy", points()),
            ["z.npy", "--steps", "0,1,2,3,4", "--runs", "a"],
            "runs: 1 given, but the array's run axis has 2",
        ),
    ],
)
def test_bad_input_is_named(tmp_path, capsys, setup, args, message):
    setup(tmp_path)
    argv = [
        tmp_path / args[0],
        "--layout",
        "run,class,step,concept",
        "--concepts",
        CONCEPTS,
        "--classes",
        CLASSES,
        *args[1:],
    ]
    if "--out" not in args:
        argv += ["--out", tmp_path / "t.csv"]
    else:
        argv[argv.index("--out") + 1] = tmp_path / "z.npy"
    code, err = run(capsys, *argv)
    assert code == 2 and message in err, err
