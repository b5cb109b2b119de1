"""A sweep as a list of overrides: the grid expanded into runs, the post-hoc steps chained after
training, and what each run folder has finished (``RUN/stages.json``).

A grid is ``KEY=V1,V2,..`` items (every ``--set`` key is a grid key, seeds included); the runs are
their product, each an ordinary ``empirical.train`` run in ``DIR/runs/<key=value,...>``. Values of
tuple-valued keys (``channels``, ``eval_dense``, ...) are separated by ``;``:
``channels=16,32;32,64``. Every run of a sweep shares one probe per (concepts, resolution):
``DIR/probe/<concepts>-<res>px``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import itertools
import shlex
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from empirical.training.config import TrainConfig, make_config
from core import cli
from core.files import read_json, write_json
from fitting.estimators.model_fit import MIN_POINTS as FIT_MIN_POINTS

MAX_NAME = 240  # bytes of a run folder's name (most file systems allow 255)
PROBE = "probe/{concepts}-{resolution}px"  # inside the sweep folder
STATE = "stages.json"
# --then steps: the command each runs on a run folder ({run}), extra arguments appended
STEPS = {
    "elicit": ("empirical.elicit", "{run}"),
    "capability": ("fitting.capability", "{run}"),
    "capability-figure": ("figures.capability", "{run}"),
    "turn": ("fitting.turn", "{run}"),
    "fit": ("fitting.fit", "{run}/trajectories.csv"),
    "fit-figure": ("figures.fit", "{run}/fit"),
    "figure": ("figures.training", "{run}"),
    "forecast": ("fitting.forecast", "{run}"),
}
# what a step writes into the run folder unless its arguments name it (pipeline.sweep status reads
# it)
STEP_OUTPUTS = {"forecast": ("--json", "{run}/forecast.json")}


@dataclass(frozen=True)
class Step:
    """A post-hoc step chained after training (``--then 'elicit --every 3'``); ``text`` names it in
    stages.json."""

    text: str
    name: str
    args: tuple[str, ...]

    def argv(self, run: Path) -> list[str]:
        """The command line that runs this step on a run folder (no shell: arguments are never
        interpreted)."""
        return [sys.executable, "-m", STEPS[self.name][0], *self.command_args(run)]

    def command_args(self, run: Path, *, check: bool = False) -> list[str]:
        """The step's command's arguments on a run folder; ``check``: with ``--check-args``, which
        checks the step's flags and values and reads nothing."""
        target = STEPS[self.name][1]
        flag, default = STEP_OUTPUTS.get(self.name, (None, None))
        named = flag is None or any(a == flag or a.startswith(f"{flag}=") for a in self.args)
        return [
            *([cli.CHECK_ARGS] if check else []),
            target.format(run=run),
            *self.args,
            *([] if named else [flag, default.format(run=run)]),
        ]

    def check(self, run: Path) -> None:
        """Refuse, before any run trains, a step whose flags or values its command would refuse
        (ValueError with the command's own one-line message), its ``main`` run in this process."""
        module = importlib.import_module(STEPS[self.name][0])
        code, errors = cli.check_in_process(module.main, self.command_args(run, check=True))
        if code:
            raise ValueError(f"--then {self.text!r}: {error_line(errors) or f'exit code {code}'}")

    def check_runs(self, specs: Sequence["RunSpec"]) -> None:
        """Refuse, before any run trains, a step that no run of the sweep can feed: a fit needs at
        least FIT_MIN_POINTS checkpoints (ValueError naming the first run that logs fewer, and what
        to change)."""
        if self.name != "fit":
            return
        for spec in specs:
            logged = len(spec.cfg.eval_schedule())
            if logged < FIT_MIN_POINTS:
                raise ValueError(
                    f"--then {self.text!r}: a model fit needs at least {FIT_MIN_POINTS} "
                    "checkpoints with "
                    f"readable samples and run {spec.name!r} logs {logged} ({spec.cfg.preset}: "
                    "evals="
                    f"{spec.cfg.evals}); give a preset that logs more (tiny logs "
                    f"{len(TrainConfig().eval_schedule())}) or --set evals=N"
                )


def error_line(lines: Sequence[str]) -> str | None:
    """A command's own message in its error output: its last ``python -m ...: error: MESSAGE`` line
    (the message), else its last non-empty line; None when there is none."""
    tail = [ln.strip() for ln in lines if ln.strip()]
    errors = [ln.split(": error: ", 1)[1] for ln in tail if ": error: " in ln]
    return (errors or tail or [None])[-1]


