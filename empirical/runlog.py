"""A run's trajectories.csv, assembled from what training and elicitation have logged.

Training keeps its naive evaluations inside ``checkpoints/last.pt``; elicitation keeps one result
file per protocol, ``elicit/<protocol>.json`` ({step: {label: [z, accuracy, setting]}}). Both
processes rebuild ``trajectories.csv`` from these sources with :func:`write`, atomically, so the
log never loses or duplicates rows whichever of them ran last or was interrupted.
"""

from __future__ import annotations

import math
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


def _trajectory(rows: list, concepts: Sequence[str], label: str, protocol: str, seed: int, run: str,
                settings: list[str] | None = None) -> Trajectory:
    extra = {"setting": tuple(settings)} if settings is not None else {}
    return Trajectory(step=np.array([r[0] for r in rows]), z=np.array([r[1] for r in rows]), concepts=tuple(concepts),
                      label=label, protocol=protocol, seed=seed, run=run,
                      accuracy=np.array([r[2] for r in rows]), extra=extra)


def write(run: Path, *, concepts: Sequence[str], classes: Sequence[str], seed: int, naive: list,
          meta: dict[str, Any]) -> Path | None:
    """Rebuild RUN/trajectories.csv from the naive points ``[step, label, z, accuracy]`` and the elicit files."""
    run = Path(run)
    trajectories = []
    for label in classes:
        rows = [(p[0], p[2], p[3]) for p in naive if p[1] == label]
        if rows:
            trajectories.append(_trajectory(rows, concepts, label, "naive", seed, run.name))
    for protocol in protocols_logged(run):
        results = read_elicit(run, protocol)
        for label in classes:
            rows = [(s, results[s][label][0], results[s][label][1], results[s][label][2])
                    for s in sorted(results) if label in results[s]]
            if rows:
                trajectories.append(_trajectory([r[:3] for r in rows], concepts, label, protocol, seed, run.name,
                                                [r[3] for r in rows]))
    if not trajectories:
        return None
    return write_csv(run / "trajectories.csv", trajectories, meta=meta)
