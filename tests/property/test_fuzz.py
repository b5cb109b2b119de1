"""Fuzzing the readers and the commands: a valid result or the project's error (exit 2), never a traceback.

Inputs are random bytes and random mutations of valid files (logs, sidecars, elicitation files, run
configs, checkpoints). Each property runs twice: a short run in the default suite and a long one
(``-m slow``) that explores far more inputs.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import io
import json
import shutil
import string
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fitting import capability
from fitting import fit as fit_cli
from theory.solvers.integrate import integrate, time_grid
from theory.models.paper import eq1
from core.sidecar import read_meta
from core.trajectory import Trajectory, read_csv, write_csv

SHORT = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))


def twice(body, *strategies, short=SHORT, long=LONG, marks=()):
    """(default test, slow test): ``body`` as a property of ``strategies``, with few and with many examples."""

    def make(chosen):
        def test(args):
            body(*args)

        test.__doc__ = body.__doc__
        out = chosen(given(st.tuples(*strategies))(test))
        for mark in marks:
            out = mark(out)
        return out

    return make(short), pytest.mark.slow(make(long))


BASE = Path(tempfile.mkdtemp(prefix="concept-dynamics-fuzz-"))
atexit.register(shutil.rmtree, BASE, ignore_errors=True)
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


# -- inputs ------------------------------------------------------------------------------------


def valid_log_text(accuracy: bool = True) -> str:
    sol = integrate(eq1(), time_grid(25, 12), {"t_switch": [[8.0, 0.0]]}, method="stacked")
    t = sol.trajectories("11")[0]
    acc = np.clip(t.z.prod(axis=1), 0, 1) if accuracy else None
    naive = Trajectory(np.arange(12) * 100, t.z, t.concepts, "11", "naive", 0, "r", acc)
    other = Trajectory(np.arange(12) * 100, t.z[::-1], t.concepts, "11", "overprompt", 0, "r", acc)
    with tempfile.TemporaryDirectory() as d:
        return write_csv(Path(d) / "log.csv", [naive, other]).read_text()


VALID_LOG = valid_log_text()
NASTY_CELLS = [
    "",
    " ",
    "nan",
    "inf",
    "-inf",
    "-1",
    "1e300",
    "-1e300",
    "2",
    "1.0000001",
    "abc",
    "0x10",
    "1_000",
    '"',
    '""',
    "1,2",
    "\x00",
    "\u00e9",
    "\ufeff",
    "1e-400",
    "+0",
    "-0",
    "00",
    "11 ",
    "١",
    "NaN",
    "None",
]
TEXT = string.printable + "é€\ufeff\x00"


@st.composite
def mutated(draw, text: str) -> bytes:
    """``text`` after 0-4 random edits (cut, insert, replace a cell, duplicate, drop or swap lines, truncate),
    some of which keep the log valid, then encoded (mostly UTF-8)."""
    for _ in range(draw(st.integers(0, 4))):
        op = draw(
            st.sampled_from(
                [
                    "cut",
                    "insert",
                    "cell",
                    "valid-cell",
                    "dup",
                    "drop",
                    "swap",
                    "truncate",
                    "truncate-line",
                ]
            )
        )
        n = max(len(text), 1)
        if op == "cut":
            i = draw(st.integers(0, n - 1))
            text = text[:i] + text[i + draw(st.integers(1, 40)) :]
        elif op == "insert":
            i = draw(st.integers(0, n))
            text = text[:i] + draw(st.text(TEXT, min_size=1, max_size=12)) + text[i:]
        elif op == "truncate":
            text = text[: draw(st.integers(0, n))]
        elif op == "truncate-line":
            text = text[: text.rfind("\n", 0, draw(st.integers(0, n))) + 1]
        else:
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            if op == "cell":
                cells = lines[i].split(",")
                j = draw(st.integers(0, len(cells) - 1))
                cells[j] = draw(st.sampled_from(NASTY_CELLS) | st.text(TEXT, max_size=6))
                lines[i] = ",".join(cells)
            elif op == "valid-cell":
                cells = lines[i].split(",")
                j = draw(st.integers(0, len(cells) - 1))
                cells[j] = repr(draw(st.floats(0, 1)))
                lines[i] = ",".join(cells)
            elif op == "dup":
                lines.insert(i, lines[i])
            elif op == "drop":
                del lines[i]
            else:
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    encoding = draw(st.sampled_from(["utf-8"] * 8 + ["utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


def json_values(leaves=None):
    leaves = leaves or (
        st.none()
        | st.booleans()
        | st.integers(-(10**6), 10**6)
        | st.floats(allow_nan=False)
        | st.text(max_size=8)
    )
    return st.recursive(
        leaves,
        lambda kids: (
            st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4)
        ),
        max_leaves=12,
    )


def tmp_file(data: bytes, name: str) -> Path:
    folder = Path(tempfile.mkdtemp(dir=BASE))
    path = folder / name
    path.write_bytes(data)
    return path


# -- the log reader ------------------------------------------------------------------------------


def _reads_or_refuses(data: bytes) -> None:
    path = tmp_file(data, "log.csv")
    try:
        out = read_csv(path)
    except ValueError as err:
        assert str(path) in str(err)  # every refusal names the file
        event("refused")
        return
    event("accepted")
    for t in out:  # what is accepted is valid
        assert np.all(np.isfinite(t.z)) and np.all(np.diff(t.step) > 0)


test_read_csv_random_bytes, test_read_csv_random_bytes_long = twice(
    _reads_or_refuses, st.binary(max_size=600)
)
test_read_csv_mutated, test_read_csv_mutated_long = twice(_reads_or_refuses, mutated(VALID_LOG))


def test_a_log_cut_inside_its_last_number_is_refused(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(VALID_LOG[:-3])  # '0.53...' loses its last digits and the newline
    with pytest.raises(ValueError, match="does not end with a newline"):
        read_csv(path)


# -- sidecars, elicitation files, run configs, checkpoints ---------------------------------------------


def _sidecar(doc):
    text = doc if isinstance(doc, str) else json.dumps(doc)
    folder = tmp_file(b"", "log.csv").parent
    (folder / "log.meta.json").write_text(text, encoding="utf-8")
    try:
        out = read_meta(folder / "log.csv")
    except ValueError:
        return
    assert isinstance(out, dict)


test_read_meta_fuzz, test_read_meta_fuzz_long = twice(
    _sidecar, json_values() | st.binary(max_size=80).map(lambda b: b.decode("latin-1"))
)


@st.composite
def elicitation_docs(draw):
    """Mostly almost-valid elicitation files: {"steps": {step: {label: reading}}} with one thing off (readings in the
    current object form or the old list form [z, accuracy, setting])."""
    entry = st.lists(st.floats(-1, 2) | st.text(max_size=3), max_size=3) | st.fixed_dictionaries(
        {
            "z": st.none() | st.lists(st.floats(-1, 2), max_size=2),
            "accuracy": st.floats(-1, 2) | st.text(max_size=2),
        },
        optional={
            "shares": st.dictionaries(st.text(max_size=2), st.floats(-1, 2), max_size=2),
            "samples": st.integers(-2, 70) | st.booleans(),
            "selection_accuracy": st.floats(-1, 2),
        },
    )
    good = [[0.5, 0.5], 0.3, "s=2"]
    steps = draw(
        st.dictionaries(
            st.sampled_from(["0", "2", "10", "-1", "x", "1.5"]),
            st.dictionaries(
                st.sampled_from(["11", "00", ""]), st.just(good) | entry | json_values(), max_size=2
            ),
            max_size=3,
        )
    )
    return draw(st.just({"steps": steps}) | json_values())


def _elicitation(doc):
    from empirical.training import runlog

    run = tmp_file(b"", "x").parent
    (run / "elicit").mkdir()
    (run / "elicit" / "overprompt.json").write_text(json.dumps(doc))
    try:
        out = runlog.read_elicit(run, "overprompt")
    except ValueError as err:
        assert "overprompt.json" in str(err)
        return
    for by_label in out.values():
        for r in by_label.values():
            assert (
                0 <= r.accuracy <= 1
                and all(0 <= v <= 1 for v in r.z)
                and isinstance(r.setting, str)
            )


test_read_elicit_fuzz, test_read_elicit_fuzz_long = twice(_elicitation, elicitation_docs())


@st.composite
def train_sections(draw):
    """A valid run config with some fields replaced by random JSON values."""
    from empirical.training.config import make_config

    doc = make_config("smoke").to_json()
    for key in draw(st.lists(st.sampled_from(sorted(doc)), max_size=3)):
        doc[key] = draw(json_values())
    return doc


def _run_config(train, shape):
    from empirical import elicit

    run = tmp_file(b"", "x").parent
    doc = {"train": train, "probe": {"path": "p", "hash": "h"}}
    doc = {"good": doc, "no-probe": {"train": train}, "list": [doc]}[shape]
    (run / "config.json").write_text(json.dumps(doc))
    try:
        cfg, _ = elicit.load_run(run)
    except ValueError as err:
        assert "config.json" in str(err)  # names the file
        return
    assert cfg.to_json()["steps"] >= 1


test_run_config_fuzz, test_run_config_fuzz_long = twice(
    _run_config,
    train_sections(),
    st.sampled_from(["good", "no-probe", "list"]),
    marks=(needs_torch,),
)


def _tensor_file(data):
    from empirical.nets import tensorfile

    path = tmp_file(data, "last.pt")
    with pytest.raises(ValueError, match="last.pt"):
        tensorfile.load(path)


test_tensor_file_fuzz, test_tensor_file_fuzz_long = twice(
    _tensor_file,
    st.binary(max_size=300) | st.sampled_from([b"PK\x03\x04", b"\x80\x02}q\x00.", b""]),
    marks=(needs_torch,),
)


# -- the commands -------------------------------------------------------------------------------------


def _fit_command(data):
    path = tmp_file(data, "log.csv")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = fit_cli.main([str(path), "--no-figures", "--protocol", "naive"])
    event(f"exit {code}")
    assert code in (0, 2)
    lines = err.getvalue().strip().splitlines()
    if code == 2:
        assert (
            lines[-1].startswith("python -m fitting.fit: error: ")
            and "Traceback" not in err.getvalue()
        )
    else:
        doc = json.loads((path.parent / "fit" / "fit.json").read_text())
        assert all(r["rmse"] is None or np.isfinite(r["rmse"]) for r in doc["fits"])


test_fit_command_fuzz, test_fit_command_fuzz_long = twice(
    _fit_command,
    mutated(VALID_LOG),
    short=settings(SHORT, max_examples=12),
    long=settings(LONG, max_examples=150),
)


def _capability_command(data):
    path = tmp_file(data, "trajectories.csv")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = capability.main([str(path.parent)])
    event(f"exit {code}")
    assert code in (0, 2)
    if code == 2:
        assert (
            err.getvalue()
            .strip()
            .splitlines()[-1]
            .startswith("python -m fitting.capability: error: ")
        )
        assert "Traceback" not in err.getvalue()


test_capability_command_fuzz, test_capability_command_fuzz_long = twice(
    _capability_command,
    mutated(VALID_LOG),
    short=settings(SHORT, max_examples=15),
    long=settings(LONG, max_examples=200),
)
