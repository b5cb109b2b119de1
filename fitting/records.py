"""The saved records that join the analyses to the figures: one frozen, typed class per JSON file
(what a record is, and how reading checks a file: core.record).

An analysis (fitting) builds its record and writes it; a figure reads it back through the same
class:

    FitRecord(log=..., model=..., fits=rows, ...).write(out / FitRecord.FILE)     # fitting.fit
    rec = FitRecord.read(path)          # figures.fit: a folder holding fit.json, or the file itself
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.record import Record, _is, _label, _numbers
from core.sidecar import headline_class


@dataclass(frozen=True, kw_only=True)
class FitRecord(Record):
    """fit.json: the per-run model fits of one log."""

    FILE = "fit.json"
    WRITER = "python -m fitting.fit"
    ROWS = {
        "fits": {
            "run": "str",
            "seed": "int | None",
            "class": "str",
            "protocol": "str",
            "memorization_point": "list | dict | None",
        }
    }

    log: str
    model: str
    fits: list
    skipped: list = field(default_factory=list)
    lags: list = field(default_factory=list)
    stamp: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SimJointRecord(Record):
    """sim_joint.json: SIM and eq1 fitted jointly to every class of each run."""

    FILE = "sim_joint.json"
    WRITER = "python -m fitting.sim_joint"
    ROWS = {
        "runs": {
            "run": "str",
            "seed": "int | None",
            "concepts": "list",
            "classes": "list",
            "models": "dict",
            "curves": "dict",
        }
    }

    log: str
    protocol: str
    runs: list
    skipped: list = field(default_factory=list)
    stamp: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class TurnRecord(Record):
    """turn.json: a run's turns toward the held-out classes' corners."""

    FILE = "turn.json"
    WRITER = "python -m fitting.turn"
    ROWS = {
        "turns": {
            "class": "str",
            "protocol": "Any",
            "turn_step": "float | None",
            "turn_point": "list | None",
            "learned_step?": "float | None",
            "memorized?": "dict | None",
            "left_memorized_step?": "float | None",
        }
    }

    log: str
    min_dev: float | None = None
    min_angle: float | None = None
    turns: list = field()


@dataclass(frozen=True, kw_only=True)
class StudyRecord(Record):
    """study.json: learning, turn, behavior and capability per run and per level of a sweep."""

    FILE = "study.json"
    WRITER = "python -m fitting.study"
    ROWS = {
        "runs": {
            "seed": "int | None",
            "learning": "dict",
            "held_out": "dict",
            "run?": "str",
            "signal?": "dict",
        },
        "levels": {"signal": "dict", "runs?": "list"},
    }

    sweep: str
    by: str
    level: float

    @classmethod
    def _check_values(cls, doc: dict, where: str) -> None:
        """Each run's level (its ``by`` column) and signals are numbers: the figures place runs by
        them."""
        for i, row in enumerate(doc["runs"]):
            values = {doc["by"]: row.get(doc["by"])} | {
                f"signal.{k}": v for k, v in (row.get("signal") or {}).items()
            }
            for name, value in values.items():
                if value is not None and not _is(value, "float"):
                    raise ValueError(
                        f"{where}: runs[{i}].{name} is {type(value).__name__} {value!r:.40}, not "
                        "a number; "
                        f"write it again with {cls.WRITER}"
                    )

    persist: int
    held_out: list
    runs: list
    levels: list
    relations: dict = field(default_factory=dict)
    only: str = ""  # fitting.study --only: the runs studied, when not the whole sweep

    @property
    def headline(self) -> str:
        """The held-out class the study is about: 11, or 111 of three concepts
        (core.sidecar.headline_class)."""
        return headline_class((), {"held_out": list(self.held_out)})


@dataclass(frozen=True, kw_only=True)
class MaskingRecord(Record):
    """masking.json: a masking sweep's delays, bias and over-prompting rescue (paper Fig. 8-10)."""

    FILE = "masking.json"
    WRITER = "python -m fitting.masking"
    ROWS = {
        "runs": {
            "p": "float",
            "class": "str",
            "concepts": "Any",
            "path": "dict",
            "curves": "dict",
            "first_step": "dict",
            "masked_class": "Any",
            "steps_near_masked_class": "list",
            "left_masked_class": "float | None",
            "seed?": "int | None",
            "last_step?": "float | None",
        }
    }

    label: str = _label()
    persist: int = field()
    runs: list = field()
    levels: list | None = None


