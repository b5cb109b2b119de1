"""A run's trajectories.csv, assembled from what training and elicitation have logged.

Training keeps its naive evaluations inside ``checkpoints/last.pt``; elicitation keeps one result
file per protocol, ``elicit/<protocol>.json`` ({step: {label: {z, accuracy, interval, setting,
selection_accuracy, shares, samples}}}). Both
processes rebuild ``trajectories.csv`` from these sources with :func:`write`, atomically, so the
log never loses or duplicates rows whichever of them ran last or was interrupted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from core.files import atomic_write, read_json, write_json
from core.trajectory import UNREADABLE, Trajectory, write_csv


def run_meta(cfg, probe_hash: str, *, source: str) -> dict[str, Any]:
    """The sidecar metadata of a run's trajectories.csv (training and elicitation write the
    same)."""
    return {
        "source": source,
        "concepts": list(cfg.concepts),
        "held_out": cfg.data.held_out,
        "probe_hash": probe_hash,
        "config": cfg.to_json(),
    }


def elicit_path(run: Path, protocol: str) -> Path:
    """``RUN/elicit/<protocol>.json``."""
    return Path(run) / "elicit" / f"{protocol}.json"


def read_elicit(run: Path, protocol: str) -> dict[int, dict[str, "Logged"]]:
    """A protocol's results, {step: {label: reading}}, checked; {} when none."""
    path = elicit_path(run, protocol)
    if not path.exists():
        return {}
    fix = "delete it to recompute that protocol"
    doc = read_json(path, "elicitation file (JSON)", fix)
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), dict):
        raise ValueError(
            f"{path}: not an elicitation file (expected an object with 'steps'); {fix}"
        )
    out = {}
    for key, by_label in doc["steps"].items():
        if not key.isdigit() or not isinstance(by_label, dict):
            raise ValueError(f"{path}: steps[{key!r}] is not a step with results per class; {fix}")
        out[int(key)] = {}
        for label, entry in by_label.items():
            try:
                out[int(key)][label] = Logged.from_json(int(key), label, entry)
            except ValueError as err:
                raise ValueError(f"{path}: steps[{key!r}][{label!r}]: {err}; {fix}") from None
    return out


def write_elicit(
    run: Path, protocol: str, results: dict[int, dict[str, "Logged"]], info: dict[str, Any]
) -> None:
    """Write a protocol's results (and ``info``) atomically, steps in order."""
    steps = {
        str(k): {label: r.to_json() for label, r in results[k].items()} for k in sorted(results)
    }
    write_json(elicit_path(run, protocol), {**info, "protocol": protocol, "steps": steps})


