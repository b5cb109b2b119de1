"""File mutations under the commands that read a run folder (issue #74): the invariant, on every draw.

A committed `small` run's folder is copied, one of its files mutated (cut, emptied, a number made NaN, inf or
1e400, a JSON value of the wrong type, nested 100,000 deep, a sparse file of 3 GiB, a link to another file,
removed, random bytes), and a command run on it in process. It must end with exit 0 and a complete, finite
output, or exit 2 with one line naming the bad thing; no input file changes (links followed); no draw takes more
than TIME_LIMIT seconds or raises the process's peak memory by more than RSS_LIMIT_MB. The default run draws a
every operation on every file for the quick commands and a few random draws for each (well inside a minute
for all); ``-m slow`` the grid for every command and many more draws. Flags are fuzzed by
tests/property/test_flag_fuzz.py and single readers by tests/property/test_fuzz.py.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib
import io
import json
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis.errors import InvalidArgument
from hypothesis import strategies as st

from test_fuzz import json_values, mutated

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "results" / "study-small" / "dcolor" / "runs" / "sep.color=0.4,seed=1"
FILES = (
    "trajectories.csv",
    "trajectories.meta.json",
    "config.json",
    "overprompt.json",
    "metrics.jsonl.gz",
)
TIME_LIMIT = 20.0  # seconds a draw; a hang or a blowup ends the draw as a failure
RSS_LIMIT_MB = 1024  # growth of the process's peak memory over a draw
# command -> (argv for a run folder and an output path, the output file it writes)
COMMANDS = {
    "fitting.capability": (
        lambda run, out: [str(run), "--out", str(out)],
        "elicitation_summary.json",
    ),
    "fitting.masking": (lambda run, out: [str(run), "--out", str(out)], "masking.json"),
    "fitting.turn": (lambda run, out: [str(run), "--out", str(out)], "turn.json"),
    "fitting.ladder": (
        lambda run, out: [str(run), "--out", str(out / "ladder.json")],
        "ladder.json",
    ),
    "figures.training": (
        lambda run, out: [str(run), "--out", str(out / "training.png")],
        "training.png",
    ),
}
NUMBER = re.compile(rb"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?")
OPS = ("mutate", "empty", "number", "json-type", "deep", "huge", "link", "missing", "bytes")


class Overtime(Exception):
    pass


def _raise_overtime(*_):
    raise Overtime


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, compresslevel=1) if path.suffix == ".gz" else data)


@st.composite
def mutations(draw):
    """(file, operation, what the operation needs)."""
    name, op = draw(st.sampled_from(FILES)), draw(st.sampled_from(OPS))
    if op == "mutate":
        return name, op, draw(mutated(_read(RUN / name).decode()))
    if op == "number":
        return (
            name,
            op,
            (
                draw(st.integers(0, 10**6)),
                draw(st.sampled_from([b"nan", b"inf", b"-inf", b"1e400"])),
            ),
        )
    if op == "json-type":
        return name, op, (draw(st.integers(0, 10**6)), draw(json_values()))
    if op == "link":
        return name, op, draw(st.sampled_from([f for f in FILES if f != name] + ["outside"]))
    if op == "bytes":
        return name, op, draw(st.binary(max_size=200))
    return name, op, None


def apply(run: Path, mutation) -> None:
    name, op, arg = mutation
    path = run / name
    if op == "mutate" or op == "bytes":
        path.write_bytes(arg) if op == "bytes" else _write(path, arg)
    elif op == "empty":
        path.write_bytes(b"")
    elif op == "number":
        data, (pick, token) = _read(path), arg
        found = list(NUMBER.finditer(data))
        if found:
            m = found[pick % len(found)]
            _write(path, data[: m.start()] + token + data[m.end() :])
    elif op == "json-type":
        pick, value = arg
        try:
            doc = json.loads(_read(path))
        except (ValueError, UnicodeDecodeError):
            return
        if isinstance(doc, dict) and doc:
            doc[sorted(doc)[pick % len(doc)]] = value
            _write(path, json.dumps(doc).encode())
    elif op == "deep":
        _write(path, b"[" * 100_000 + b"]" * 100_000)
    elif op == "huge":
        with open(path, "ab") as f:
            f.truncate(3 * 2**30)  # sparse: 3 GiB that take no disk
    elif op == "link":
        target = run.parent / "outside.txt" if arg == "outside" else run / arg
        if arg == "outside":
            target.write_text("step,class,z_color\n0,11,0.5\n")
        path.unlink()
        path.symlink_to(target)
    elif op == "missing":
        path.unlink()


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under folder (links followed, sparse giants by size and a sample) -> a digest."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            size = p.stat().st_size
            with open(p, "rb") as f:
                head = f.read(1 << 20)
            out[str(p.relative_to(folder))] = f"{size}:{hashlib.sha256(head).hexdigest()}"
    return out


def _finite_json(path: Path) -> None:
    def refuse(token):
        raise AssertionError(f"{path.name} holds {token}")

    json.loads(path.read_text(), parse_constant=refuse)


def check(module: str, mutation) -> tuple[int, str, float]:
    """Run ``module`` on a copy of RUN with ``mutation`` applied; assert the invariant; (exit code, the last
    line on stderr, seconds)."""
    argv_of, output = COMMANDS[module]
    base = Path(tempfile.mkdtemp(prefix="file-fuzz-"))
    try:
        run, out = base / "run", base / "out"
        shutil.copytree(RUN, run)
        out.mkdir()
        apply(run, mutation)
        inputs = _snapshot(base)
        err = io.StringIO()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        old = signal.signal(signal.SIGALRM, _raise_overtime)
        signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = importlib.import_module(module).main(argv_of(run, out))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 2
        except Overtime:
            raise AssertionError(f"{module} {mutation[:2]}: over {TIME_LIMIT} s") from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        took = time.perf_counter() - start
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
        what = f"python -m {module} on {mutation[0]} ({mutation[1]}): exit {code}\n{err.getvalue()[-1500:]}"
        with contextlib.suppress(
            InvalidArgument
        ):  # outside a hypothesis test (the fuzzer's own test)
            event(f"{mutation[1]}: exit {code}")
        assert code in (0, 2), what
        assert "Traceback" not in err.getvalue(), what
        if code == 2:
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"python -m {module}: error: "), what
        else:
            written = out / output
            assert written.is_file() and written.stat().st_size > 0, what
            if written.suffix == ".json":
                _finite_json(written)
        after = _snapshot(base)
        changed = [
            k for k, v in inputs.items() if after.get(k) != v
        ]  # new files are outputs (RUN/elicitation.json)
        assert not changed, f"{what}: an input changed: {changed}"
        assert took < TIME_LIMIT and grew < RSS_LIMIT_MB, f"{what}: {took:.1f} s, +{grew:.0f} MB"
        return code, (err.getvalue().strip().splitlines() or [""])[-1], took
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _fuzz(module: str, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(mutations())
    def one(mutation):
        check(module, mutation)

    one()


# every operation on every file, with fixed arguments (a NaN, a list where an object belongs, a link outside)
GRID = [
    (
        name,
        op,
        {"number": (3, b"nan"), "json-type": (1, [1, {"a": None}]), "link": "outside"}.get(op),
    )
    for name in FILES
    for op in OPS
    if op not in ("mutate", "bytes")
] + [(name, "bytes", b"\x00\xff garbage") for name in FILES]
QUICK = ("fitting.capability", "fitting.masking", "fitting.turn")  # a draw well under a second


@pytest.mark.parametrize("module", QUICK)
def test_every_operation_on_every_file_keeps_the_invariant(module):
    for mutation in GRID:
        check(module, mutation)


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(set(COMMANDS) - set(QUICK)))
def test_every_operation_on_every_file_keeps_the_invariant_slow(module):
    for mutation in GRID:
        check(module, mutation)


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_random_mutations_keep_the_invariant(module):
    _fuzz(module, 4)


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_random_mutations_keep_the_invariant_long(module):
    _fuzz(module, 150)


def test_the_fuzzer_catches_a_changed_input_and_an_overtime(monkeypatch):
    """The invariant can fail: a command that edits its input, or sleeps past the limit, is caught."""
    import fitting.capability as command

    def edits(argv):
        Path(argv[0], "config.json").write_text("{}")
        Path(argv[2], "elicitation_summary.json").write_text("{}")
        return 0

    monkeypatch.setattr(command, "main", edits)
    with pytest.raises(AssertionError, match="an input changed"):
        check("fitting.capability", ("overprompt.json", "empty", None))
    monkeypatch.setattr(command, "main", lambda argv: time.sleep(5) or 0)
    monkeypatch.setattr(sys.modules[__name__], "TIME_LIMIT", 0.2)
    with pytest.raises(AssertionError, match="over 0.2 s"):
        check("fitting.capability", ("config.json", "empty", None))
