"""Whether the registered test's runs so far are as registered, read blind (python -m
fitting.outside check).

Per run: its setting, seed and length, whether its log reaches that length, the probe that read it,
the arithmetic of each stretch and whether the code that began it descends from the registration's
commit; then every reason the verdict's validity would give (fitting.analyses.outside_score.defects)
but the count of runs, and each run not finished. No event of a run is read, and an unreadable log
is refused without its reader's message (which could quote a reading): a run that is not as
registered can be trained again blind to what it did. It says nothing of whether ``score`` will read
the runs (their share columns, metrics.jsonl).
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Sequence

from core.run_config import read_run_config
from fitting.analyses.event_records import RegistrationRecord
from fitting.analyses.events import run_facts
from fitting.analyses.outside_score import defects, registered_before, tally
from fitting.estimators.event_laws import CONCEPTS


def blind_facts(run: Path) -> dict:
    """:func:`run_facts` of ``run``, checked for what the tally needs; ValueError naming the file,
    never a reading."""
    run = Path(run)
    if not (run / "trajectories.csv").is_file():
        raise ValueError(f"{run}: no trajectories.csv (not a training run's folder?)")
    doc = read_run_config(run)  # its errors name the file and quote no reading
    sep = doc["train"].get("sep")
    if not isinstance(sep, dict) or not all(isinstance(sep.get(c), numbers.Real) for c in CONCEPTS):
        raise ValueError(
            f"{run}: config.json's train.sep is {sep!r}; it needs a number for each of "
            f"{', '.join(CONCEPTS)}"
        )
    try:
        facts = run_facts(run)
    except ValueError as err:
        if str(err).startswith(f"{run}: no naive trajectory"):
            raise
        raise ValueError(
            f"{run}: its log (trajectories.csv, trajectories.meta.json) cannot be read; the "
            "reader's message is "
            "withheld, as it may quote a reading: read it after scoring"
        ) from None
    return facts


def line(f: dict, after: bool | None) -> str:
    """One run as the check lists it."""
    sep = ", ".join(f"Δ{c} {v:g}" for c, v in f["sep"].items())
    steps = "no length" if f["steps"] is None else f"{f['steps']:,} steps"
    return (
        f"{f['run']}: {sep}, seed {f['seed']}, {steps}, "
        f"{'finished' if f['finished'] else 'NOT FINISHED'}, probe {f['probe_hash']}, "
        f"{' + '.join(f['device']) or 'no stamp'}, begun after the registration: "
        f"{'yes' if after else 'NO'}"
    )


def check(registration: Path, runs: Sequence[Path]) -> int:
    """Print each run and why, as far as the runs go, they are not the registered test's; 0 when
    there is no reason, 1 when there is one."""
    reg = RegistrationRecord.read(registration).to_json()
    facts = [blind_facts(r) for r in runs]
    counts = tally(reg, facts)
    before = registered_before(str(registration), [f["first_commit"] for f in facts])
    for f, after in zip(facts, before.get("after") or [None] * len(facts)):
        print(line(f, after))
    why = defects({**counts, "runs": facts, "registered_before": before}, reg)
    why += [f"{f['run']} has not finished" for f in facts if not f["finished"]]
    print(
        f"runs per setting {counts['runs_per_setting']} of {reg.get('seeds_per_setting', 8)}"
        + ("" if counts["complete"] else " (not complete: no verdict yet)")
    )
    print("as registered so far" if not why else "NOT AS REGISTERED: " + "; ".join(why))
    return 1 if why else 0
