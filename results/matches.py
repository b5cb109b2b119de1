"""Do the regenerated results match the committed ones? Every tracked file under results that differs from
the commit (git), compared by its numbers.

  python results/matches.py [--rtol 1e-3] [--atol 1e-9] [--restore]

JSON files are compared value by value (numbers within rtol/atol, everything else equal; the default rtol 1e-3
leaves room for the fits' last digits: remade on an AVX2 CPU, study-small's fits moved by up to 3.8e-6 relative
and one interval bound of an ill-conditioned fit by 2.9e-4 (-1,480.58 -> -1,481.01), while the package's code
before and after that day's changes remade them byte for byte alike, 2026-11-27); text files (CSV,
Markdown, logs) line by line, each number within the tolerance and the text between numbers equal. A figure (PNG,
PDF, SVG) is drawn from those numbers: its bytes may differ from a new matplotlib or font, so it is listed, not
judged. CSV files are read as CSV (field by field). --restore puts back the committed version of every file that
matches and of the figures, only when every file matched (after the report), so `git status` is clean again
after a check that passed; a failed check leaves every file as it is. regenerate.sh --check runs this after remaking
the files. Exit 0 when every file matches, 1 when one does not (each named with its first difference).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = (".png", ".pdf", ".svg")
# a number in text: thousands groups of exactly three digits (1,234.5), never "32,0.3" (two CSV fields)
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def changed() -> list[str]:
    """Tracked files under results that differ from HEAD."""
    out = subprocess.run(
        ["git", "diff", "--name-only", "-z", "HEAD", "--", "results"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in out.decode("utf-8", "surrogateescape").split("\0") if name]


def committed(path: str) -> bytes:
    return subprocess.run(
        ["git", "show", f"HEAD:{path}"], cwd=ROOT, capture_output=True, check=True
    ).stdout


def close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def json_difference(a, b, rtol: float, atol: float, where: str = "") -> str | None:
    """The first place two JSON values differ beyond the tolerance, or None."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return None if close(float(a), float(b), rtol, atol) else f"{where or '.'}: {a!r} -> {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where or '.'}: keys {sorted(set(a) ^ set(b))[:3]} differ"
        for key in a:
            found = json_difference(a[key], b[key], rtol, atol, f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where or '.'}: {len(a)} -> {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            found = json_difference(x, y, rtol, atol, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{where or '.'}: {a!r:.40} -> {b!r:.40}"


def _number(text: str) -> float:
    return float(text.replace(",", "")) if text.strip(",.") else math.nan


def text_difference(a: str, b: str, rtol: float, atol: float) -> str | None:
    """The first line whose text or numbers differ beyond the tolerance, or None."""
    old, new = a.splitlines(), b.splitlines()
    if len(old) != len(new):
        return f"{len(old)} -> {len(new)} lines"
    for i, (x, y) in enumerate(zip(old, new), 1):
        if x == y:
            continue
        if NUMBER.sub("#", x) != NUMBER.sub("#", y):
            return f"line {i}: the text differs"
        for u, v in zip(NUMBER.findall(x), NUMBER.findall(y)):
            if not close(_number(u), _number(v), rtol, atol):
                return f"line {i}: {u} -> {v}"
    return None


def csv_difference(a: str, b: str, rtol: float, atol: float) -> str | None:
    """The first CSV field (read as CSV: quoting, commas) whose text or number differs, or None."""
    old, new = list(csv.reader(io.StringIO(a))), list(csv.reader(io.StringIO(b)))
    if len(old) != len(new):
        return f"{len(old)} -> {len(new)} rows"
    for i, (x, y) in enumerate(zip(old, new), 1):
        if len(x) != len(y):
            return f"row {i}: {len(x)} -> {len(y)} fields"
        for j, (u, v) in enumerate(zip(x, y), 1):
            if u == v:
                continue
            try:
                same = close(float(u), float(v), rtol, atol)
            except ValueError:
                same = False
            if not same:
                return f"row {i}, field {j}: {u!r} -> {v!r}"
    return None


def difference(path: str, rtol: float, atol: float) -> str | None:
    """Why the working file differs from the committed one beyond the tolerance (None: it matches)."""
    if not (ROOT / path).is_file():
        return "deleted (or no longer a file)"
    now, before = (ROOT / path).read_bytes(), committed(path)
    if now == before:
        return None
    try:
        if path.endswith(".json"):
            try:
                return json_difference(json.loads(before), json.loads(now), rtol, atol)
            except json.JSONDecodeError as err:
                return f"not valid JSON now ({err})"
        if path.endswith(".csv"):
            return csv_difference(before.decode(), now.decode(), rtol, atol)
        return text_difference(before.decode(), now.decode(), rtol, atol)
    except UnicodeDecodeError:
        return "binary file: the bytes differ"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (1e-3)")
    parser.add_argument("--atol", type=float, default=1e-9, help="absolute tolerance (1e-9)")
    parser.add_argument(
        "--restore", action="store_true", help="put back the committed files that match"
    )
    args = parser.parse_args(argv)
    files = changed()
    figures = [f for f in files if f.endswith(FIGURES)]
    found = {f: difference(f, args.rtol, args.atol) for f in files if f not in figures}
    bad = {f: why for f, why in found.items() if why}
    for f, why in bad.items():
        print(f"differs: {f}: {why}")
    back = [f for f in found if f not in bad] + (figures if not bad else [])
    if (
        args.restore and back and not bad
    ):  # a failed check leaves every file as it is, to be looked at
        subprocess.run(["git", "checkout", "HEAD", "--", *back], cwd=ROOT, check=True)
    tolerance = f"rtol {args.rtol:g}, atol {args.atol:g}"
    if bad:
        print(f"{len(bad)} of {len(found)} changed files differ beyond {tolerance}")
        return 1
    print(
        f"matches the committed numbers: {len(found)} changed file(s) within {tolerance}; "
        f"{len(figures)} figure(s) redrawn" + (" (restored)" if args.restore else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
