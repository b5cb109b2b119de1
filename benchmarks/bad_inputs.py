"""Every command against bad input, as a careless or hostile user would type it: results/reliability/table.md.

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

The exit status is 1 when any case is not 'clean error' or 'accepted'. ``--write-docs`` rewrites
results/reliability/table.md and its summary line between the markers in docs/reliability.md. The case list is also imported by
tests/integration/test_bad_inputs_table.py, which runs its torch-free cases in process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "reliability.md"  # its summary line, between the markers
TABLE = ROOT / "results" / "reliability" / "table.md"  # the whole table, generated
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
    "pipeline.sweep",
    "empirical.convert",
    "pipeline.batch",
    "fitting.ladder",
    "empirical.celeba",
)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the case tables in benchmarks/badinputs/
from badinputs import (  # noqa: E402
    cases_celeba,
    cases_convert,
    cases_empirical,
    cases_fitting,
    cases_readers,
    cases_simulate,
    cases_study,
    cases_sweep,
)
from badinputs.fixtures import Case, prepare  # noqa: E402

CASES: list[Case] = [
    *cases_simulate.CASES,
    *cases_fitting.CASES,
    *cases_empirical.CASES,
    *cases_study.CASES,
    *cases_sweep.CASES,
    *cases_readers.CASES,
    *cases_convert.CASES,
    *cases_celeba.CASES,
]


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
    """The whole table into TABLE; its first line (the counts) and a link into docs/reliability.md."""
    TABLE.write_text(
        "# The bad-input table (generated by `python benchmarks/bad_inputs.py --write-docs`; "
        "docs/reliability.md explains it)\n\n" + text
    )
    doc = DOCS.read_text()
    begin, end = doc.index(MARK_BEGIN) + len(MARK_BEGIN), doc.index(MARK_END)
    link = Path(os.path.relpath(TABLE, DOCS.parent)).as_posix()  # ../results/...: not under docs/
    summary = f"{text.splitlines()[0]}; per command and case: [{TABLE.relative_to(ROOT).as_posix()}]({link})"
    DOCS.write_text(doc[:begin] + "\n" + summary + "\n" + doc[end:])


def parser() -> argparse.ArgumentParser:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--no-torch",
        action="store_true",
        help="skip the empirical commands (no torch, no smoke run)",
    )
    p.add_argument(
        "--only", metavar="WORD", help="only the commands whose module name contains WORD"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="seconds before a case counts as a hang (default 120)",
    )
    p.add_argument(
        "--write-docs",
        action="store_true",
        help=f"rewrite {TABLE.relative_to(ROOT)} and its summary in {DOCS.relative_to(ROOT)}",
    )
    p.add_argument("--json", type=Path, help="also write the outcomes as JSON here")
    return p


def run_all(cases: list[Case], timeout: float) -> list[Outcome]:
    """Every case in a fresh folder of one temporary workspace, with its progress on stderr."""
    torch = any(c.needs_torch for c in cases)
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as tmp:
        w = Path(tmp) / "w"
        w.mkdir()
        print(
            f"preparing the workspace{' (training a smoke run)' if torch else ''}...",
            file=sys.stderr,
        )
        prepare(w, torch=torch)
        results = []
        for i, case in enumerate(cases, 1):
            r = run_case(case, Path(tmp) / f"case{i:03d}", w, timeout)
            r.message = r.message.replace(f"{w}/", "").replace(f"{tmp}/", "")  # W/x -> x
            results.append(r)
            flag = "" if r.outcome in GOOD else "   <--"
            print(
                f"{i:3d}/{len(cases)} {r.outcome:17s} {r.seconds:5.1f}s {case.command} "
                f"{case.shown()}{flag}",
                file=sys.stderr,
            )
    return results


def as_json(results: list[Outcome]) -> str:
    """The outcomes as a JSON list (--json)."""
    rows = [
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
    ]
    return json.dumps(rows, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the cases, print the table, and exit 1 when any case is not a clean error or an acceptance."""
    args = parser().parse_args(argv)
    cases = [
        c
        for c in CASES
        if not (args.no_torch and c.needs_torch) and (args.only is None or args.only in c.command)
    ]
    results = run_all(cases, args.timeout)
    text = table(results)
    print(text)
    if args.write_docs:
        write_docs(text)
    if args.json:
        args.json.write_text(as_json(results))
    return 0 if all(r.outcome in GOOD for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
