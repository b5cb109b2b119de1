"""Speed claims come from their benchmark (issue #77): each speed block in the docs equals what its committed
JSON renders, and the suite-time benchmark reads pytest's own numbers."""

import json
import shutil
from pathlib import Path

import pytest
from benchmark_script import load

ROOT = Path(__file__).resolve().parents[2]


doc_tables, suite_time = load("doc_tables"), load("suite_time")


@pytest.mark.parametrize("name", sorted(doc_tables.BLOCKS))
def test_each_speed_block_is_what_its_benchmark_json_renders(name):
    page, data, _ = doc_tables.BLOCKS[name]
    old, new = doc_tables.rendered(name)
    assert old == new, f"{page} differs from {data}: run python benchmarks/doc_tables.py"


def test_a_block_edited_by_hand_is_found_and_rewritten(tmp_path, monkeypatch, capsys):
    for page, data, _ in doc_tables.BLOCKS.values():
        for rel in (page, data):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / rel, tmp_path / rel)
    page = tmp_path / "docs" / "theory.md"
    page.write_text(
        page.read_text().replace("| exact (quadrature) |", "| exact (quadrature, fast) |", 1)
    )
    monkeypatch.setattr(doc_tables, "ROOT", tmp_path)
    assert doc_tables.main(["--check"]) == 1
    assert "docs/theory.md: block theory-sweep differs" in capsys.readouterr().out
    assert doc_tables.main([]) == 0 and doc_tables.main(["--check"]) == 0
    assert page.read_text() == (ROOT / "docs" / "theory.md").read_text()


def test_the_rendered_goals_follow_the_numbers():
    data = json.loads((ROOT / doc_tables.BLOCKS["theory-sweep"][1]).read_text())
    exact = data["sizes"][max(data["sizes"], key=int)]["exact (quadrature)"]
    exact["seconds"] = 0.030
    assert "at most 25 ms at N = 10,000: **not met (30.0 ms)**" in doc_tables.theory_sweep(data)
    exact["seconds"] = 0.020
    assert "**met (20.0 ms)**" in doc_tables.theory_sweep(data)


def test_the_suite_benchmark_reads_pytest_s_summary_and_durations():
    out = """........
============================= slowest 25 durations =============================
78.12s call     tests/integration/test_sweep.py::test_killed_and_resumed
0.51s setup    tests/unit/test_probe.py::test_x[a b]
=========== 1760 passed, 3 skipped, 12 deselected in 1263.45s (0:21:03) ===========
"""
    got = suite_time.parse(out)
    assert got["seconds"] == 1263.45 and got["passed"] == 1760 and got["deselected"] == 12
    assert got["slowest"][0] == {
        "test": "tests/integration/test_sweep.py::test_killed_and_resumed",
        "phase": "call",
        "seconds": 78.12,
    }
    assert got["slowest"][1]["test"] == "tests/unit/test_probe.py::test_x[a b]"
    with pytest.raises(SystemExit, match="no pytest summary"):
        suite_time.parse("Traceback: ...")


def test_the_suite_comparison_sums_each_tests_phases_and_names_the_ones_moved_to_slow():
    before = """3.00s call     tests/a.py::test_long
1.00s setup    tests/a.py::test_long
2.00s call     tests/b.py::test_moved
0.50s call     tests/b.py::test_short
"""
    after = "1.50s call     tests/a.py::test_long\n0.40s call     tests/b.py::test_short\n"
    table = suite_time.compare(before, after, n=2).splitlines()
    assert table[2] == "| `tests/a.py::test_long` | 4.0 | 1.5 |"
    assert table[3] == "| `tests/b.py::test_moved` | 2.0 | slow |"
    assert table[-1] == "| all tests | 6 | 2 |"