@dataclass(frozen=True, kw_only=True)
class ElicitationRecord(Record):
    """elicitation.json: one run's behavior and capability steps (paper Fig. 6)."""

    FILE = "elicitation.json"
    WRITER = "python -m fitting.capability"

    run: str
    label: str = _label()
    persist: int = field()
    protocols: list = field()
    capability_unbiased: Any = None
    capability_protocol: list = field(default_factory=list)
    first_step: dict = field()
    lag_behavior_minus_capability: Any = field()
    settled_step: dict | None = None
    settled_lag_behavior_minus_capability: Any = None
    curves: dict = field()
    intervals: Any = None
    control: Any = None


@dataclass(frozen=True, kw_only=True)
class ElicitationSummaryRecord(Record):
    """elicitation_summary.json: behavior and capability over runs, with each run's curves."""

    FILE = "elicitation_summary.json"
    WRITER = "python -m fitting.capability"
    ROWS = {"per_run": {"curves": "Any"}}

    runs: list
    label: str = _label()
    summary: dict = field()
    settled: dict = field()
    mean_curves: dict = field(default_factory=dict)
    per_run: list | None = None


@dataclass(frozen=True, kw_only=True)
class PredictionRecord(Record):
    """prediction.json: a pooled law fitted on some runs and scored on the held-out ones."""

    FILE = "prediction.json"
    WRITER = "python -m fitting.predict"

    model: str
    law_name: str | None = None
    label: str = _label()
    protocol: str = field()
    covariate: str = field()
    concepts: list = field()
    law: dict = field()
    train: dict = field()
    rmse_train: float = field()
    holdout: dict = field()
    log: list = field(default_factory=list)
    covariates: list = field(default_factory=list)
    stamp: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    per_run_fits: dict = field(default_factory=dict)

    @classmethod
    def _check_values(cls, doc: dict, where: str) -> None:
        """The law's coefficients and each run's covariates and rmse are numbers (or lists of them):
        figures.predict draws them."""
        _numbers(doc["law"].get("coefficients"), f"{where}: law.coefficients", cls)
        for part in ("train", "holdout"):
            for run, row in doc[part].items():
                for key in ("covariates", "rmse"):
                    if isinstance(row, dict):
                        _numbers(row.get(key), f"{where}: {part}[{run!r}].{key}", cls)


