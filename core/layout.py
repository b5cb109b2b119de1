"""The folders the parts hand each other, by the names of their files: what a run folder, a sweep
folder and a probe folder hold. Every reader finds these files by name, so a command's output must
never take one of these names (:func:`core.cli.output_file` refuses it, unless the command is the
one that writes it).

A saved record's file (``fit.json``, ``forecast.json``, ...) is named by its class
(``core.record.Record.FILE``) where the record is defined; the elicitation records of a run are
every ``.json`` in its ``elicit/`` folder.
"""

from __future__ import annotations

from pathlib import Path

# file name -> what it holds (as an error message names it)
FOLDER_FILES = {
    "config.json": "a run's configuration and reproducibility stamps",
    "trajectories.csv": "a trajectory log",
    "trajectories.meta.json": "a trajectory log's sidecar",
    "metrics.jsonl": "a run's metrics log",
    "metrics.jsonl.gz": "a kept run's metrics log",
    "overprompt.json": "a run's over-prompting record",
    "sweep.json": "a sweep's plan",
    "sweep.csv": "a sweep's table of runs",
    "covariates.csv": "a sweep's covariates table",
    "stages.json": "a run's finished sweep steps",
    "probe.json": "a probe's description",
    "probe.pt": "a probe's weights",
    "jobs.txt": "a job file (a registered test's or a batch's runs)",
}
ELICIT_FOLDER = "elicit"  # RUN/elicit/<protocol>.json: one elicitation protocol's record


def held(path: Path) -> str | None:
    """What a file at ``path`` would be read as by the package (None: nothing reads it by name)."""
    if path.parent.name == ELICIT_FOLDER and path.suffix == ".json":
        return "an elicitation protocol's record of the run"
    return FOLDER_FILES.get(path.name)
