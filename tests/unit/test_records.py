"""fitting.records: the saved JSON records that join fitting to figures."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import FrozenInstanceError, fields
from pathlib import Path

import pytest

from fitting.records import (
    RECORDS,
    FitRecord,
    ForecastVerdictRecord,
    LeaveOutRecord,
    MaskingRecord,
    Record,
    StudyRecord,
    TurnRecord,
)

ROOT = Path(__file__).resolve().parents[2]


def minimal(cls: type[Record]) -> dict:
    """A JSON object holding every required key of ``cls`` (rows with the keys their list needs)."""
    example = {
        "list": [],
        "dict": {},
        "str": "text",
        "int": 3,
        "float": 0.5,
        "bool": True,
        "Any": None,
    }
    doc = {}
    for f in fields(cls):
        key = f.metadata.get("key", f.name)
        if key in cls.required():
            types = cls.ROWS.get(key)
            first = str(f.type).split("|")[0].strip()
            row = {
                k: 0 if t == "Any" else example[t.split("|")[0].strip()]
                for k, t in (types or {}).items()
                if not k.endswith("?")
            }
            doc[key] = [row] if types is not None else example[first]
    return doc


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.FILE)
def test_every_record_round_trips_through_its_file(cls, tmp_path):
    doc = minimal(cls) | {"added later": [1, 2]}
    rec = cls.from_json(doc)
    path = rec.write(tmp_path / cls.FILE)
    again = cls.read(tmp_path)  # a folder holding FILE reads as FILE
    assert again == rec and again.extra == {"added later": [1, 2]}
    written = json.loads(path.read_text())
    assert {k: written[k] for k in doc} == doc
    assert list(written)[-1] == "added later"  # unknown keys after the known ones
    with pytest.raises(FrozenInstanceError):
        rec.extra = {}


def test_the_json_keys_keep_the_writers_order_and_class_is_label():
    rec = MaskingRecord(label="11", persist=3, runs=[], levels=None)
    assert list(rec.to_json()) == ["class", "persist", "runs", "levels"]
    assert rec.label == "11"
    assert MaskingRecord.required() == ["class", "persist", "runs"]


def test_older_files_read_with_the_defaults_of_later_fields():
    old = {"column": "sep_color", "class": "11", "protocol": "naive", "model": "eq1", "levels": []}
    rec = LeaveOutRecord.from_json(old)
    assert rec.law_name is None and rec.train_per_level is None and rec.differences == {}
    turn = TurnRecord.from_json({"log": "a.csv", "turns": []})
    assert turn.min_dev is None


@pytest.mark.parametrize(
    "doc, message",
    [
        ([], "not a JSON object, so not the study.json that python -m fitting.study writes"),
        ({"by": "sep_color"}, "lacks 'sweep', 'level', 'persist'"),
        (minimal(FitRecord), "(it looks like a fit.json, which python -m fitting.fit writes)"),
        (minimal(StudyRecord) | {"runs": [{"seed": 0}]}, "runs[0] lacks 'learning', 'held_out'"),
        (minimal(StudyRecord) | {"levels": {"a": 1}}, "'levels' is dict {'a': 1}, not list"),
        (minimal(StudyRecord) | {"persist": True}, "'persist' is bool True, not int"),
        (minimal(StudyRecord) | {"by": None}, "'by' is NoneType None, not str"),
        # issue #51: a string where the figures read a number was drawn as a category, or crashed them
        (
            minimal(StudyRecord) | {"runs": [{"seed": "0", "learning": {}, "held_out": {}}]},
            "runs[0].seed is str '0', not int | None",
        ),
        (
            minimal(StudyRecord)
            | {
                "by": "sep_color",
                "runs": [{"seed": 0, "sep_color": "abc", "learning": {}, "held_out": {}}],
            },
            "runs[0].sep_color is str 'abc', not a number",
        ),
        (
            minimal(StudyRecord)
            | {"runs": [{"seed": 0, "signal": {"color": "0.1"}, "learning": {}, "held_out": {}}]},
            "runs[0].signal.color is str '0.1', not a number",
        ),
    ],
)
def test_a_file_that_is_not_the_record_says_what_it_lacks(doc, message, tmp_path):
    path = tmp_path / "study.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as err:
        StudyRecord.read(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_a_missing_file_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(ValueError, match="no such file; write it with python -m fitting.fit"):
        FitRecord.read(tmp_path)


def test_fitting_writes_its_json_only_through_the_records():
    """No module of fitting writes JSON by hand: every saved record's layout is stated in fitting.records."""
    for path in sorted((ROOT / "fitting").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "core.files":
                assert "write_json" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.Attribute) and node.attr == "dump":
                raise AssertionError(f"{path.name}: json.dump")


