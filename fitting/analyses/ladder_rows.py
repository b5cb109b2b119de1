"""The composition ladder's rows: one per training run (the fields: python -m fitting.ladder's
help)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator
from typing import Sequence

import numpy as np

from fitting.analyses.study_runs import held_out
from core.files import json_line, plain_or_gz, text_lines
from core.run_config import read_run_config
from core.trajectory import read_csv

ALWAYS = ("seed", "sep")  # settings every row shows, varied or not


def _metrics(run: Path) -> Iterator[dict]:
    """The records of a run's metrics log, one at a time (a log of millions of lines never held)."""
    path = plain_or_gz(run / "metrics.jsonl")
    if not path.exists():
        raise ValueError(
            f"{run}: no metrics.jsonl (nor .gz; is it a folder written by python -m "
            "empirical.train?)"
        )
    for row, line in enumerate(text_lines(path, "metrics log"), start=1):
        if not line.strip():
            continue
        yield json_line(line, path, row)


def cost(run: Path, doc: dict) -> dict:
    """Training steps, steps/s of training, minutes of training plus evaluation, and where it ran
    (``doc``: the run's config.json)."""
    last, evaluation = None, 0.0
    for r in _metrics(run):
        if not isinstance(r, dict):
            continue
        if r.get("kind") == "train" and "wall_s" in r:
            last = r
        elif r.get("kind") == "eval":
            evaluation += r.get("eval_s", 0.0)
    wall = last["wall_s"] if last else math.nan
    steps = last["step"] if last else 0
    stamps = doc.get("stamps") or [{}]
    return {
        "steps": steps,
        "planned_steps": doc["train"].get("steps", 0),
        "steps_per_s": steps / wall if wall > 0 else None,
        "minutes": (wall + evaluation) / 60 if last else None,
        "eval_minutes": evaluation / 60,
        "device": stamps[-1].get("device"),
        "precision": stamps[-1].get("precision"),
    }


def row(run: Path, label: str, *, as_registered: bool = False) -> dict:
    """The ladder row of one run folder (see python -m fitting.ladder --help); ``as_registered``: as
    :func:`fitting.analyses.study_runs.held_out`'s."""
    doc = read_run_config(run)
    trajectories = read_csv(run / "trajectories.csv")
    naive = [t for t in trajectories if t.protocol == "naive"]
    held = next((t for t in naive if t.label == label), None)
    if held is None:
        have = sorted({t.label for t in naive})
        raise ValueError(
            f"{run}: no naive trajectory of class {label!r}; the log has {', '.join(have)}"
        )
    reading = held_out(trajectories, label, as_registered=as_registered)
    best = int(np.nanargmax(held.accuracy))
    return {
        "run": str(run),
        "config": doc["train"],
        "probe": (doc.get("probe") or {}).get("hash"),  # which instrument read the run (issue #57)
        "parameters": doc.get("parameters"),
        "cost": cost(run, doc),
        "memorized": reading["memorized"],  # fitting.study's reading of the held-out class has it
        "turn": {"step": reading["turn_step"], "ci": reading["turn_ci"]},
        "best": {"accuracy": float(held.accuracy[best]), "step": float(held.step[best])},
        "composed_step": reading["behavior_step"],
        "censored_at": reading["behavior_censored_at"],
        "capability_step": reading["capability_step"],
        "capability_censored_at": reading["capability_censored_at"],
        "final": reading["final_shares"],
        "final_step": reading["last_step"],
    }


def varying(rows: Sequence[dict]) -> list[str]:
    """Config keys whose values differ between rows, with ALWAYS first (device and probe never
    count). A key that older runs lack (added to the config since) counts only where the runs that
    have it differ in it."""
    keys = sorted({k for r in rows for k in r["config"]} - {"device", "probe", "preset", *ALWAYS})
    differ = [
        k
        for k in keys
        if len({json.dumps(r["config"][k], sort_keys=True) for r in rows if k in r["config"]}) > 1
    ]
    return [*ALWAYS, *differ]


def _setting(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:g}" for k, v in value.items())
    if isinstance(value, list):
        return "(" + ", ".join(map(str, value)) + ")"
    return str(value)


def _step(value) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _when(step, censored_at) -> str:
    """A sustained-accuracy step, or "no (to the last step)" when censored."""
    return _step(step) if step is not None else f"no (to {_step(censored_at)})"


def table(rows: Sequence[dict]) -> str:
    """The rows as a markdown table."""
    keys = varying(rows)
    elicited = any(r["config"].get("protocols") for r in rows)
    head = [
        "run",
        *keys,
        "device",
        "steps/s",
        "min",
        "memorized as",
        "turn",
        "best naive",
        "composed",
        *(["capability"] if elicited else []),
        "final shares",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        c, m, turn = r["cost"], r["memorized"], r["turn"]
        mem = "-" if m is None else f"{m['corner']} ({m['share']:.2f} at {m['step']:,.0f})"
        composed = _when(r["composed_step"], r["censored_at"])
        final = ", ".join(
            f"{k.replace('unreadable', 'none')} {v:.2f}"
            for k, v in r["final"].items()
            if v >= 0.005
        )
        cells = [
            Path(r["run"]).name,
            *(_setting(r["config"].get(k)) for k in keys),
            str(c["device"] or "-"),
            "-" if c["steps_per_s"] is None else f"{c['steps_per_s']:.2f}",
            "-" if c["minutes"] is None else f"{c['minutes']:.0f}",
            mem,
            "none" if turn["step"] is None else _step(turn["step"]),
            f"{r['best']['accuracy']:.2f} at {r['best']['step']:,.0f}",
            composed,
            *(
                [
                    _when(r["capability_step"], r["capability_censored_at"])
                    if r["config"].get("protocols")
                    else "-"
                ]
                if elicited
                else []
            ),
            final,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