def parse_step(text: str) -> Step:
    """``NAME [ARGS]`` for --then; ValueError naming the step and what is valid."""
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise ValueError(f"--then {text!r}: {err}") from None
    if not words or words[0] not in STEPS:
        valid = "; ".join(
            f"{k} (python -m {m} {t.replace('{run}', 'RUN')} ARGS)" for k, (m, t) in STEPS.items()
        )
        raise ValueError(
            f"--then {text!r}: unknown step {words[0] if words else ''!r}; valid: {valid}"
        )
    return Step(shlex.join(words), words[0], tuple(words[1:]))


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its folder name, its grid values, and the --set overrides that make its
    config."""

    name: str
    values: tuple[tuple[str, str], ...]
    overrides: tuple[str, ...]
    cfg: TrainConfig


def tuple_keys() -> set[str]:
    """Config fields that hold tuples (their grid values are separated by ';')."""
    hints = typing.get_type_hints(TrainConfig)
    return {
        f.name for f in dataclasses.fields(TrainConfig) if typing.get_origin(hints[f.name]) is tuple
    }


def parse_grid(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``KEY=V1,V2`` items -> [(key, [value text, ...])], keys unique and values non-empty."""
    grid, tuples = [], tuple_keys()
    keys = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("preset", "sep")]
    for item in items:
        key, text = cli.assignment(item, "--grid", "KEY=V1,V2,..")
        if key not in keys and not (key.startswith("sep.") and len(key) > 4):
            raise ValueError(
                f"--grid {item!r}: unknown key {key!r}; valid: sep.<concept>, {', '.join(keys)}"
            )
        sep = ";" if key in tuples or ";" in text else ","
        values = [v.strip() for v in text.split(sep)]
        if not all(values):
            raise ValueError(
                f"--grid {item!r}: an empty value; give {key}=V1{sep}V2{sep}.."
                + (f" (values of {key} are tuples, separated by ';')" if key in tuples else "")
            )
        if len(set(values)) < len(values):
            raise ValueError(f"--grid {item!r}: a value is repeated")
        if key in (k for k, _ in grid):
            raise ValueError(
                f"--grid {item!r}: {key} is already a grid key; give all its values in one --grid"
            )
        grid.append((key, values))
    return grid


def expand(
    preset: str, grid: Sequence[tuple[str, list[str]]], sets: Sequence[str], out: Path
) -> list[RunSpec]:
    """The runs of a sweep: the product of the grid's values, each with the --set overrides and the
    shared probe.

    Every config is built (and validated) here, before anything is submitted."""
    set_keys = [cli.assignment(item, "--set", "KEY=VALUE")[0] for item in sets]
    for key, _ in grid:
        if key in set_keys:
            raise ValueError(f"--grid {key}=..: {key} is also given by --set; give it once")
    if "probe" in (k for k, _ in grid):
        raise ValueError(
            "--grid probe=..: a sweep shares its probe; set it once with --set probe=FOLDER"
        )
    probe = [item for item in sets if item.startswith("probe=")]
    if probe and "{out}" in probe[-1]:
        raise ValueError(
            f"--set {probe[-1]!r}: a sweep shares one probe across its runs; {{out}} would train "
            "one per run"
        )
    shared = [] if probe else [f"probe={Path(out).resolve() / PROBE}"]
    runs, seen = [], {}
    for combo in itertools.product(*(values for _, values in grid)):
        values = tuple((key, value) for (key, _), value in zip(grid, combo))
        overrides = (*sets, *(f"{k}={v}" for k, v in values), *shared)
        try:
            cfg = make_config(preset, overrides)
        except ValueError as err:
            where = ", ".join(f"{k}={v}" for k, v in values)
            raise ValueError(f"run {where or '(the only one)'}: {err}") from None
        name = folder_name(values)
        key = tuple(sorted((k, repr(v)) for k, v in cfg.to_json().items()))
        if key in seen:
            raise ValueError(
                f"--grid: runs {seen[key]} and {name} have the same config (the same value "
                "written twice?)"
            )
        seen[key] = name
        runs.append(RunSpec(name, values, overrides, cfg))
    return runs


def folder_name(values: Sequence[tuple[str, str]]) -> str:
    """A run's folder name from its grid values (``key=value,...``); a name longer than most file
    systems allow (255 bytes) keeps its first 200 bytes and ends in a stable hash of the whole, so
    runs never collide."""
    name = ",".join(f"{k}={v.replace(',', '-').replace('/', '_')}" for k, v in values) or "run"
    if len(name.encode()) <= MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    return name.encode()[:200].decode(errors="ignore") + f"...{digest}"


# --- what a run folder has finished
# -------------------------------------------------------------------


def read_state(run: Path) -> dict:
    """``RUN/stages.json``: {"done": {stage: info}, "failed": {...} or absent}; empty when the file
    is absent."""
    path = Path(run) / STATE
    if not path.exists():
        return {"done": {}}
    doc = read_json(
        path,
        "sweep state (JSON)",
        "delete it to redo the run's steps (finished work is skipped anyway)",
    )
    if not isinstance(doc, dict) or not isinstance(doc.get("done"), dict):
        raise ValueError(
            f"{path}: not a sweep state file (expected an object with 'done'); delete it to redo "
            "the run's steps"
        )
    return doc


def mark(run: Path, stage: str, info: dict | None = None, *, failed: bool = False) -> None:
    """Record a stage as done (clearing any failure) or as failed."""
    doc = read_state(run)
    if failed:
        doc["failed"] = {"stage": stage, **(info or {})}
    else:
        doc["done"][stage] = info or {}
        doc.pop("failed", None)
    write_json(Path(run) / STATE, doc)


def pending(run: Path, steps: Sequence[Step]) -> list[str]:
    """The stages a run has still to do: train, then every --then step, in order."""
    done = read_state(run)["done"]
    return [s for s in ["train", *(step.text for step in steps)] if s not in done]
