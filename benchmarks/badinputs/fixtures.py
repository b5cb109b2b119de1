"""The bad-input table's pieces (benchmarks/bad_inputs.py): a case, the shared workspace every case copies its
inputs from, the setups that prepare a case's folder and the checks that inspect it afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

TORCH = {"empirical.data", "empirical.probe", "empirical.train", "empirical.elicit"}


@dataclass
class Case:
    """One bad input: ``python -m command *args`` in a fresh folder ``{c}`` (shared fixtures in ``{w}``).

    Args:
        kind: which kind of bad input it is (the issue's list).
        command: the module, e.g. ``theory.simulate``.
        args: arguments; ``{c}`` is this case's folder, ``{w}`` the shared workspace.
        words: a phrase the error line must contain (the problem named).
        expect: ``error`` (exit 2) or ``ok`` (valid input, exit 0).
        setup: prepares ``{c}`` from the workspace before the run.
        check: inspects ``{c}`` afterwards; returns a problem, or None.
        slow: takes more than a few seconds (left out of the in-process test).
    """

    kind: str
    command: str
    args: list[str]
    words: str = ""
    expect: str = "error"
    setup: Callable[[Path, Path], None] | None = None
    check: Callable[[Path, Path], str | None] | None = None
    slow: bool = False
    label: str = ""

    @property
    def needs_torch(self) -> bool:
        return self.command in TORCH or (
            self.setup is not None and getattr(self.setup, "torch", False)
        )

    def shown(self) -> str:
        text = self.label or " ".join(a.replace("{c}/", "").replace("{w}/", "") for a in self.args)
        return text if len(text) <= 70 else text[:67] + "..."


def prepare(w: Path, *, torch: bool) -> None:
    """The shared workspace: a valid log and its broken variants, a file to nest under, a sweep's log and
    covariates, a run folder of the log, and (torch) a smoke run."""
    import numpy as np

    from theory.solvers.integrate import integrate, time_grid
    from theory.models.paper import eq1
    from core.trajectory import Trajectory, write_csv

    sol = integrate(eq1(), time_grid(25, 30), {"t_switch": [[8.0, 0.0]]}, method="stacked")
    z = sol.z[0]
    acc = np.clip(z.prod(axis=1), 0, 1)
    steps = np.arange(30) * 100
    write_csv(w / "log.csv", [Trajectory(steps, z, ("color", "size"), "11", "naive", 0, "r", acc)])
    write_csv(
        w / "three.csv",
        [Trajectory(steps, np.c_[z, z[:, :1]], ("color", "size", "shape"), "11", "naive", 0, "r")],
    )
    _broken_logs(w, (w / "log.csv").read_text())
    (w / "file").write_text("a plain file\n")
    many = integrate(
        eq1(),
        time_grid(25, 30),
        {"t_switch": [[t, 0.0] for t in (4, 6, 8, 10, 12)]},
        method="stacked",
    ).z
    trajs = [
        Trajectory(steps, zr, ("color", "size"), "11", "naive", 0, f"r{i}")
        for i, zr in enumerate(many)
    ]
    write_csv(w / "sweep.csv", trajs)
    rows = ["run,signal_color,signal_size"] + [f"r{i},{0.01 * (i + 1)},0.05" for i in range(5)]
    (w / "covariates.csv").write_text("\n".join(rows) + "\n")
    (w / "cov_text.csv").write_text("\n".join(rows[:3] + ["r2,lots,0.05"] + rows[4:]) + "\n")
    run = w / "naive-run"
    run.mkdir()
    shutil.copy(w / "log.csv", run / "trajectories.csv")
    if torch:
        from empirical.training.config import make_config
        from empirical.training.loop import train

        train(make_config("smoke"), w / "run", progress=False)
        shutil.copytree(w / "run", w / "fresh")  # a pristine copy for cases that change a run


def _broken_logs(w: Path, text: str) -> None:
    """The valid log ``text``'s broken variants: empty, cut, reordered, out of range, other encodings."""
    lines = text.splitlines(keepends=True)
    variants = {
        "empty.csv": "",
        "header.csv": lines[0],
        "nostep.csv": text.replace("step,", "stp,", 1),
        "outside.csv": text.replace(lines[3].split(",")[5], "1.5", 1),
        "nan.csv": text.replace(lines[3].split(",")[5], "nan", 1),
        "dup.csv": "".join(lines[:4] + [lines[3]] + lines[4:]),
        "decreasing.csv": "".join(lines[:3] + [lines[4], lines[3]] + lines[5:]),
        "huge.csv": "".join(lines[:-1] + [lines[-1].replace("2900,", "1e300,", 1)]),
        "cut.csv": text[:-4],
        "fields.csv": "".join(lines[:3] + [lines[3].rstrip("\n") + ",9\n"] + lines[4:]),
        "short.csv": "".join(lines[:3]),
        "letters.csv": text.replace(lines[3].split(",")[6], "abc", 1),
    }
    for name, body in variants.items():
        (w / name).write_text(body)
    (w / "utf16.csv").write_bytes(text.encode("utf-16"))
    (w / "latin1.csv").write_bytes(text.replace("naive", "naïve").encode("latin-1"))
    (w / "binary.csv").write_bytes(bytes(range(256)) * 8)
    (w / "nul.csv").write_bytes(text.encode()[:200] + b"\x00" + text.encode()[200:])


def copy_run(c: Path, w: Path) -> None:
    shutil.copytree(w / "fresh", c / "run")


copy_run.torch = True  # type: ignore[attr-defined]


def then(*steps: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def setup(c: Path, w: Path) -> None:
        for s in steps:
            s(c, w)

    setup.torch = any(getattr(s, "torch", False) for s in steps)  # type: ignore[attr-defined]
    return setup


def write(rel: str, data: str | bytes) -> Callable[[Path, Path], None]:
    def setup(c: Path, w: Path) -> None:
        path = c / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(data, bytes) else path.write_text)(data)

    return setup


def copy_log(folder: str) -> Callable[[Path, Path], None]:
    def setup(c: Path, w: Path) -> None:
        (c / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(w / "log.csv", c / folder / "trajectories.csv")

    return setup


def copy_file(name: str) -> Callable[[Path, Path], None]:
    """Setup: the workspace's file ``name``, copied into the case folder."""

    def setup(c: Path, w: Path) -> None:
        shutil.copy(w / name, c / name)

    return setup


def two_levels(c: Path, w: Path) -> None:
    """Setup: a collected sweep, the workspace's sweep.csv with a covariates table of two runs at two Δcolor levels."""
    copy_file("sweep.csv")(c, w)
    write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,0,0.4\n")(c, w)


def own_probe(c: Path, w: Path) -> None:
    """Point the copied run's config at its own probe (the smoke probe lives inside the run)."""
    doc = json.loads((c / "run" / "config.json").read_text())
    doc["probe"]["path"] = str(c / "run" / "probe")
    (c / "run" / "config.json").write_text(json.dumps(doc))


class Payload:
    """An object that, unpickled, runs a command: it touches ``{c}/ran`` (what the injection checks look for)."""

    def __init__(self, c: Path):
        self.c = c

    def __reduce__(self):
        return (os.system, (f"touch {self.c / 'ran'}",))


def malicious_probe(c: Path, w: Path) -> None:
    import torch

    torch.save(
        {"config": {}, "state_dict": Payload(c), "hash": "x"}, c / "run" / "probe" / "probe.pt"
    )


def no_file(name: str) -> Callable[[Path, Path], str | None]:
    def check(c: Path, w: Path) -> str | None:
        return f"{name} was written" if (c / name).exists() else None

    return check


def same_naive_rows(c: Path, w: Path) -> str | None:
    from core.trajectory import read_csv

    def rows(path):
        return {(t.label, int(s)) for t in read_csv(path) if t.protocol == "naive" for s in t.step}

    before, after = rows(w / "fresh" / "trajectories.csv"), rows(c / "run" / "trajectories.csv")
    return None if before == after else f"naive rows lost: {len(before - after)} of {len(before)}"


def unchanged(rel: str, data: str | bytes) -> Callable[[Path, Path], str | None]:
    def check(c: Path, w: Path) -> str | None:
        path = c / rel
        now = path.read_bytes() if isinstance(data, bytes) else path.read_text()
        return None if now == data else f"{rel} was changed"

    return check


def exists(rel: str) -> Callable[[Path, Path], str | None]:
    return lambda c, w: None if (c / rel).exists() else f"{rel} was not written"


def array_file(name: str, make: Callable[[], object]) -> Callable[[Path, Path], None]:
    """Setup: ``{c}/name`` saved from what ``make`` returns (.npy: an array; .npz: a dict of arrays)."""

    def setup(c: Path, w: Path) -> None:
        import numpy as np

        c.mkdir(parents=True, exist_ok=True)
        value = make()
        if name.endswith(".npz"):
            np.savez(c / name, **value)
        else:
            np.save(c / name, value, allow_pickle=True)

    return setup


def malicious_points(c: Path, w: Path) -> None:
    """Setup: a .pth whose entry, unpickled, would run a command (touch {c}/ran)."""
    import torch

    c.mkdir(parents=True, exist_ok=True)
    torch.save({"data": Payload(c)}, c / "points.pth")


malicious_points.torch = True


def points():
    import numpy as np

    return np.random.default_rng(0).random((4, 5, 2))  # (classes, steps, concepts)


def sweep_folder(rel: str, text: str) -> Callable[[Path, Path], None]:
    """Setup: a sweep folder (``runs/seed=0/`` inside) whose sweep.json, at ``rel``, holds ``text``."""
    return then(
        write(rel, text),
        lambda c, w: (c / Path(rel).parent / "runs" / "seed=0").mkdir(parents=True),
    )


def then_files(*names: str) -> Callable[[Path, Path], None]:
    """Setup: several workspace files copied into the case folder."""
    return then(*(copy_file(n) for n in names))


def same_file(name: str) -> Callable[[Path, Path], str | None]:
    """Check: the case folder's copy of workspace file ``name`` is unchanged."""
    return lambda c, w: (
        None if (c / name).read_bytes() == (w / name).read_bytes() else f"{name} was changed"
    )
