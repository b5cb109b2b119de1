"""The package's reference runs, from which fitting.forecast learns when no --pool is given.

A reference pool is one JSON file (fitting/reference/PRESET-RESpx-CONCEPTS.json) holding each
committed run's events (fitting.analyses.events.run_events: the setting, the concept clocks, the
capability and behavior steps), not its logs, so a forecast reads a few kilobytes. ``python -m
fitting.forecast_calibration RUN ... --out DIR --reference FILE`` writes one from the run folders it
calibrates on; the shipped file for `small` (24 px, color and size) is made from the committed runs
listed in its ``runs`` (docs/forecast.md says which).

A pool learns only for runs like its own: :func:`mismatch` names what differs (preset, resolution,
concepts).
"""

from __future__ import annotations

from pathlib import Path

from fitting.analyses.events import Event

HERE = Path(__file__).resolve().parents[1] / "reference"
ROOT = HERE.parents[1]  # the runs' folders are named from the repository's root
KEYS = ("preset", "resolution", "concepts")


def describe(cfg: dict) -> dict:
    """The keys a pool must share with a run: preset, resolution, concepts (from a run's train
    config)."""
    return {
        "preset": cfg.get("preset"),
        "resolution": cfg.get("resolution"),
        "concepts": list(cfg.get("concepts") or sorted(cfg.get("sep") or {})),
    }


def name(kind: dict) -> str:
    return f"{kind['preset']}-{kind['resolution']}px-{'-'.join(kind['concepts'])}.json"


def path_for(kind: dict) -> Path:
    return HERE / name(kind)


def mismatch(run_kind: dict, pool_kind: dict) -> str | None:
    """What differs between a run and a pool (one phrase), or None."""
    diff = [
        f"{k} {run_kind.get(k)!r} against the pool's {pool_kind.get(k)!r}"
        for k in KEYS
        if run_kind.get(k) != pool_kind.get(k)
    ]
    return "; ".join(diff) or None


def _event_json(ev: Event | None) -> dict | None:
    return None if ev is None else {"step": ev.step, "censored_at": ev.censored_at}


def _event(doc: dict | None) -> Event | None:
    if doc is None:
        return None
    return Event(doc["step"], float(doc["censored_at"] if doc["step"] is None else doc["step"]))


def to_json(e: dict, kind: dict) -> dict:
    return {
        "run": e["run"],
        "seed": e["seed"],
        "sep": e["sep"],
        "steps": e["steps"],
        "device": e.get("device"),
        **kind,
        "concept_steps": {k: _event_json(v) for k, v in e["concept_steps"].items()},
        "capability": _event_json(e.get("capability")),
        "behavior": _event_json(e["behavior"]),
    }


def from_json(doc: dict) -> dict:
    e = dict(doc)
    e["concept_steps"] = {k: _event(v) for k, v in doc["concept_steps"].items()}
    e["capability"] = _event(doc.get("capability"))
    e["behavior"] = _event(doc["behavior"])
    return e


def load(path: Path) -> tuple[dict, list[dict]]:
    """(the pool's kind, its runs' events) from a reference file."""
    from core.files import read_json

    doc = read_json(path, "reference pool")
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        raise ValueError(f"{path}: not a reference pool (no 'runs' list)")
    kind = {k: doc.get(k) for k in KEYS}
    return kind, [from_json(r) for r in doc["runs"]]
