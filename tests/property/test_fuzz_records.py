"""The fuzzers' records (results/reliability/flag_fuzz.md, file_fuzz.md): the scripts that write them run, say
what each draw did, and write a planted breach as FAIL with exit 1."""

from benchmark_script import load


flag_fuzz = load("flag_fuzz")


def test_the_flag_record_names_each_draw_and_its_outcome(tmp_path):
    out = tmp_path / "flag_fuzz.md"
    argv = [
        "--draws",
        "3",
        "--only",
        "fitting.turn",
        "--only",
        "theory.simulate",
        "--out",
        str(out),
    ]
    assert flag_fuzz.main(argv) == 0
    text = out.read_text()
    assert "6 draws, 0 broke the invariant" in text
    rows = [line for line in text.splitlines() if line.startswith("| `fitting.turn` | `")]
    assert len(rows) == 3 and all(" exit 0 " in r or " exit 2 " in r for r in rows)

    def draws(page):  # every row but its seconds
        return [line.rsplit("|", 2)[0] for line in page.splitlines() if line.startswith("| `")]

    assert flag_fuzz.main(argv) == 0 and draws(out.read_text()) == draws(text)  # seeded: the same


def test_a_draw_that_breaks_the_invariant_is_written_as_fail(tmp_path, monkeypatch):
    out = tmp_path / "flag_fuzz.md"
    real = flag_fuzz._fuzzer

    def planted():
        fuzz = real()

        def broken(module, draw, folder):
            raise AssertionError(f"python -m {module}: planted traceback")

        fuzz.check = broken
        return fuzz

    monkeypatch.setattr(flag_fuzz, "_fuzzer", planted)
    assert flag_fuzz.main(["--draws", "2", "--only", "fitting.turn", "--out", str(out)]) == 1
    assert "| FAIL | python -m fitting.turn: planted traceback |" in out.read_text()
