"""results/matches.py: regenerated results compared with the committed ones by their numbers (issue #52:
regenerate.sh rewrote 11 tracked files with last-digit float differences)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("matches", ROOT / "results/matches.py")
matches = importlib.util.module_from_spec(spec)
spec.loader.exec_module(matches)


def test_json_numbers_within_the_tolerance_match_and_others_are_named():
    old = {"a": [1.0, 2.0], "b": {"c": 0.1234567891, "d": "x"}, "e": None}
    assert (
        matches.json_difference(old, old | {"b": {"c": 0.1234567892, "d": "x"}}, 1e-6, 1e-9) is None
    )
    assert matches.json_difference(old, old | {"a": [1.0, 2.1]}, 1e-6, 1e-9) == ".a[1]: 2.0 -> 2.1"
    assert "keys" in matches.json_difference(old, {"a": [1.0, 2.0]}, 1e-6, 1e-9)
    assert matches.json_difference(old, old | {"e": 0.0}, 1e-6, 1e-9) == ".e: None -> 0.0"


def test_text_lines_compare_their_numbers_and_their_words():
    table = "| level | median |\n|---|---|\n| 0.3 | 7,431.0000001 |\n"
    assert (
        matches.text_difference(table, table.replace("7,431.0000001", "7,431.0000002"), 1e-6, 0)
        is None
    )
    assert (
        matches.text_difference(table, table.replace("7,431", "7,432"), 1e-6, 0)
        == "line 3: 7,431.0000001 -> 7,432.0000001"
    )
    assert (
        matches.text_difference(table, table.replace("median", "mean"), 1e-6, 0)
        == "line 1: the text differs"
    )


def test_a_changed_csv_field_is_a_difference_never_one_number_with_its_neighbour():
    # issue #74: the number pattern read "32,0.3" as 320.3 and called the changed field a match
    old = "step,z_color,z_size\n32,0.0,0.5\n"
    new = "step,z_color,z_size\n32,0.3,0.5\n"
    assert matches.csv_difference(old, new, 1e-3, 1e-9) == "row 2, field 2: '0.0' -> '0.3'"
    assert matches.text_difference(old, new, 1e-3, 1e-9) == "line 2: 0.0 -> 0.3"
    assert matches.csv_difference(old, old.replace("0.5", "0.5000001"), 1e-3, 1e-9) is None
    assert matches.csv_difference(old, '"a,b",1\n', 1e-3, 1e-9) == "2 -> 1 rows"


def test_a_deleted_or_broken_file_is_named_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setattr(matches, "ROOT", tmp_path)
    monkeypatch.setattr(matches, "committed", lambda path: b'{"a": 1}')
    assert matches.difference("gone.json", 1e-3, 1e-9).startswith("deleted")
    (tmp_path / "cut.json").write_text('{"a": ')
    assert matches.difference("cut.json", 1e-3, 1e-9).startswith("not valid JSON now")


def _repo(tmp_path, files: dict[str, str]):
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    for name, text in files.items():
        (tmp_path / "results" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / name).write_text(text)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")


def test_restore_never_puts_back_a_file_before_every_difference_is_reported(
    tmp_path, monkeypatch, capsys
):
    """Issue #74: --restore erased the difference it should have reported; a file named outside ASCII was
    read as 'deleted' (git quoted its name)."""
    _repo(tmp_path, {"a.csv": "step,z\n32,0.0\n", "b.json": '{"x": 1.0}', "été.json": '{"y": 2.0}'})
    monkeypatch.setattr(matches, "ROOT", tmp_path)
    results = tmp_path / "results"
    (results / "a.csv").write_text("step,z\n32,0.3\n")  # beyond the tolerance
    (results / "b.json").write_text('{"x": 1.0000001}')  # within it
    (results / "été.json").write_text('{"y": 2.0000001}')
    assert matches.main(["--restore"]) == 1
    out = capsys.readouterr().out
    assert "differs: results/a.csv: row 2, field 2: '0.0' -> '0.3'" in out and "1 of 3" in out
    assert (results / "a.csv").read_text() == "step,z\n32,0.3\n"  # nothing put back
    assert (results / "b.json").read_text() == '{"x": 1.0000001}'
    (results / "a.csv").write_text("step,z\n32,0.0000000001\n")
    assert matches.main(["--restore"]) == 0
    assert "3 changed file(s) within" in capsys.readouterr().out
    assert (results / "b.json").read_text() == '{"x": 1.0}'  # each put back as committed
    assert (results / "été.json").read_text() == '{"y": 2.0}'