def test_figures_read_fitting_s_json_only_through_the_records():
    """A figure never parses fitting's JSON itself (the checks live in one place)."""
    for path in sorted((ROOT / "figures").glob("*.py")):
        text = path.read_text()
        assert "read_json" not in text, path.name


def test_every_record_committed_under_results_reads_and_writes_back_unchanged():
    """The records the docs cite, old and new, read through their class; writing one back keeps its keys,
    their order and their values (only fields added later appear, with their defaults)."""
    read, records = 0, (*RECORDS, ForecastVerdictRecord)  # the latter not in RECORDS: see there
    for name in sorted({cls.FILE for cls in records}):
        # two records may share a file name (verdict.json: fitting.outside's and the forecast's):
        # each file reads through exactly one of them, and the other refuses it
        sharing = [cls for cls in records if cls.FILE == name]
        for path in sorted((ROOT / "results").rglob(name)):
            doc = json.loads(path.read_text())
            readers = []
            for cls in sharing:
                try:
                    readers.append(cls.read(path))
                except ValueError:
                    pass
            assert len(readers) == 1, (path, len(readers))
            again = readers[0].to_json()
            assert [k for k in again if k in doc] == list(doc), path
            assert {k: again[k] for k in doc} == doc, path
            read += 1
    assert read > 100


@pytest.mark.parametrize(
    "cls, key, row, message",
    [
        (MaskingRecord, "runs", {"p": "abc"}, "runs[0].p is str 'abc', not float"),
        (TurnRecord, "turns", {"turn_step": "900"}, "turns[0].turn_step is str '900', not float"),
        (LeaveOutRecord, "levels", {"law": [0.1]}, "levels[0].law is list [0.1], not float"),
        (TurnRecord, "turns", {"learned_step": "9"}, "turns[0].learned_step is str '9', not float"),
    ],
)
def test_a_row_value_of_the_wrong_type_is_named(cls, key, row, message):
    """Issue #51: 'abc' where masking.json has a number was plotted as three category ticks."""
    doc = minimal(cls)
    doc[key] = [doc[key][0] | row]
    with pytest.raises(ValueError, match=re.escape(message)):
        cls.from_json(doc, "x.json")


def test_a_row_may_lack_a_key_marked_optional_but_not_another():
    """ROWS: a key ending in "?" may be absent from a row (typed where present); the others not."""
    doc = minimal(TurnRecord)
    assert "learned_step" not in doc["turns"][0]
    assert TurnRecord.from_json(doc).turns == doc["turns"]
    del doc["turns"][0]["protocol"]  # "Any": required, of any type
    with pytest.raises(ValueError, match=re.escape("turns[0] lacks 'protocol'")):
        TurnRecord.from_json(doc, "t.json")


def test_a_prediction_whose_numbers_are_text_is_named():
    """figures.predict draws the law's coefficients and each run's rmse and covariates."""
    from fitting.records import PredictionRecord

    doc = minimal(PredictionRecord) | {
        "law": {"coefficients": {"b_lam": "-0.6"}},
        "holdout": {"r": {"rmse": 0.2, "covariates": {"color": 0.05}}},
    }
    with pytest.raises(ValueError, match=re.escape("law.coefficients['b_lam'] is str '-0.6'")):
        PredictionRecord.from_json(doc, "p.json")
    doc["law"] = {"coefficients": {"b_lam": -0.6}}
    assert PredictionRecord.from_json(doc, "p.json").holdout["r"]["rmse"] == 0.2


def test_a_forecast_with_neither_a_step_nor_a_chance_says_no_forecast():
    """Issue #76: "not expected by 300 (p ?)" was printed for a method that could not say anything."""
    from fitting.records import ForecastRecord

    base = dict(run="r", at=300.0, horizon=6000.0, observed_behavior_step=None, interval=None)
    silent = ForecastRecord(
        **base, behavior_step=None, p_compose=None, method="logistic", methods=[]
    )
    assert silent.line() == (
        "class 11: no forecast (logistic gave neither a step nor a chance; read to 300)"
    )
    unlikely = ForecastRecord(
        **base, behavior_step=None, p_compose=0.1, method="anchor", methods=[]
    )
    assert unlikely.line() == "class 11 not expected by 6,000 (p 0.10; anchor, read to 300)"
