"""A run's trajectories.csv, assembled from what training and elicitation have logged.

Training keeps its naive evaluations inside ``checkpoints/last.pt``; elicitation keeps one result
file per protocol, ``elicit/<protocol>.json`` ({step: {label: [z, accuracy, setting]}}). Both
processes rebuild ``trajectories.csv`` from these sources with :func:`write`, atomically, so the
log never loses or duplicates rows whichever of them ran last or was interrupted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from theory.files import read_json, write_json
from theory.trajectory import Trajectory, write_csv


def run_meta(cfg, probe_hash: str, *, source: str) -> dict[str, Any]:
    """The sidecar metadata of a run's trajectories.csv (training and elicitation write the same)."""
    return {"source": source, "concepts": list(cfg.concepts), "held_out": cfg.data.held_out, "probe_hash": probe_hash,
            "config": cfg.to_json()}


def elicit_path(run: Path, protocol: str) -> Path:
    """``RUN/elicit/<protocol>.json``."""
    return Path(run) / "elicit" / f"{protocol}.json"


def read_elicit(run: Path, protocol: str) -> dict[int, dict[str, list]]:
    """A protocol's results, {step: {label: [z, accuracy, setting]}}, checked; {} when none."""
    path = elicit_path(run, protocol)
    if not path.exists():
        return {}
    fix = "delete it to recompute that protocol"
    doc = read_json(path, "elicitation file (JSON)", fix)
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), dict):
        raise ValueError(f"{path}: not an elicitation file (expected an object with 'steps'); {fix}")
    out = {}
    for key, by_label in doc["steps"].items():
        if not key.isdigit() or not isinstance(by_label, dict):
            raise ValueError(f"{path}: steps[{key!r}] is not a step with results per class; {fix}")
        for label, entry in by_label.items():
            if not _valid_entry(entry):
                raise ValueError(f"{path}: steps[{key!r}][{label!r}] is not [z list, accuracy in [0, 1], setting]; {fix}")
        out[int(key)] = by_label
    return out


def _valid_entry(entry: Any) -> bool:
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], list) and isinstance(entry[2], str)):
        return False
    numbers = [*entry[0], entry[1]]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
        return False
    return all(0 <= v <= 1 for v in numbers)


def write_elicit(run: Path, protocol: str, results: dict[int, dict[str, list]], info: dict[str, Any]) -> None:
    """Write a protocol's results (and ``info``) atomically, steps in order."""
    write_json(elicit_path(run, protocol), {**info, "protocol": protocol,
                                            "steps": {str(k): results[k] for k in sorted(results)}})


def protocols_logged(run: Path) -> list[str]:
    """The protocols with a results file in the run, sorted."""
    return sorted(p.stem for p in (Path(run) / "elicit").glob("*.json"))


@dataclass(frozen=True)
class Logged:
    """One reading of a class at a checkpoint: its concept-space point, joint accuracy and, for an elicitation
    protocol, the setting that won. Saved in last.pt as ``[step, label, z, accuracy]``."""

    step: int
    label: str
    z: tuple[float, ...]
    accuracy: float
    setting: str = ""

    def to_list(self) -> list:
        """The form saved in last.pt."""
        return [self.step, self.label, list(self.z), self.accuracy]

    @classmethod
    def from_list(cls, row: Sequence) -> "Logged":
        """A point from its saved form; ValueError if the row is not ``[step, label, z, accuracy]``."""
        try:
            step, label, z, accuracy = row
            return cls(int(step), str(label), tuple(float(v) for v in z), float(accuracy))
        except (TypeError, ValueError):
            raise ValueError(f"{row!r} is not a logged point [step, label, z, accuracy]") from None


def elicited(run: Path, protocol: str) -> list[Logged]:
    """A protocol's results as readings, in step order."""
    results = read_elicit(run, protocol)
    return [Logged(s, label, tuple(e[0]), e[1], e[2]) for s in sorted(results) for label, e in results[s].items()]


def _trajectory(rows: Sequence[Logged], concepts: Sequence[str], protocol: str, seed: int, run: str) -> Trajectory:
    extra = {"setting": tuple(r.setting for r in rows)} if protocol != "naive" else {}
    return Trajectory(step=np.array([r.step for r in rows]), z=np.array([r.z for r in rows]), concepts=tuple(concepts),
                      label=rows[0].label, protocol=protocol, seed=seed, run=run,
                      accuracy=np.array([r.accuracy for r in rows]), extra=extra)


def write(run: Path, *, concepts: Sequence[str], classes: Sequence[str], seed: int, naive: Sequence[Logged],
          meta: dict[str, Any]) -> Path | None:
    """Rebuild RUN/trajectories.csv from the naive readings and the elicit files: naive first, then each protocol."""
    run = Path(run)
    by_protocol = {"naive": list(naive)} | {protocol: elicited(run, protocol) for protocol in protocols_logged(run)}
    trajectories = []
    for protocol, readings in by_protocol.items():
        for label in classes:
            rows = [r for r in readings if r.label == label]
            if rows:
                trajectories.append(_trajectory(rows, concepts, protocol, seed, run.name))
    if not trajectories:
        return None
    return write_csv(run / "trajectories.csv", trajectories, meta=meta)