def protocols_logged(run: Path) -> list[str]:
    """The protocols with a results file in the run, sorted."""
    return sorted(p.stem for p in (Path(run) / "elicit").glob("*.json"))


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a binomial proportion; (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _finite_unit(v: Any) -> bool:
    return (
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1
    )


@dataclass(frozen=True)
class Logged:
    """One reading of a class at a checkpoint: its concept-space point (NaN when no sample was
    readable), joint accuracy, the share of samples read as each corner and as unreadable, how many
    samples, and, for an elicitation protocol, the setting that won and its accuracy on the draw
    that chose it. Saved in last.pt as ``[step, label, z, accuracy, shares, samples]`` (old runs:
    the first four)."""

    step: int
    label: str
    z: tuple[float, ...]
    accuracy: float
    setting: str = ""
    shares: Mapping[str, float] = field(default_factory=dict)
    samples: int = 0
    selection_accuracy: float = math.nan

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95% Wilson interval of the accuracy (None when the number of samples was not
        logged)."""
        return wilson(self.accuracy * self.samples, self.samples) if self.samples else None

    def to_list(self) -> list:
        """The form saved in last.pt."""
        return [self.step, self.label, list(self.z), self.accuracy, dict(self.shares), self.samples]

    @classmethod
    def from_list(cls, row: Sequence) -> "Logged":
        """A point from its saved form; ValueError if the row is not ``[step, label, z, accuracy(,
        shares, samples)]``."""
        try:
            step, label, z, accuracy, *rest = row
            if len(rest) not in (0, 2):
                raise ValueError
            shares, samples = rest or ({}, 0)
            return cls(
                int(step),
                str(label),
                tuple(float(v) for v in z),
                float(accuracy),
                shares={str(k): float(v) for k, v in shares.items()},
                samples=int(samples),
            )
        except (TypeError, ValueError, AttributeError):
            raise ValueError(
                f"{row!r} is not a logged point [step, label, z, accuracy, shares, samples]"
            ) from None

    def to_json(self) -> dict[str, Any]:
        """The form of an elicitation file's entry (a missing point as null)."""
        z = None if any(math.isnan(v) for v in self.z) else list(self.z)
        doc = {
            "z": z,
            "accuracy": self.accuracy,
            "setting": self.setting,
            "shares": dict(self.shares),
            "samples": self.samples,
        }
        if self.samples:
            doc["interval"] = list(self.interval)
        if not math.isnan(self.selection_accuracy):
            doc["selection_accuracy"] = self.selection_accuracy
        return doc

    @classmethod
    def from_json(cls, step: int, label: str, entry: Any) -> "Logged":
        """An elicitation file's entry: the object :meth:`to_json` writes, or the old list [z,
        accuracy, setting]."""
        if isinstance(entry, list) and len(entry) == 3:
            entry = {"z": entry[0], "accuracy": entry[1], "setting": entry[2]}
        if not isinstance(entry, dict):
            raise ValueError("not a reading {z, accuracy, setting, shares, samples}")
        z, acc, setting = entry.get("z"), entry.get("accuracy"), entry.get("setting", "")
        shares, samples = entry.get("shares", {}), entry.get("samples", 0)
        sel = entry.get("selection_accuracy", math.nan)
        if z is not None and not (isinstance(z, list) and all(_finite_unit(v) for v in z)):
            raise ValueError("z is not a list of numbers in [0, 1] (or null: nothing readable)")
        if not _finite_unit(acc) or not isinstance(setting, str):
            raise ValueError("accuracy is not a number in [0, 1], or setting is not text")
        if not (
            isinstance(shares, dict)
            and all(isinstance(k, str) and _finite_unit(v) for k, v in shares.items())
        ):
            raise ValueError("shares is not an object of numbers in [0, 1]")
        if not (isinstance(samples, int) and not isinstance(samples, bool) and samples >= 0):
            raise ValueError("samples is not a count")
        if not (_finite_unit(sel) or (isinstance(sel, float) and math.isnan(sel))):
            raise ValueError("selection_accuracy is not a number in [0, 1]")
        width = len(z) if z is not None else None
        return cls(
            step,
            label,
            tuple(z) if z is not None else (math.nan,) * (width or 0),
            float(acc),
            setting,
            dict(shares),
            samples,
            float(sel),
        )


def elicited(run: Path, protocol: str) -> list[Logged]:
    """A protocol's results as readings, in step order."""
    results = read_elicit(run, protocol)
    return [r for s in sorted(results) for r in results[s].values()]


def _trajectory(
    rows: Sequence[Logged], concepts: Sequence[str], protocol: str, seed: int, run: str
) -> Trajectory:
    width = len(concepts)
    z = np.array(
        [r.z if len(r.z) == width else (math.nan,) * width for r in rows], dtype=float
    ).reshape(len(rows), width)
    corners = sorted({k for r in rows for k in r.shares if k != UNREADABLE}) + [UNREADABLE] * any(
        r.shares for r in rows
    )
    extra = {
        f"share_{k}": tuple(_cell(r.shares.get(k)) if r.shares else "" for r in rows)
        for k in corners
    }
    if any(r.samples for r in rows):
        extra["samples"] = tuple(str(r.samples) if r.samples else "" for r in rows)
        extra["accuracy_lo"] = tuple(_cell(r.interval[0]) if r.samples else "" for r in rows)
        extra["accuracy_hi"] = tuple(_cell(r.interval[1]) if r.samples else "" for r in rows)
    if protocol != "naive":
        extra["setting"] = tuple(r.setting for r in rows)
        if any(not math.isnan(r.selection_accuracy) for r in rows):
            extra["selection_accuracy"] = tuple(_cell(r.selection_accuracy) for r in rows)
    return Trajectory(
        step=np.array([r.step for r in rows]),
        z=z,
        concepts=tuple(concepts),
        label=rows[0].label,
        protocol=protocol,
        seed=seed,
        run=run,
        accuracy=np.array([r.accuracy for r in rows]),
        extra=extra,
    )


def _cell(v: float | None) -> str:
    return "" if v is None or math.isnan(v) else repr(float(v))


def write(
    run: Path,
    *,
    concepts: Sequence[str],
    classes: Sequence[str],
    seed: int,
    naive: Sequence[Logged],
    meta: dict[str, Any],
) -> Path | None:
    """Rebuild RUN/trajectories.csv from the naive readings and the elicit files: naive first, then
    each protocol."""
    run = Path(run)
    by_protocol = {"naive": list(naive)} | {
        protocol: elicited(run, protocol) for protocol in protocols_logged(run)
    }
    found = trajectories(by_protocol, concepts=concepts, classes=classes, seed=seed, run=run.name)
    return write_csv(run / "trajectories.csv", found, meta=meta) if found else None


def trajectories(
    by_protocol: Mapping[str, Sequence[Logged]],
    *,
    concepts: Sequence[str],
    classes: Sequence[str],
    seed: int,
    run: str,
) -> list[Trajectory]:
    """Readings per protocol -> one trajectory per (protocol, class) that has any, protocols in the
    given order, classes in ``classes``' order, rows in the readings' order (the log's columns:
    empirical.training.runlog's module doc)."""
    found = []
    for protocol, readings in by_protocol.items():
        for label in classes:
            rows = [r for r in readings if r.label == label]
            if rows:
                found.append(_trajectory(rows, concepts, protocol, seed, run))
    return found


class Logs:
    """What a run has logged: evaluation points and metric records (saved inside last.pt)."""

    def __init__(self, points: list | None = None, metrics: list | None = None):
        self.points = [Logged.from_list(p) for p in points or []]  # saved as lists in last.pt
        self.metrics = metrics or []

    def state(self) -> dict:
        """The logs as saved inside last.pt."""
        return {"points": [p.to_list() for p in self.points], "metrics": self.metrics}

    def write(self, out: Path, cfg, meta: dict) -> None:
        """Rebuild trajectories.csv (with every elicited protocol) and metrics.jsonl, atomically
        (``cfg``: the run's TrainConfig)."""
        write(
            out,
            concepts=cfg.concepts,
            classes=cfg.data.classes,
            seed=cfg.seed,
            naive=self.points,
            meta=meta,
        )
        text = "".join(json.dumps(r) + "\n" for r in self.metrics)
        atomic_write(out / "metrics.jsonl", lambda fh: fh.write(text))
