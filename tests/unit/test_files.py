"""core.files: text read plain or gzip-compressed, with errors that name the file."""

import gzip

import pytest

from core.files import plain_or_gz, read_json, read_text


def test_a_gzip_file_reads_as_its_text(tmp_path):
    text = '{"kind": "train", "step": 10, "note": "γ(0)"}\n'
    (tmp_path / "m.jsonl.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    assert read_text(tmp_path / "m.jsonl.gz") == text
    (tmp_path / "c.json.gz").write_bytes(gzip.compress(b'{"a": 1}'))
    assert read_json(tmp_path / "c.json.gz") == {"a": 1}


def test_the_plain_file_or_its_gz_copy_and_never_a_silent_choice_between_both(tmp_path):
    plain, gz = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.gz"
    # neither exists: the plain name, for the caller's "no such file" error
    assert plain_or_gz(plain) == plain
    gz.write_bytes(gzip.compress(b"compressed\n"))
    assert plain_or_gz(plain) == gz and plain_or_gz(str(plain)) == gz
    plain.write_text("plain\n")  # issue #51: a stale plain log was preferred to the complete .gz
    with pytest.raises(ValueError, match="also metrics.jsonl.gz beside it.*stale"):
        plain_or_gz(plain)
    gz.unlink()
    assert plain_or_gz(plain) == plain


def test_a_gz_file_is_decompressed_within_a_limit(tmp_path, monkeypatch):
    import core.files

    path = tmp_path / "big.jsonl.gz"
    path.write_bytes(gzip.compress(b"0" * 5000))  # 5 kB from a few dozen bytes
    monkeypatch.setattr(core.files, "MAX_DECOMPRESSED", 4096)
    with pytest.raises(ValueError, match="expands to more than 0 MiB"):
        read_text(path)
    monkeypatch.setattr(core.files, "MAX_DECOMPRESSED", 5000)
    assert len(read_text(path)) == 5000


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: gzip.compress(b"step 10\n" * 100)[:-6], "not a whole gzip file"),  # cut short
        (lambda: b"plain text, named .gz\n", "not a whole gzip file"),
        (lambda: gzip.compress(b"\xff\xfe\x00a"), "NUL bytes"),  # decompressed, then read as text
        (
            lambda: b"",
            "not a whole gzip file \\(the file is empty\\)",
        ),  # read as an empty log before
    ],
)
def test_a_broken_gz_file_is_a_value_error_naming_it(tmp_path, make, words):
    path = tmp_path / "metrics.jsonl.gz"
    path.write_bytes(make())
    with pytest.raises(ValueError, match=words) as err:
        read_text(path, "metrics log")
    assert str(path) in str(err.value)


def test_json_is_written_without_nan_or_infinity(tmp_path):
    """Issue #51: fitting.ladder wrote NaN into ladder.json, which is not JSON (a strict reader refuses it)."""
    import json

    import numpy as np

    from core.files import write_json

    path = write_json(
        tmp_path / "r.json", {"a": float("nan"), "b": np.array([1.0, np.inf]), "c": (np.int64(2),)}
    )
    assert json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(c)) == {
        "a": None,
        "b": [1.0, None],
        "c": [2],
    }


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path):
    """Issue #51: kill -9 during a large write left a hidden .tmp behind after the rerun."""
    import subprocess
    import sys
    import time

    from core.files import atomic_write

    target = tmp_path / "big.csv"
    code = (
        "import time\nfrom core.files import atomic_write\n"
        f"atomic_write({str(target)!r}, lambda fh: (fh.write('x' * 1000), fh.flush(), time.sleep(60)))"
    )
    writer = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob(".big.csv.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    writer.kill()
    writer.wait()
    assert len(list(tmp_path.glob(".big.csv.*.tmp"))) == 1
    (tmp_path / ".big.csv.live.tmp").write_text("not ours: no pid in the name, and fresh")
    atomic_write(target, lambda fh: fh.write("whole"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".big.csv.live.tmp", "big.csv"]
    assert target.read_text() == "whole"


def test_a_log_and_its_sidecar_are_written_under_the_folders_lock(tmp_path):
    """Issue #51: two empirical.convert runs to one --out mixed their sidecar and data (7 of 12 tries). A log
    and its sidecar are written while holding the folder's lock, so a second writer waits for the first."""
    import subprocess
    import sys
    import time

    from core.files import folder_lock
    from core.sidecar import read_meta

    path = tmp_path / "trajectories.csv"
    code = (
        "from core.trajectory import Trajectory, write_csv\n"
        "t = Trajectory([0, 1], [[0.1], [0.2]], ('color',), '11')\n"
        f"write_csv({str(path)!r}, [t], meta={{'writer': 2}})"
    )
    with folder_lock(tmp_path):
        writer = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(3)  # time enough to import and write, were it not waiting
        assert writer.poll() is None and not path.exists()
    assert writer.wait(timeout=60) == 0 and read_meta(path) == {"writer": 2}


def test_json_nested_too_deep_is_a_value_error_naming_the_file(tmp_path):
    """Issue #51: 50,000-deep JSON raised RecursionError."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(ValueError, match="deep.json: nested deeper than a JSON reader takes"):
        read_json(path)


def test_a_metrics_line_nested_too_deep_or_not_an_object_names_the_file_and_line(tmp_path):
    """Found by the file fuzzer (issue #74): fitting.ladder on such a line ended in a RecursionError traceback."""
    from core.files import json_line

    path = tmp_path / "metrics.jsonl"
    with pytest.raises(ValueError, match=r"metrics.jsonl, line 3: nested deeper"):
        json_line("[" * 100_000 + "]" * 100_000, path, 3)
    with pytest.raises(ValueError, match=r"line 4: not a JSON object \(list\)"):
        json_line("[1, 2]", path, 4)
    with pytest.raises(ValueError, match=r"line 5: not JSON"):
        json_line('{"step": 1', path, 5)
    assert json_line('{"step": 1}', path, 6) == {"step": 1}


def test_a_gz_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    """Found by the file fuzzer: gzip steps through trailing zeros one byte at a time, so a metrics log padded
    to 3 GiB (sparse) kept fitting.ladder busy for minutes."""
    import time

    from core.files import text_lines

    path = tmp_path / "metrics.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"step": 1}\n'))
    with open(path, "ab") as f:
        f.truncate(3 * 2**30)
    start = time.perf_counter()
    with pytest.raises(
        ValueError, match=r"3.0 GiB compressed, more than the 1 GiB a metrics log may have"
    ):
        list(text_lines(path, "metrics log"))
    assert time.perf_counter() - start < 1
