"""The records of the event-time analyses (fitting.records explains a record): the registered
outside-range test's registration (fitting.outside; its verdict, which figures.outside reads, is
fitting.records.VerdictRecord) and the forecasts' calibration (fitting.forecast_calibration)."""

from __future__ import annotations

from dataclasses import dataclass

from core.record import Record


@dataclass(frozen=True, kw_only=True)
class RegistrationRecord(Record):
    """preregistration.json: the pool, the laws' and baselines' predictions per setting, the rule
    and its margins."""

    FILE = "preregistration.json"
    WRITER = "python -m fitting.outside register"
    ROWS = {"settings": {"sep": "Any", "steps": "Any", "corner": "Any", "events": "Any"}}

    pool: dict
    calibration: dict
    covariate_check: dict
    settings: list
    coefficients: dict
    margins: dict
    n_boot: int
    n_boot_used: int
    seeds_per_setting: int
    rule: str
    can_fail: dict
    stamp: dict | None = None


@dataclass(frozen=True, kw_only=True)
class CalibrationRecord(Record):
    """calibration.json: every leave-one-out forecast and the scores per cut and method."""

    FILE = "calibration.json"
    WRITER = "python -m fitting.forecast_calibration"
    ROWS = {"forecasts": {"run": "Any", "cut": "Any", "at": "Any", "already": "Any"}}

    cuts: list
    scores: dict
    forecasts: list


@dataclass(frozen=True, kw_only=True)
class ReferencePoolRecord(Record):
    """fitting/reference/PRESET-RESpx-CONCEPTS.json: the events of a kind of run, the forecast's
    default pool."""

    FILE = ""  # named for its kind (fitting.analyses.reference_pool.name)
    WRITER = "python -m fitting.forecast_calibration RUN ... --reference FILE"
    ROWS = {
        "runs": {
            "run": "Any",
            "seed": "Any",
            "sep": "Any",
            "concept_steps": "Any",
            "behavior": "Any",
        }
    }

    preset: str | None
    resolution: int | None
    concepts: list
    runs: list
    label: str = "11"
    made_by: str = ""


@dataclass(frozen=True, kw_only=True)
class ForecastRegistrationRecord(Record):
    """The forecast's registered test (fitting.forecast_registered register): its rule, code, pool
    and jobs."""

    FILE = "preregistration.json"
    WRITER = "python -m fitting.forecast_registered register"
    ROWS = {}

    issue: int
    method: str
    code_sha256: dict
    pool: str
    cuts: list
    hindsight_cuts: list
    baselines: list
    metrics: list
    rule: str
    min_rows: int
    min_valid: int
    jobs: list
    queue: dict
    registered: str


@dataclass(frozen=True, kw_only=True)
class ForecastVerdictRecord(Record):
    """The forecast's registered verdict (fitting.forecast_registered score)."""

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
