"""Every command against bad input, as a careless or hostile user would type it: the table in docs/reliability.md.

  python benchmarks/bad_inputs.py                 # all cases (about 6 min on 2 cores; trains a smoke run)
  python benchmarks/bad_inputs.py --no-torch      # theory, fitting and figures only (about 2 min)
  python benchmarks/bad_inputs.py --only simulate --write-docs

Each case runs ``python -m <command> ...`` in a fresh folder, with a time limit, and is scored:

  clean error       exit 2, the last stderr line is 'python -m <command>: error: ...' (ours or argparse's),
                    it names the problem (the case's key words) and no traceback was printed
  accepted          exit 0 where the input is valid after all (e.g. an energy with no parameters),
                    and the case's check of what was written passed
  unclear error     exit 2 but the message lacks the key words
  traceback         a Python traceback reached the user
  silently accepted exit 0 where an error was due, or a check failed (e.g. rows lost, code run)
  hang              still running at the time limit

The exit status is 1 when any case is not 'clean error' or 'accepted'. ``--write-docs`` rewrites the
table between the markers in docs/reliability.md. The case list is also imported by
tests/integration/test_bad_inputs_table.py, which runs its torch-free cases in process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "reliability.md"
MARK_BEGIN, MARK_END = "<!-- bad-inputs table: begin -->", "<!-- bad-inputs table: end -->"
COMMANDS = (
    "theory.simulate",
    "fitting.fit",
    "fitting.predict",
    "fitting.capability",
    "fitting.masking",
    "fitting.turn",
    "fitting.study",
    "figures.training",
    "figures.masking",
    "figures.study",
    "empirical.data",
    "empirical.probe",
    "empirical.train",
    "empirical.elicit",
    "empirical.sweep",
    "empirical.convert",
)
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


# -- fixtures --------------------------------------------------------------------------------------


def prepare(w: Path, *, torch: bool) -> None:
    """The shared workspace: a valid log and its broken variants, a file to nest under, a smoke run."""
    import numpy as np

    from theory.integrate import integrate, time_grid
    from theory.models import eq1
    from theory.trajectory import Trajectory, write_csv

    sol = integrate(eq1(), time_grid(25, 30), {"t_switch": [[8.0, 0.0]]}, method="stacked")
    z = sol.z[0]
    acc = np.clip(z.prod(axis=1), 0, 1)
    steps = np.arange(30) * 100
    write_csv(w / "log.csv", [Trajectory(steps, z, ("color", "size"), "11", "naive", 0, "r", acc)])
    write_csv(
        w / "three.csv",
        [Trajectory(steps, np.c_[z, z[:, :1]], ("color", "size", "shape"), "11", "naive", 0, "r")],
    )
    text = (w / "log.csv").read_text()
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
    (w / "file").write_text("a plain file\n")
    many = integrate(
        eq1(),
        time_grid(25, 30),
        {"t_switch": [[t, 0.0] for t in (4, 6, 8, 10, 12)]},
        method="stacked",
    ).z
    write_csv(
        w / "sweep.csv",
        [
            Trajectory(steps, zr, ("color", "size"), "11", "naive", 0, f"r{i}")
            for i, zr in enumerate(many)
        ],
    )
    rows = ["run,signal_color,signal_size"] + [f"r{i},{0.01 * (i + 1)},0.05" for i in range(5)]
    (w / "covariates.csv").write_text("\n".join(rows) + "\n")
    (w / "cov_text.csv").write_text("\n".join(rows[:3] + ["r2,lots,0.05"] + rows[4:]) + "\n")
    run = w / "naive-run"
    run.mkdir()
    shutil.copy(w / "log.csv", run / "trajectories.csv")
    if torch:
        from empirical.config import make_config
        from empirical.train import train

        train(make_config("smoke"), w / "run", progress=False)
        shutil.copytree(w / "run", w / "fresh")  # a pristine copy for cases that change a run


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
    from theory.trajectory import read_csv

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


# -- the cases ---------------------------------------------------------------------------------------


def _cases() -> list[Case]:
    S, F, CAP = "theory.simulate", "fitting.fit", "fitting.capability"
    TR, EL, DA, PR = "empirical.train", "empirical.elicit", "empirical.data", "empirical.probe"
    PD = "fitting.predict"
    ST, FS = "fitting.study", "figures.study"
    SW, sweep = "empirical.sweep", ["--preset", "smoke", "--executor", "debug", "--out", "{c}/sw"]
    canary = "touch {c}/ran"
    out = ["--out", "{c}/out"]
    ran = no_file("ran")
    inj = "injection"
    cases = [
        Case(
            inj,
            S,
            [
                "--energy",
                f"a*(z1-1)**2 + (z2-1)**2 + __import__('os').system('{canary}')",
                "--param",
                "a=1",
                *out,
            ],
            "'__import__'",
            check=ran,
        ),
        Case(
            inj,
            S,
            ["--energy", f"z1**2 + z2 + eval(\"__import__('os').system('{canary}')\")", *out],
            "'eval'",
            check=ran,
        ),
        Case(inj, S, ["--energy", "z1**2 + z2 + exec('import os')", *out], "'exec'", check=ran),
        Case(
            inj,
            S,
            ["--energy", "z1**2 + z2 + open('{c}/ran', 'w').write('x')", *out],
            "'open'",
            check=ran,
        ),
        Case(
            inj,
            S,
            ["--energy", f"z1**2 + z2 + (lambda: __import__('os').system('{canary}'))()", *out],
            "lambda",
            check=ran,
        ),
        Case(
            inj,
            S,
            [
                "--energy",
                f"z1**2 + z2 + [__import__('os').system('{canary}') for _ in (1,)][0]",
                *out,
            ],
            "comprehension",
            check=ran,
        ),
        Case(
            inj,
            S,
            ["--energy", f"z1**2 + z2 + len(f\"{{__import__('os').system('{canary}')}}\")", *out],
            "'len'",
            check=ran,
        ),
        Case(
            inj, S, ["--energy", "z1**2 + z2 + z1.__class__", *out], "attribute access", check=ran
        ),
        Case(
            inj,
            S,
            ["--energy", "z1**2 + z2 + __builtins__", *out],
            "not an allowed name",
            check=ran,
        ),
        Case(
            inj,
            S,
            ["--energy", "z1**2 + z2 + ().__class__.__bases__[0].__subclasses__()", *out],
            "not allowed",
            check=ran,
        ),
        Case(
            inj,
            S,
            ["--energy", "z1**2 + z2 + getattr(z1, '__class__')", *out],
            "'getattr'",
            check=ran,
        ),
        Case(inj, S, ["--energy", "z1**2 + z2 + exp(x=1)", *out], "keyword", check=ran),
        Case(inj, S, ["--energy", "z1**2; import os", *out], "cannot parse"),
        Case(inj, S, ["--energy", "z1**2 + z2 + (a := 1)", *out], "assignment"),
        Case(inj, S, ["--energy", "z1**2 + z2 + 'text'", *out], "not a number"),
        Case(
            "huge or nested input",
            S,
            ["--energy", "z1**2 + z2" + " + z1" * 1200, *out],
            "at most 2000",
            label="--energy 'z1**2 + z2 + z1 + z1 + ...' (6,010 characters)",
        ),
        Case(
            "huge or nested input",
            S,
            ["--energy", "z1 + z2 + " + "(" * 300 + "1" + ")" * 300, *out],
            "nested",
            label="--energy with 300 nested parentheses",
        ),
        Case(
            "huge or nested input",
            S,
            ["--energy", "z1 + z2 + " + "-" * 1900 + "1", *out],
            "nested",
            label="--energy 'z1 + z2 + ----...1' (1,900 unary minus)",
        ),
        Case(
            "huge or nested input",
            S,
            ["--energy", "z1 + z2 + 9**9**9**9", *out],
            "not a finite real number",
        ),
        Case("bad energy", S, ["--energy", "", *out], "empty"),
        Case("bad energy", S, ["--energy", "(z1 - 1", *out], "cannot parse"),
        Case("bad energy", S, ["--energy", "foo(z1) + z2", *out], "'foo'"),
        Case("bad energy", S, ["--energy", "a*(z1-1)**2 + z2**2", *out], "no value was given"),
        Case(
            "bad energy",
            S,
            ["--energy", "(z1-1)**2 + z2**2", "--param", "b=1", *out],
            "do not appear",
        ),
        Case("bad energy", S, ["--energy", "(x-1)**2", *out], "no state variables"),
        Case("bad energy", S, ["--energy", "z1/0 + z2", *out], "divides by zero"),
        Case(
            "valid energy",
            S,
            ["--energy", "(z1-1)**2 + (z2-1)**2", *out],
            expect="ok",
            check=exists("out/trajectories.csv"),
        ),
        Case(
            "bounded work",
            S,
            ["--model", "eq1", "--t-end", "1e7", *out],
            expect="ok",
            slow=True,
            check=exists("out/trajectories.csv"),
        ),  # auto takes the exact path: solved in bounded work
        Case(
            "bounded work",
            S,
            ["--model", "eq1", "--t-end", "1e7", "--method", "dopri", *out],
            "too many steps",
            slow=True,
        ),
        Case(
            "bounded work",
            S,
            ["--model", "eq1", "--t-end", "1e7", "--method", "loop", *out],
            "too many steps",
            slow=True,
        ),
        Case(
            "bounded work", S, ["--model", "eq1", "--points", "20000000", *out], "at most 2,000,000"
        ),
        Case(
            "bounded work",
            S,
            ["--model", "eq1", "--points", "20000", "--sweep", "k=" + ",".join(["1"] * 200), *out],
            "log rows",
            label="--points 20000 --sweep k=1,1,...(200 values)",
        ),
        Case("bad number", S, ["--model", "eq1", "--points", "1", *out], "at least 2"),
        Case("bad number", S, ["--model", "eq1", "--points", "x", *out], "invalid int"),
        Case("bad number", S, ["--model", "eq1", "--t-end", "-1", *out], "--t-end"),
        Case("bad number", S, ["--model", "eq1", "--t-end", "nan", *out], "--t-end"),
        Case("bad number", S, ["--model", "eq1", "--t-end", "inf", *out], "--t-end"),
        Case("bad number", S, ["--model", "eq1", "--rtol", "0", *out], "--rtol"),
        Case("bad number", S, ["--model", "eq1", "--atol", "inf", *out], "--atol"),
        Case("bad number", S, ["--model", "eq1", "--param", "lam=abc", *out], "must be numbers"),
        Case("bad number", S, ["--model", "eq1", "--param", "lam=nan", *out], "finite"),
        Case("bad number", S, ["--model", "eq1", "--param", "lam=-1", *out], "valid range"),
        Case("bad number", S, ["--model", "eq1", "--param", "z0=2", *out], "z0 must lie in"),
        Case("bad name", S, ["--model", "eq1", "--param", "nope=1", *out], "no parameter 'nope'"),
        Case("bad name", S, ["--model", "eq1", "--param", "lam", *out], "expected NAME=VALUE"),
        Case("bad name", S, ["--model", "eq1", "--param", "t_switch_3=1", *out], "no parameter"),
        Case("bad name", S, ["--model", "eq1", "--sweep", "k=", *out], "expected NAME=VALUE"),
        Case("bad name", S, ["--model", "nope", *out], "invalid choice"),
        Case("bad name", S, ["--param", "lam=1", *out], "need --model or --energy"),
        Case("bad name", S, ["--model", "eq1", "--concepts", "a,a", *out], "distinct"),
        Case("bad name", S, ["--model", "notebook", "--concepts", "a,b,c", *out], "exactly 2"),
        Case("bad name", S, ["--model", "eq1", "--class", "", *out], "--label ''"),
        Case("bad name", S, ["--model", "eq1", "--label", " 11", *out], "--label"),
        Case("output path", S, ["--model", "eq1", "--out", "{w}/file"], "is a file"),
        Case("output path", S, ["--model", "eq1", "--out", "{w}/file/sub"], "which is a file"),
        # fitting.fit
        Case("missing input", F, ["{w}/none.csv"], "no such file"),
        Case("unreadable log", F, ["{w}"], "is a folder"),
        Case("unreadable log", F, ["{w}/binary.csv"], "NUL bytes"),
        Case("unreadable log", F, ["{w}/nul.csv"], "NUL bytes"),
        Case("unreadable log", F, ["{w}/utf16.csv"], "UTF-16"),
        Case("unreadable log", F, ["{w}/latin1.csv"], "not UTF-8"),
        Case("malformed log", F, ["{w}/empty.csv"], "empty"),
        Case("malformed log", F, ["{w}/header.csv"], "no data rows"),
        Case("malformed log", F, ["{w}/nostep.csv"], "'step'"),
        Case("malformed log", F, ["{w}/outside.csv"], "outside [0, 1]"),
        Case("malformed log", F, ["{w}/nan.csv"], "not a finite number"),
        Case("malformed log", F, ["{w}/letters.csv"], "not a number"),
        Case("malformed log", F, ["{w}/dup.csv"], "duplicate step"),
        Case("malformed log", F, ["{w}/decreasing.csv"], "decreasing step"),
        Case("malformed log", F, ["{w}/fields.csv"], "fields"),
        Case("garbage fit", F, ["{w}/huge.csv", *out], "median gap"),
        Case("garbage fit", F, ["{w}/cut.csv", *out], "does not end with a newline"),
        Case("garbage fit", F, ["{w}/short.csv", "--no-figures", *out], "points"),
        Case("bad flag", F, ["{w}/log.csv", "--class", "99", *out], "no trajectory matches"),
        Case("bad flag", F, ["{w}/log.csv", "--boot", "5", *out], "--boot 5"),
        Case("bad flag", F, ["{w}/log.csv", "--persist", "0", *out], "--persist 0"),
        Case("bad flag", F, ["{w}/log.csv", "--fix", "lam=abc", *out], "must be numbers"),
        Case("bad flag", F, ["{w}/log.csv", "--fix", "lam=inf", *out], "finite"),
        Case("bad flag", F, ["{w}/log.csv", "--fix", "nope=1", "--no-figures", *out], "nope"),
        Case("bad flag", F, ["{w}/three.csv", "--model", "notebook", *out], "needs 2 concepts"),
        Case("output path", F, ["{w}/log.csv", "--out", "{w}/file"], "is a file"),
        Case("output path", F, ["{w}/log.csv", "--out", "{w}/file/fit"], "which is a file"),
        # fitting.capability
        Case("never elicited", CAP, ["{w}/naive-run", *out], "never elicited"),
        Case("missing input", CAP, ["{c}/none"], "no trajectory log"),
        Case("unreadable log", CAP, ["{w}/binary.csv", *out], "NUL bytes"),
        Case("bad flag", CAP, ["{w}/naive-run", "--persist", "0", *out], "persist 0"),
        Case("bad flag", CAP, ["{w}/naive-run", "--class", "99", *out], "no naive accuracy"),
        Case("output path", CAP, ["{w}/naive-run", "--out", "{w}/file"], "is a file"),
        # figures
        Case(
            "output path",
            "figures.training",
            ["{w}/naive-run", "--out", "{c}/figs"],
            expect="ok",
            check=exists("figs/concept_space.png"),
            label="naive-run --out DIR (a folder: writes DIR/concept_space.png)",
        ),
        Case(
            "output path",
            "figures.training",
            ["{w}/naive-run", "--out", "{c}/fig.txt"],
            "must end in .png or .pdf or .svg",
        ),
        Case(
            "output path",
            "figures.training",
            ["{w}/naive-run", "--out", "{w}/file/fig.png"],
            "which is a file",
        ),
        Case("missing input", "figures.training", ["{c}/none"], "no trajectory log"),
        Case(
            "unreadable log", "figures.training", ["{w}/utf16.csv", "--out", "{c}/f.png"], "UTF-16"
        ),
        Case(
            "bad run folder",
            "figures.training",
            ["{c}/m"],
            "not the turn.json that python -m fitting.turn writes",
            setup=then(copy_log("m"), write("m/turn.json", '{"turns": [{"class": "11"}]}')),
            label="RUN whose turn.json lacks the turn",
        ),
        Case("missing input", "fitting.turn", ["{c}/none"], "no trajectory log"),
        Case("unreadable log", "fitting.turn", ["{w}/latin1.csv"], "not UTF-8"),
        Case(
            "output path",
            "fitting.turn",
            ["{c}/m"],
            "is a folder",
            setup=then(copy_log("m"), write("m/turn.json/x", "")),
            label="RUN whose turn.json is a folder",
        ),
        Case("missing input", "fitting.masking", ["{w}/naive-run", *out], "mask_p"),
        Case("bad flag", "fitting.masking", ["{w}/naive-run", "--persist", "0", *out], "persist 0"),
        Case("missing input", "fitting.masking", ["{c}/none", *out], "no trajectory log"),
        Case("output path", "fitting.masking", ["{w}/naive-run", "--out", "{w}/file"], "is a file"),
        Case("missing input", "figures.masking", ["{c}/masking.json"], "no such file"),
        Case(
            "bad flag",
            "figures.masking",
            ["{c}/masking.json", "--detail", "2"],
            "--detail 2",
            setup=write("masking.json", '{"runs": []}'),
        ),
        Case(
            "malformed analysis",
            "figures.masking",
            ["{c}/masking.json"],
            "not a JSON object, so not the masking.json",
            setup=write("masking.json", "[]"),
        ),
        Case(
            "malformed analysis",
            "figures.masking",
            ["{c}/masking.json"],
            "lacks",
            setup=write("masking.json", '{"runs": [{"p": 0.5}]}'),
            label="masking.json whose record lacks the paths",
        ),
        Case(
            "malformed sidecar",
            "fitting.masking",
            ["{c}/m", *out],
            "config.seed 'x' is not an integer",
            setup=then(
                copy_log("m"),
                write("m/trajectories.meta.json", '{"config": {"mask_p": 0.5, "seed": "x"}}'),
            ),
            label="RUN whose meta's seed is text",
        ),
        Case(
            "malformed sidecar",
            "fitting.masking",
            ["{c}/m", *out],
            "JSON object",
            setup=then(copy_log("m"), write("m/trajectories.meta.json", "[1, 2]")),
            label="RUN whose trajectories.meta.json is a list",
        ),
        # empirical.data / probe
        Case("bad number", DA, ["--seed", "-1", *out], "--seed -1", check=no_file("out")),
        Case(
            "bad number", DA, ["--sep", "color=nan,size=0.4", *out], "finite", check=no_file("out")
        ),
        Case(
            "bad number",
            DA,
            ["--sep", "color=2,size=0.4", *out],
            "valid range",
            check=no_file("out"),
        ),
        Case("bad name", DA, ["--sep", "nope=1", *out], "nope", check=no_file("out")),
        Case(
            "bad name",
            DA,
            ["--concepts", "foo", *out],
            "unknown concept 'foo'",
            check=no_file("out"),
        ),
        Case("bad number", DA, ["--n", "0", *out], "--n 0", check=no_file("out")),
        Case("bad number", DA, ["--res", "3", *out], "resolution", check=no_file("out")),
        Case("output path", DA, ["--out", "{w}/file"], "is a file"),
        Case("bad name", PR, ["--setup", "nope", *out], "nope", check=no_file("out")),
        Case("bad number", PR, ["--seed", "-1", *out], "--seed -1", check=no_file("out")),
        Case("bad number", PR, ["--res", "3", *out], "resolution", check=no_file("out")),
        Case("output path", PR, ["--out", "{w}/file/probe"], "which is a file"),
        # empirical.train
        Case("bad config", TR, ["--preset", "nope", *out], "unknown preset"),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "lr=1e6", *out],
            "lr=1000000.0 is not valid",
            check=no_file("out"),
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "gamma_max=inf", *out],
            "finite",
            check=no_file("out"),
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "lr=nan", *out],
            "finite",
            check=no_file("out"),
        ),
        Case(
            "bad config", TR, ["--preset", "smoke", "--set", "nope=1", *out], "unknown key 'nope'"
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "steps=abc", *out],
            "steps takes an integer",
        ),
        Case("bad config", TR, ["--preset", "smoke", "--set", "channels=", *out], "channels"),
        Case("bad config", TR, ["--preset", "smoke", "--set", "seed=-1", *out], "seed=-1"),
        Case("bad config", TR, ["--preset", "smoke", "--set", "mask_p=2", *out], "mask_p=2"),
        Case("bad config", TR, ["--preset", "smoke", "--set", "device=tpu", *out], "device=tpu"),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "eval_dense=10,20", *out],
            "give start,end,count",
            check=no_file("out"),
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "grid_overprompt=0.5,3", *out],
            "renderable limit",
            check=no_file("out"),
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "grid_intervention=1,0,2", *out],
            "even number",
            check=no_file("out"),
        ),
        Case(
            "bounded work",
            TR,
            ["--preset", "paper", "--set", "per_class=10000000", *out],
            "GiB",
            check=no_file("out"),
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "probe={c}/none/probe.pt", *out],
            "is not a file",
            check=no_file("out"),
        ),
        Case(
            "bad config",
            TR,
            ["--preset", "smoke", "--set", "probe={w}/file/probe", *out],
            "which is a file",
            check=no_file("out"),
        ),
        Case(
            "bad run folder",
            TR,
            ["--preset", "smoke", "--out", "{c}/run"],
            "no 'train' section",
            setup=write("run/config.json", "{}"),
            check=unchanged("run/config.json", "{}"),
        ),
        Case(
            "bad run folder",
            TR,
            ["--preset", "smoke", "--out", "{c}/run"],
            "not valid JSON",
            setup=write("run/config.json", "{oops"),
            check=unchanged("run/config.json", "{oops"),
        ),
        Case(
            "bad run folder",
            TR,
            ["--preset", "smoke", "--set", "steps=50", "--out", "{c}/run"],
            "another config",
            setup=copy_run,
        ),
        Case(
            "bad run folder",
            TR,
            ["--preset", "smoke", "--set", "channels=8,16", "--out", "{c}/run"],
            "another config",
            setup=then(copy_run, lambda c, w: (c / "run" / "config.json").unlink()),
            check=no_file("run/config.json"),
            label="--set channels=8,16 --out RUN (RUN holds only a last.pt of channels 16,32)",
        ),
        Case(
            "bad run folder",
            TR,
            ["--preset", "smoke", "--out", "{c}/run"],
            "cannot read this checkpoint",
            setup=then(copy_run, write("run/checkpoints/last.pt", b"\x80\x04garbage")),
            label="--out RUN (last.pt is garbage)",
        ),
        Case("output path", TR, ["--preset", "smoke", "--out", "{w}/file"], "is a file"),
        # empirical.elicit
        Case(
            "bad run folder",
            EL,
            ["{c}/theory"],
            "no 'train' section",
            setup=write("theory/config.json", json.dumps({"preset": "fig5", "model": "eq1"})),
            label="a theory.simulate output folder",
        ),
        Case("missing input", EL, ["{c}/none"], "not a folder"),
        Case("missing input", EL, ["{w}/file"], "not a folder"),
        Case(
            "bad run folder",
            EL,
            ["{c}/run"],
            "no 'train' section",
            setup=then(copy_run, write("run/config.json", "{}")),
        ),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--classes", ""],
            "--classes",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--classes", "22"],
            "unknown class",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--protocols", ""],
            "--protocols",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--protocols", "nope"],
            "unknown protocol",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case("bad flag", EL, ["{c}/run", "--device", "cuda"], "no CUDA device", setup=copy_run),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--every", "0"],
            "--every 0",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case(
            "bad run folder",
            EL,
            ["{c}/run", "--protocols", "overprompt"],
            "cannot read this probe",
            setup=then(copy_run, own_probe, write("run/probe/probe.pt", b"not a torch file")),
            label="RUN (probe.pt corrupt)",
        ),
        Case(
            inj,
            EL,
            ["{c}/run", "--protocols", "overprompt"],
            "cannot read this probe",
            setup=then(copy_run, own_probe, malicious_probe),
            check=ran,
            label="RUN (probe.pt pickles os.system)",
        ),
        Case(
            "bad run folder",
            EL,
            ["{c}/run", "--protocols", "overprompt"],
            "not an elicitation file",
            setup=then(copy_run, write("run/elicit/overprompt.json", "[]")),
            label="RUN (elicit/overprompt.json is a list)",
        ),
        Case(
            "bad run folder",
            EL,
            ["{c}/run", "--protocols", "overprompt"],
            "z is not a list of numbers",
            setup=then(
                copy_run,
                write(
                    "run/elicit/overprompt.json",
                    json.dumps({"steps": {"4": {"11": [[9], "x", 1]}}}),
                ),
            ),
            label="RUN (an elicitation entry of the wrong shape)",
        ),
        Case(
            "lost data",
            EL,
            ["{c}/run", "--protocols", "overprompt"],
            expect="ok",
            setup=then(copy_run, lambda c, w: (c / "run" / "trajectories.csv").unlink()),
            check=same_naive_rows,
            label="RUN after trajectories.csv was deleted (naive rows come back from last.pt)",
            slow=True,
        ),
        # fitting.predict
        Case(
            "missing input",
            PD,
            ["{w}/sweep.csv", "--covariates", "{w}/none.csv", "--holdout", "r0", *out],
            "no such file",
            check=no_file("out"),
        ),
        Case(
            "unreadable log",
            PD,
            ["{w}/sweep.csv", "--covariates", "{w}/binary.csv", "--holdout", "r0", *out],
            "NUL bytes",
        ),
        Case(
            "unreadable log",
            PD,
            ["{w}/sweep.csv", "--covariates", "{w}/file", "--holdout", "r0", *out],
            "no 'run' column",
        ),
        Case(
            "bad value",
            PD,
            ["{w}/sweep.csv", "--covariates", "{w}/cov_text.csv", "--holdout", "r0", *out],
            "row 4, column signal_color: 'lots' is not a number",
            check=no_file("out/prediction.json"),
        ),
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--covariate",
                "sep",
                *out,
            ],
            "no column sep_color",
        ),
        Case(
            "bad flag",
            PD,
            ["{w}/sweep.csv", "--covariates", "{w}/covariates.csv", "--holdout", "nope", *out],
            "not a run of",
        ),
        Case(
            "bad flag",
            PD,
            ["{w}/sweep.csv", "--covariates", "{w}/covariates.csv", "--train", "r0,r1", *out],
            "at least 3 training runs",
        ),
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--train",
                "r1",
                *out,
            ],
            "not allowed with argument",
        ),
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--model",
                "eq2",
                *out,
            ],
            "eq2 needs the masked concept",
        ),
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--model",
                "notebook",
                *out,
            ],
            "invalid choice",
        ),
        Case(
            "bad value",
            PD,
            ["{w}/log.csv", "--covariates", "{w}/covariates.csv", "--holdout", "r0", *out],
            "no row for run 'r'",
        ),
        # empirical.sweep: everything is checked before a job is submitted
        Case(inj, SW, [*sweep, "--then", f"turn; {canary}"], "unknown step 'turn;'", check=ran),
        Case(
            "bad flag",
            SW,
            [*sweep, "--grid", "nonsense=1,2"],
            "unknown key 'nonsense'",
            check=no_file("sw"),
        ),
        Case("bad flag", SW, [*sweep, "--grid", "seed=0,0"], "repeated", check=no_file("sw")),
        Case(
            "bad flag",
            SW,
            [*sweep, "--grid", "lr=0.001,2"],
            "run lr=2: lr=2.0 is not valid",
            check=no_file("sw/runs"),
        ),
        Case(
            "bad flag",
            SW,
            [*sweep, "--set", "probe={out}/p"],
            "one probe across its runs",
            check=no_file("sw/runs"),
        ),
        Case("bad flag", SW, [*sweep, "--no-wait"], "only with --executor slurm"),
        Case(
            "bad run folder",
            SW,
            [*sweep, "--grid", "seed=0"],
            "holds a run with another config",
            setup=write("sw/runs/seed=0/config.json", json.dumps({"train": {"steps": 7}})),
            check=no_file("sw/logs"),
            label="--out DIR (DIR/runs/seed=0 holds another run)",
        ),
        Case(
            "missing input",
            SW,
            ["collect", "{c}/none"],
            "not a sweep folder",
            check=no_file("none"),
        ),
        Case(
            "bad config",
            "empirical.train",
            ["--preset", "smoke", "--set", "precision=fp16", "--out", "{c}/r"],
            "precision=fp16 is not valid",
            check=no_file("r"),
        ),
        # fitting.study and figures.study: a collected sweep folder
        Case(
            "missing input",
            ST,
            ["{c}/none"],
            "sweep.csv: not found; run python -m empirical.sweep collect",
            check=no_file("none/study.json"),
        ),
        Case(
            "unreadable log",
            ST,
            ["{c}"],
            "no 'seed' column",
            setup=then(
                copy_file("sweep.csv"),
                write("covariates.csv", ("run,signal_color,signal_size\nr0,0.01,0.05\n")),
            ),
            label="DIR (covariates.csv without seeds)",
        ),
        Case(
            "bad value",
            ST,
            ["{c}"],
            "row 3, column seed: 'x' is not a number",
            setup=then(
                copy_file("sweep.csv"),
                write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,x,0.4\n"),
            ),
            label="DIR (a seed that is not a number)",
        ),
        Case(
            "bad flag",
            ST,
            ["{c}"],
            "--by: give the covariate to group by; the runs vary in nothing",
            setup=then(
                copy_file("sweep.csv"),
                write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,0,0.3\n"),
            ),
            label="DIR (nothing varies between the runs)",
        ),
        Case(
            "bad flag",
            ST,
            ["{c}", "--by", "lr"],
            "--by lr: not a column of",
            setup=then(
                copy_file("sweep.csv"),
                write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,0,0.4\n"),
            ),
        ),
        Case(
            "unreadable log",
            ST,
            ["{c}"],
            "no naive trajectory of a training class (the log holds class 11 only)",
            setup=then(
                copy_file("sweep.csv"),
                write(
                    "covariates.csv",
                    "".join(f"r{i},0,{0.3 + i / 10:g}\n" for i in range(5)).join(
                        ["run,seed,sep_color\n", ""]
                    ),
                ),
            ),
            label="DIR (a log of the held-out class only)",
            check=no_file("study.json"),
        ),
        Case("missing input", FS, ["{c}"], "study.json: not found; run python -m fitting.study"),
        Case("unreadable log", FS, ["{c}", "--study", "{w}/log.csv"], "log.csv: not valid JSON"),
        Case(
            "bad run folder",
            FS,
            ["{c}"],
            "not the study.json that python -m fitting.study writes",
            setup=write("study.json", json.dumps({"runs": []})),
            check=no_file("learning.png"),
        ),
    ]
    return cases + _pipeline_cases() + _convert_cases()


def _pipeline_cases() -> list[Case]:
    """The pipeline (sweep, status, collect, study, predict) and the chained steps, from the issue on the pipeline
    under bad input: every --then step checked before anything is written, every sweep flag, and the readers."""
    SW, ST, PD, TU, F, EL = (
        "empirical.sweep",
        "fitting.study",
        "fitting.predict",
        "fitting.turn",
        "fitting.fit",
        "empirical.elicit",
    )
    sweep = ["--preset", "smoke", "--executor", "debug", "--out", "{c}/sw"]
    nothing = no_file("sw")
    steps = [  # (step, the words of its refusal): checked by the step's own command (--check-args) before any run
        ("elicit --bogus 3", "unrecognized arguments: --bogus 3"),
        ("elicit --every 0", "--every 0: must be >= 1"),
        ("elicit --every x", "invalid int value: 'x'"),
        ("elicit --protocols foo", "unknown protocol 'foo'"),
        ("elicit --protocols ,", "give at least one of"),
        ("elicit --classes ,", "--classes ','"),
        ("elicit --device tpu", "invalid choice: 'tpu'"),
        ("fit --class", "--class: expected one argument"),
        ("fit --boot 3", "--boot 3: need at least 10"),
        ("fit --persist 0", "--persist 0: must be >= 1"),
        ("fit --model nope", "invalid choice: 'nope'"),
        ("fit --compare eq1", "give another model than --model eq1"),
        ("fit --ci nope", "invalid choice: 'nope'"),
        ("turn --min-dev -1", "--min-dev -1.0"),
        ("turn --min-dev nan", "--min-dev nan"),
        ("turn --min-angle 400", "--min-angle 400.0: give degrees in [0, 180]"),
        ("turn --class ,", "give one or more class labels"),
        ("capability --persist 0", "--persist 0: must be >= 1"),
        ("capability --class ' '", "give a class label"),
        ("figure --out x.jpg", "must end in .png or .pdf or .svg"),
        ("figure --out {w}/file/x.png", "which is a file, not a folder"),
        ("fit --out {w}/file", "is a file, not a folder"),
        ("capability --out {w}/file", "is a file, not a folder"),
        ("elicit '--every", "No closing quotation"),
        ("", "unknown step ''"),
        ("train --steps 5", "unknown step 'train'"),
        (
            "fit",
            "a model fit needs at least 8 checkpoints with readable samples and run 'run' logs 4",
        ),
    ]
    cases = [
        Case(
            "bad flag", SW, [*sweep, "--then", step], words, check=nothing, label=f"--then '{step}'"
        )
        for step, words in steps
    ]
    flags = [  # (arguments, words): the sweep's own flags and grid, refused before sweep.json is written
        (["--max-parallel", "0"], "--max-parallel 0: must be >= 1"),
        (["--cpus-per-job", "0"], "--cpus-per-job 0: must be >= 1"),
        (["--timeout-min", "0"], "--timeout-min 0: must be >= 1"),
        (["--gpus-per-job", "-1"], "--gpus-per-job -1: must be >= 0"),
        (["--slurm-partition", "gpu"], "only with --executor slurm"),
        (["--preset", "nope"], "--preset 'nope': valid: smoke"),
        (["--executor", "pbs"], "invalid choice: 'pbs'"),
        (["--grid", "seed="], "expected KEY=V1,V2"),
        (["--grid", "=1"], "--grid '=1'"),
        (["--grid", "seed"], "--grid 'seed'"),
        (["--grid", "sep.color=0.3,abc"], "sep.color"),
        (["--grid", "steps=0,10"], "steps=0"),
        (["--grid", "lr=nan"], "lr"),
        (["--set", "nonsense=1"], "nonsense"),
        (["--set", "sep.color=2"], "sep"),
        (["--grid", "seed=0,1", "--set", "seed=3"], "seed is also given by --set; give it once"),
        (["--grid", "seed=0,1", "--grid", "seed=2"], "seed is already a grid key"),
        (["--grid", "probe=a,b"], "a sweep shares its probe"),
        (["--grid", "channels=8,16;x"], "channels"),
        (["--grid", "seed=-1"], "seed=-1 is not valid"),
        (["--grid", "resolution=3"], "resolution"),
        (["--grid", "protocols=cfg", "--set", "p_cfg=0"], "cfg needs p_cfg > 0"),
        (["--grid", "seed=0.5"], "seed"),
        (["--grid", "steps=1e99"], "steps"),
    ]
    cases += [
        Case("bad flag", SW, [*sweep, *extra], words, check=nothing) for extra, words in flags
    ]
    cases += [
        Case(
            "output path",
            SW,
            ["--preset", "smoke", "--executor", "debug", "--out", "{w}/file"],
            "is a file, not a folder",
        ),
        Case(
            "output path",
            SW,
            ["--preset", "smoke", "--executor", "debug", "--out", "{w}/file/sw"],
            "which is a file, not a folder",
        ),
        # status and collect: a sweep folder, or not
        Case("missing input", SW, ["status", "{c}/none"], "none", check=no_file("none")),
        Case("missing input", SW, ["status", "{w}/file"], "file"),
        Case(
            "bad run folder",
            SW,
            ["status", "{c}/sw"],
            "sweep.json",
            setup=sweep_folder("sw/sweep.json", "{oops"),
            check=unchanged("sw/sweep.json", "{oops"),
            label="status DIR (sweep.json is not JSON)",
        ),
        Case(
            "bad run folder",
            SW,
            ["status", "{c}/sw"],
            "sweep.json",
            setup=sweep_folder("sw/sweep.json", "[1, 2]"),
            check=unchanged("sw/sweep.json", "[1, 2]"),
            label="status DIR (sweep.json is a list)",
        ),
        Case(
            "bad run folder",
            SW,
            ["status", "{c}/sw"],
            "sweep.json",
            setup=sweep_folder("sw/sweep.json", json.dumps({"runs": "x"})),
            label="status DIR (sweep.json's runs is not a list)",
        ),
        Case("missing input", SW, ["collect", "{w}/file"], "not a sweep folder"),
        Case(
            "missing input",
            SW,
            ["collect", "{c}/none", "--partial"],
            "not a sweep folder",
            check=no_file("none"),
        ),
        Case(
            "bad run folder",
            SW,
            ["status", "{c}/sw"],
            "no runs",
            setup=lambda c, w: (c / "sw" / "runs").mkdir(parents=True),
            label="status DIR (an empty runs/ and no sweep.json)",
        ),
        Case(
            "bad run folder",
            SW,
            ["collect", "{c}/sw"],
            "no run folders",
            setup=sweep_folder("sw/sweep.json", "{oops"),
            check=no_file("sw/sweep.csv"),
            label="collect DIR (sweep.json is not JSON, no run trained: not read)",
        ),
        Case(
            "bad run folder",
            SW,
            ["collect", "{c}/sw"],
            "no run folders",
            setup=sweep_folder(
                "sw/sweep.json", json.dumps({"preset": "smoke", "runs": ["seed=0"]})
            ),
            check=no_file("sw/sweep.csv"),
            label="collect DIR (no run has trained)",
        ),
        # fitting.turn
        Case(
            "bad flag",
            TU,
            ["{w}/naive-run", "--min-dev", "-1"],
            "--min-dev -1.0",
            check=no_file("turn.json"),
        ),
        Case("bad flag", TU, ["{w}/naive-run", "--min-dev", "inf"], "--min-dev inf"),
        Case("bad flag", TU, ["{w}/naive-run", "--min-angle", "181"], "--min-angle 181.0"),
        Case("bad flag", TU, ["{w}/naive-run", "--min-angle", "-5"], "--min-angle -5.0"),
        Case("bad flag", TU, ["{w}/naive-run", "--class", ","], "give one or more class labels"),
        Case("bad flag", TU, ["{w}/naive-run", "--min-dev", "x"], "invalid float value: 'x'"),
        Case("unreadable log", TU, ["{w}/binary.csv"], "binary.csv"),
        Case("unreadable log", TU, ["{w}/empty.csv"], "empty.csv"),
        Case("unreadable log", TU, ["{w}/nostep.csv"], "step"),
        Case("unreadable log", TU, ["{w}/file"], "column 'step': required column is missing"),
        Case("bad flag", TU, ["{w}/naive-run", "--class", "99"], "99", check=no_file("turn.json")),
        Case(
            "output path",
            TU,
            ["{c}/run"],
            "turn.json",
            setup=then(copy_log("run"), write("run/turn.json/x", "")),
            label="RUN (RUN/turn.json is a folder)",
        ),
        # fitting.fit
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--class", "", *["--out", "{c}/out"]],
            "no trajectory matches",
        ),
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--boot", "x", *["--out", "{c}/out"]],
            "invalid int value: 'x'",
        ),
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--boot", "5", *["--out", "{c}/out"]],
            "--boot 5: need at least 10",
            check=no_file("out"),
        ),
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--persist", "0", *["--out", "{c}/out"]],
            "--persist 0: must be >= 1",
            check=no_file("out"),
        ),
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--compare", "eq1", *["--out", "{c}/out"]],
            "give another model",
            check=no_file("out"),
        ),
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--class", "99", *["--out", "{c}/out"]],
            "no trajectory matches --class 99",
        ),
        Case(
            "bad flag",
            F,
            ["{w}/log.csv", "--protocol", "nope", *["--out", "{c}/out"]],
            "no trajectory matches",
        ),
        Case("output path", F, ["{w}/log.csv", "--out", "{w}/file"], "is a file, not a folder"),
        # fitting.predict
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "",
                "--out",
                "{c}/out",
            ],
            "--holdout",
        ),
        Case(
            "output path",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--out",
                "{w}/file",
            ],
            "file",
        ),
        Case(
            "bad value",
            PD,
            ["{w}/sweep.csv", "--covariates", "{c}/cov.csv", "--holdout", "r0", "--out", "{c}/out"],
            "1e+300",
            setup=write(
                "cov.csv",
                "run,signal_color,signal_size\n"
                + "".join(f"r{i},{'1e300' if i == 2 else 0.01 * (i + 1)},0.05\n" for i in range(5)),
            ),
            check=no_file("out/prediction.json"),
            label="--covariates (a signal of 1e300)",
        ),
        Case(
            "bad value",
            PD,
            ["{w}/sweep.csv", "--covariates", "{c}/cov.csv", "--holdout", "r0", "--out", "{c}/out"],
            "the same value in every run",
            setup=write(
                "cov.csv",
                "run,signal_color,signal_size\n" + "".join(f"r{i},0.02,0.05\n" for i in range(5)),
            ),
            check=no_file("out/prediction.json"),
            label="--covariates (no covariate varies)",
        ),
        Case(
            "bad value",
            PD,
            ["{w}/sweep.csv", "--covariates", "{c}/cov.csv", "--holdout", "r0", "--out", "{c}/out"],
            "must be a positive number",
            setup=write(
                "cov.csv",
                "run,signal_color,signal_size\n"
                + "".join(f"r{i},{-0.01 * (i + 1)},0.05\n" for i in range(5)),
            ),
            label="--covariates (negative signals)",
        ),
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--seed",
                "-1",
                "--out",
                "{c}/out",
            ],
            "--seed -1: a seed must be an integer in [0, 2**32)",
            check=no_file("out"),
        ),
        Case(
            "bad flag",
            PD,
            [
                "{w}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--seed",
                "x",
                "--out",
                "{c}/out",
            ],
            "invalid int value: 'x'",
        ),
        Case(
            "output path",
            PD,
            [
                "{c}/sweep.csv",
                "--covariates",
                "{w}/covariates.csv",
                "--holdout",
                "r0",
                "--out",
                "{c}/sweep.csv",
            ],
            "sweep.csv",
            setup=copy_file("sweep.csv"),
            check=same_file("sweep.csv"),
        ),
        # fitting.study
        Case(
            "bad flag",
            ST,
            ["{c}", "--by", ""],
            "--by : not a column of",
            setup=then(
                copy_file("sweep.csv"),
                write("covariates.csv", "run,seed,sep_color\nr0,0,0.3\nr1,0,0.4\n"),
            ),
        ),
        Case(
            "output path",
            ST,
            ["{c}", "--out", "{c}/sweep.csv"],
            "would overwrite the input",
            setup=then_files("sweep.csv", "covariates.csv"),
            check=same_file("sweep.csv"),
        ),
        Case(
            "output path",
            ST,
            ["{c}", "--out", "{c}"],
            "is a folder",
            setup=then_files("sweep.csv", "covariates.csv"),
        ),
        Case(
            "silent drop",
            ST,
            ["{c}"],
            "have no row in",
            setup=then(
                copy_file("sweep.csv"),
                write(
                    "covariates.csv",
                    "run,seed,sep_color\n"
                    + "".join(f"r{i},0,{0.3 + i / 10:g}\n" for i in range(4)),
                ),
            ),
            check=no_file("study.json"),
            label="DIR (run r4 has trajectories but no covariates row)",
        ),
        # empirical.elicit: flags checked before the run is read
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--every", "-2"],
            "--every -2",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case("bad flag", EL, ["{c}/run", "--every", "x"], "invalid int value: 'x'", setup=copy_run),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--protocols", "overprompt,foo"],
            "unknown protocol 'foo'",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case(
            "bad flag",
            EL,
            ["{c}/run", "--classes", ","],
            "--classes ','",
            setup=copy_run,
            check=no_file("run/elicit"),
        ),
        Case(
            "bad flag", EL, ["{c}/run", "--device", "tpu"], "invalid choice: 'tpu'", setup=copy_run
        ),
    ]
    return cases


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


def _points():
    import numpy as np

    return np.random.default_rng(0).random((4, 5, 2))  # (classes, steps, concepts)


def _convert_cases() -> list[Case]:
    """python -m empirical.convert: arrays saved elsewhere, read into a log."""
    CV = "empirical.convert"
    axes = [
        "--layout",
        "class,step,concept",
        "--concepts",
        "color,size",
        "--classes",
        "00,01,10,11",
    ]
    out = ["--out", "{c}/t.csv"]
    steps = ["--steps", "0,1,2,3,4"]
    return [
        Case("missing input", CV, ["{c}/none.npy", *axes, *steps, *out], "no such file"),
        Case(
            "bad name",
            CV,
            ["{c}/z.txt", *axes, *steps, *out],
            "valid: .npy, .npz, .pth",
            setup=write("z.txt", "1"),
        ),
        Case(
            "injection",
            CV,
            ["{c}/z.npy", *axes, *steps, *out],
            "holds Python objects",
            setup=array_file("z.npy", lambda: __import__("numpy").array([{"a": 1}], dtype=object)),
            check=no_file("t.csv"),
        ),
        Case(
            "injection",
            CV,
            ["{c}/points.pth", "--key", "data", *axes, *steps, *out],
            "without unpickling arbitrary objects",
            setup=malicious_points,
            check=lambda c, w: (
                "the payload ran" if (c / "ran").exists() else no_file("t.csv")(c, w)
            ),
        ),
        Case(
            "bad flag",
            CV,
            ["{c}/z.npz", *axes, *steps, *out],
            "name one with --key",
            setup=array_file("z.npz", lambda: {"a": _points(), "b": _points()}),
        ),
        Case(
            "bad flag",
            CV,
            ["{c}/z.npz", "--key", "data", *axes, *steps, *out],
            "has no entry 'data'",
            setup=array_file("z.npz", lambda: {"a": _points()}),
        ),
        Case(
            "bad value",
            CV,
            ["{c}/z.npy", *axes, "--steps", "0,1,2,3", *out],
            "steps: 4 given",
            setup=array_file("z.npy", _points),
        ),
        Case(
            "bad value",
            CV,
            ["{c}/z.npy", *axes, "--steps", "0,1,1,3,4", *out],
            "increasing",
            setup=array_file("z.npy", _points),
        ),
        Case(
            "bad number",
            CV,
            ["{c}/z.npy", *axes, *steps, *out],
            "lies outside [0, 1]",
            setup=array_file("z.npy", lambda: _points() * 3),
            check=no_file("t.csv"),
        ),
        Case(
            "bad flag",
            CV,
            [
                "{c}/z.npy",
                "--layout",
                "class,step",
                "--concepts",
                "color,size",
                "--classes",
                "00,01,10,11",
                *steps,
                *out,
            ],
            "name the axes of the array in order",
            setup=array_file("z.npy", _points),
        ),
        Case(
            "output path",
            CV,
            ["{c}/z.npy", *axes, *steps, "--out", "{c}/t.json"],
            "must end in .csv",
            setup=array_file("z.npy", _points),
        ),
        Case(
            "smoke",
            CV,
            ["{c}/z.npy", *axes, *steps, *out],
            expect="ok",
            setup=array_file("z.npy", _points),
            check=exists("t.csv"),
        ),
    ]


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


CASES = _cases()


# -- running -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    code: int | None
    outcome: str
    message: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def score(case: Case, code: int | None, err: str, c: Path, w: Path) -> tuple[str, str]:
    lines = [line for line in err.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if code is None:
        return "hang", last
    if "Traceback (most recent call last)" in err:
        return "traceback", last
    problem = case.check(c, w) if case.check is not None else None
    if code == 0:
        return (
            "accepted" if case.expect == "ok" and problem is None else "silently accepted"
        ), problem or ""
    if problem is not None:
        return "silently accepted", problem
    clean = last.startswith(
        f"python -m {case.command}: error: "
    )  # ours and argparse's share the prefix
    if code == 2 and clean and case.words.lower() in last.lower():
        return ("clean error" if case.expect == "error" else "unclear error"), last
    return "unclear error", last


def run_case(case: Case, c: Path, w: Path, timeout: float) -> Outcome:
    c.mkdir(parents=True, exist_ok=True)
    if case.setup is not None:
        case.setup(c, w)
    args = [a.replace("{c}", str(c)).replace("{w}", str(w)) for a in case.args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", case.command, *args],
            cwd=c,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        code, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, err = (
            None,
            (exc.stderr or b"").decode(errors="replace")
            if isinstance(exc.stderr, bytes)
            else (exc.stderr or ""),
        )
    seconds = time.perf_counter() - start
    outcome, message = score(case, code, err, c, w)
    return Outcome(case, code, outcome, message, seconds)


GOOD = ("clean error", "accepted")


OUTCOMES = ("clean error", "accepted", "unclear error", "traceback", "silently accepted", "hang")


def summary(rows: list[tuple[str, str, str]]) -> str:
    """Counts per command and kind of bad input, from (command, kind, outcome) rows, as a markdown table."""
    kinds = sorted({k for _, k, _ in rows})
    lines = [
        "| command | cases | " + " | ".join(kinds) + " | not clean |",
        "|---" * (len(kinds) + 3) + "|",
    ]
    for command in sorted({c for c, _, _ in rows}):
        mine = [(k, o) for c, k, o in rows if c == command]
        cells = [str(sum(k == kind for k, _ in mine) or "") for kind in kinds]
        bad = sum(o not in GOOD for _, o in mine)
        lines.append(f"| {command} | {len(mine)} | " + " | ".join(cells) + f" | {bad} |")
    return "\n".join(lines) + "\n"


def table(results: list[Outcome]) -> str:
    counts = {k: sum(r.outcome == k for r in results) for k in OUTCOMES}
    head = (
        f"{len(results)} cases: "
        + ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        + "\n\n"
        + summary([(r.case.command, r.case.kind, r.outcome) for r in results])
        + "\n"
        "| # | command | kind | input | outcome | exit | s | what the user sees |\n|---|---|---|---|---|---|---|---|\n"
    )

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    rows = []
    for i, r in enumerate(results, 1):
        msg = r.message.split(": error: ", 1)[-1]
        msg = msg if len(msg) <= 150 else msg[:147] + "..."
        rows.append(
            f"| {i} | {r.case.command} | {r.case.kind} | `{cell(r.case.shown())}` | {r.outcome} | "
            f"{'-' if r.code is None else r.code} | {r.seconds:.1f} | {cell(msg)} |"
        )
    return head + "\n".join(rows) + "\n"


def write_docs(text: str) -> None:
    doc = DOCS.read_text()
    begin, end = doc.index(MARK_BEGIN) + len(MARK_BEGIN), doc.index(MARK_END)
    DOCS.write_text(doc[:begin] + "\n" + text + doc[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--no-torch",
        action="store_true",
        help="skip the empirical commands (no torch, no smoke run)",
    )
    parser.add_argument(
        "--only", metavar="WORD", help="only the commands whose module name contains WORD"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="seconds before a case counts as a hang (default 120)",
    )
    parser.add_argument(
        "--write-docs", action="store_true", help=f"rewrite the table in {DOCS.relative_to(ROOT)}"
    )
    parser.add_argument("--json", type=Path, help="also write the outcomes as JSON here")
    args = parser.parse_args(argv)
    cases = [
        c
        for c in CASES
        if not (args.no_torch and c.needs_torch) and (args.only is None or args.only in c.command)
    ]
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as tmp:
        w = Path(tmp) / "w"
        w.mkdir()
        print(
            f"preparing the workspace{' (training a smoke run)' if any(c.needs_torch for c in cases) else ''}...",
            file=sys.stderr,
        )
        prepare(w, torch=any(c.needs_torch for c in cases))
        results = []
        for i, case in enumerate(cases, 1):
            r = run_case(case, Path(tmp) / f"case{i:03d}", w, args.timeout)
            r.message = r.message.replace(f"{w}/", "").replace(
                f"{tmp}/", ""
            )  # the workspace is temporary: W/x -> x
            results.append(r)
            flag = "" if r.outcome in GOOD else "   <--"
            print(
                f"{i:3d}/{len(cases)} {r.outcome:17s} {r.seconds:5.1f}s {case.command} {case.shown()}{flag}",
                file=sys.stderr,
            )
    text = table(results)
    print(text)
    if args.write_docs:
        write_docs(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "command": r.case.command,
                        "kind": r.case.kind,
                        "input": r.case.shown(),
                        "outcome": r.outcome,
                        "exit": r.code,
                        "seconds": round(r.seconds, 2),
                        "message": r.message,
                    }
                    for r in results
                ],
                indent=1,
            )
            + "\n"
        )
    return 0 if all(r.outcome in GOOD for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