@dataclass(frozen=True, kw_only=True)
class LeaveOutRecord(Record):
    """leave_out.json: a pooled law against the baselines, one level of a covariate left out at a
    time."""

    FILE = "leave_out.json"
    WRITER = "python -m fitting.predict --leave-out"
    ROWS = {
        "levels": {
            "left_out": "str",
            "law": "float | None",
            "nearest?": "float | None",
            "mean?": "float | None",
            "interpolation?": "float | None",
            "ceiling?": "float | None",
            "seed_floor?": "float | None",
        }
    }

    column: str
    label: str = _label()
    protocol: str = field()
    model: str = ""
    law_name: str | None = None
    onset: bool = False
    compete: bool = False
    discrepancy: str | None = None
    covariate: str | None = None
    train_per_level: int | None = None
    draws: int | None = None
    levels: list = field()
    means: dict = field(default_factory=dict)
    differences: dict = field(default_factory=dict)
    stamp: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ForecastRecord(Record):
    """A run's forecast: the behavior step, its interval, P(by the horizon), and every method's."""

    FILE = "forecast.json"
    WRITER = "python -m fitting.forecast"
    ROWS = {
        "methods": {"method": "Any", "behavior_step": "Any", "interval": "Any", "p_compose": "Any"}
    }

    run: str
    at: float
    horizon: float
    observed_behavior_step: float | None
    behavior_step: float | None
    interval: list | None
    p_compose: float | None
    method: str
    methods: list
    label: str = field(default="11", metadata={"key": "class"})
    # what the pooled methods learned from (source, runs, kind), and each baseline's forecast at the
    # same cut
    pool: dict | None = None
    baselines: list | None = None
    # why there is no forecast (method "none"), in words
    reason: str | None = None

    def line(self) -> str:
        """The forecast in one line, as fitting.forecast prints it and pipeline.sweep status shows
        it."""
        c, read = f"class {self.label}", f"read to {self.at:,.0f}"
        if self.observed_behavior_step is not None:
            return f"{c} shown by naive prompting at {self.observed_behavior_step:,.0f} ({read})"
        if self.method == "none" or (self.behavior_step is None and self.p_compose is None):
            why = self.reason or (
                "no method could say"
                if self.method == "none"
                else f"{self.method} gave neither a step nor a chance"
            )
            return f"{c}: no forecast ({why}; {read})"
        chance = "?" if self.p_compose is None else f"{self.p_compose:.2f}"
        if self.behavior_step is None:
            return f"{c} not expected by {self.horizon:,.0f} (p {chance}; {self.method}, {read})"
        low, high = self.interval or (None, None)
        span = f"[{_step(low)}, {'beyond' if high is None else _step(high)}]"
        return (
            f"{c} composes ~ step {self.behavior_step:,.0f} {span}, p {chance} by "
            f"{self.horizon:,.0f} ({self.method}, {read})"
        )


@dataclass(frozen=True, kw_only=True)
class VerdictRecord(Record):
    """verdict.json: per law and event the errors, the margin, pass or fail, the coverage; the
    corner."""

    FILE = "verdict.json"
    WRITER = "python -m fitting.outside score"
    ROWS = {"runs": {"run": "Any", "seed": "Any", "sep": "Any"}}

    runs: list
    devices: list
    runs_per_setting: list
    probes: list
    events: dict
    corner: dict
    complete: bool
    summary: str
    # the registered predictions, per setting (figures.outside draws them)
    settings: list | None = None
    registered_before: dict | None = None
    # the registered speed exponents' sign, reported beside the verdict (not scored)
    b_sign: dict | None = None
    valid: bool = False
    invalid_because: list | None = None
    # errata.md item 11: the test scored again with the readers as mended (reported beside; not the
    # verdict)
    mended: dict | None = None


@dataclass(frozen=True, kw_only=True)
class ForecastVerdictRecord(Record):
    """verdict.json of the forecast's registered test: per causal cut the default's and each
    baseline's scores, the pooled coverage and Brier, every row (figures.forecast_verdict)."""

    FILE = "verdict.json"
    WRITER = "python -m fitting.forecast_registered score"
    ROWS = {"rows": {"run": "Any", "cut": "Any", "at": "Any", "already": "Any"}}

    registration_commit: str | None
    code_changed_since: list
    runs: dict
    n_valid: int
    valid: bool
    verdict: str
    parts: dict
    per_cut: dict
    pooled: dict
    hindsight: dict
    rows: list


def _step(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


RECORDS: tuple[type[Record], ...] = (
    FitRecord,
    SimJointRecord,
    TurnRecord,
    StudyRecord,
    MaskingRecord,
    ElicitationRecord,
    ElicitationSummaryRecord,
    PredictionRecord,
    LeaveOutRecord,
    ForecastRecord,
    VerdictRecord,
)  # (ForecastVerdictRecord's file is also named verdict.json: read where its writer puts it)
