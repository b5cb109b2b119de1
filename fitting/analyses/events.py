"""Event times of one training run: what the held-out class did and when, and when the training
classes learned each concept (the per-concept signal the model sees).

The held-out class's events are fitting.ladder's reading (fitting.study's): the corner it memorizes
first, the turn toward its own corner, the capability step (the best over-prompted setting reads it,
>= 0.5 held 2 checkpoints) and the behavior step (naive prompting does). Each time event is a
:class:`Event`: a step, or censored at the last checkpoint when the run ended first.

The concept step of concept c: the first checkpoint from which every training class (the classes
with at most one non-zero index: 00, 01, 10) reads within ``THRESHOLD`` of its own value of c, for
``HOLD`` checkpoints in a row (an unreadable class counts as wrong). Unlike the pixel signal of
empirical.data, it is measured on what the model learns, so it ranks the concepts the way the model
does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.trajectory import Trajectory, read_csv

THRESHOLD = 0.15  # a training class has learned concept c when |z_c - its value| <= THRESHOLD ...
HOLD = 2  # ... at this many checkpoints in a row
TIME_EVENTS = ("turn", "capability", "behavior")  # the held-out class's events that are a step


@dataclass(frozen=True)
class Event:
    """A step, or (step None) not by ``censored_at``, the run's last checkpoint."""

    step: float | None
    censored_at: float

    @property
    def value(self) -> float:
        """The step, or the bound it is known to exceed (a step of 0 is a step, not a missing
        one)."""
        return self.step if self.step is not None else self.censored_at

    def to_json(self) -> dict:
        return {
            "step": self.step,
            "censored_at": None if self.step is not None else self.censored_at,
        }


def concept_steps(trajectories: list[Trajectory]) -> dict[str, float | None]:
    """Concept -> the step the training classes learned it (module docstring), None if not by the
    last checkpoint."""
    train = [
        t
        for t in trajectories
        if t.protocol == "naive" and sum(ch != "0" for ch in t.label) <= 1 and t.z.shape[1]
    ]
    if not train:
        raise ValueError("no naive trajectory of a training class with concept coordinates")
    steps = np.unique(np.concatenate([t.step for t in train]))
    out: dict[str, float | None] = {}
    for d, concept in enumerate(train[0].concepts):
        ok = np.ones(steps.size, bool)
        for t in train:
            error = np.ones(steps.size)
            idx = np.searchsorted(steps, t.step)
            error[idx] = np.abs(t.z[:, d] - float(t.label[d] != "0"))
            ok &= np.nan_to_num(error, nan=1.0) <= THRESHOLD
            missing = np.ones(steps.size, bool)
            missing[idx] = False
            ok &= ~missing
        held = np.convolve(ok.astype(int), np.ones(HOLD, int), mode="valid") == HOLD
        first = np.flatnonzero(held)
        out[concept] = float(steps[first[0]]) if first.size else None
    return out


def run_facts(
    run: str | Path, label: str = "11", *, own: bool = False, log: list[Trajectory] | None = None
) -> dict:
    """What a run is, not what it did: its setting, seed and length, whether its log reaches that
    length (the naive readings of ``label`` end there), the probe that read it, the code that began
    it and the arithmetic of each stretch. No event is read: a registered test's runs can be checked
    with it before they are scored.

    ``own``: a run of the user's own model may lack config.json (an examples/ walk's folder); its
    facts are then those of its log alone (no setting, seed or length; the concepts its log names).
    ``log``: the run's trajectories, where the caller has read them."""
    from core.run_config import read_run_config

    run = Path(run)
    cfg = read_run_config(run, required=not own).get("train", {})
    log = read_csv(run / "trajectories.csv") if log is None else log
    held = [t for t in log if t.protocol == "naive" and t.label == label]
    if not held:
        have = ", ".join(sorted({t.label for t in log if t.protocol == "naive"})) or "none"
        raise ValueError(f"{run}: no naive trajectory of class {label!r}; the log has {have}")
    end = float(held[0].step[-1])
    stamps = doc_stamps(run) if cfg else []
    return {
        "run": str(run),
        "seed": cfg.get("seed"),
        "sep": dict(cfg.get("sep", {})),
        "steps": cfg.get("steps"),
        "preset": cfg.get("preset"),
        "resolution": cfg.get("resolution"),
        "concepts": list(cfg.get("concepts") or sorted(cfg.get("sep") or {}) or held[0].concepts),
        "finished": cfg.get("steps") is not None and end >= cfg["steps"],
        "probe_hash": _probe_hash(run),
        "first_commit": (stamps or [{}])[0].get("commit"),
        "device": sorted({f"{st.get('device')} {st.get('precision', 'fp32')}" for st in stamps}),
    }


def run_events(
    run: str | Path, label: str = "11", *, as_registered: bool = False, own: bool = False
) -> dict:
    """One run's events: its facts (:func:`run_facts`; ``own``: a run of the user's own model, which
    may lack config.json), the held-out class's corner and time events, the concept steps;
    ``as_registered``: read by the readers as issue #57's test registered them (its verdict's
    reading; :func:`fitting.analyses.study_runs.held_out`)."""
    from fitting.analyses.study_runs import held_out  # the ladder's reading of the held-out class

    run = Path(run)
    log = read_csv(run / "trajectories.csv")
    facts = run_facts(run, label, own=own, log=log)
    r = held_out(log, label, as_registered=as_registered)
    end = float(r["last_step"])
    concepts = {k: Event(v, end) for k, v in concept_steps(log).items()}
    cap_end = r["capability_censored_at"]
    return {
        **facts,
        "corner": (r["memorized"] or {}).get("corner"),
        "memorized_step": (r["memorized"] or {}).get("step"),
        # no turn found: censored where the run never composed, else missing (it went straight, or
        # the turn was not resolved), never read as "later"
        "turn": Event(r["turn_step"], end)
        if r["turn_step"] is not None or r["behavior_step"] is None
        else None,
        "capability": (
            Event(r["capability_step"], float(cap_end if cap_end is not None else end))
            if r["capability_step"] is not None or cap_end is not None
            else None
        ),
        "behavior": Event(r["behavior_step"], float(r["behavior_censored_at"] or end)),
        "concept_steps": concepts,
    }


def doc_stamps(run: Path) -> list[dict]:
    """The run's reproducibility stamps (config.json), one per start: the first says which code
    began it."""
    from core.files import read_json

    stamps = read_json(run / "config.json", "config").get("stamps")
    return stamps if isinstance(stamps, list) else []


def _probe_hash(run: Path) -> str | None:
    from core.files import read_json

    meta = run / "trajectories.meta.json"
    if not meta.exists():
        return None
    doc = read_json(meta, "trajectory metadata")
    return doc.get("probe_hash") if isinstance(doc, dict) else None
