"""The records of the event-time analyses that no figure reads (fitting.records explains a record;
the ones figures read live there): the registered outside-range test's registration
(fitting.outside), the forecasts' calibration and reference pool (fitting.forecast_calibration), the
forecast test's registration (fitting.forecast_registered; its verdict is
fitting.records.ForecastVerdictRecord, imported here for that command) and the ladder's rows
(fitting.ladder)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.record import Record, _label
from fitting.records import ForecastVerdictRecord  # noqa: F401  (read by figures; imported here too)


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
class LadderRecord(Record):
    """ladder.json: one row per training run (memorized as, turn, composed, capability, cost)."""

    FILE = "ladder.json"
    WRITER = "python -m fitting.ladder"
    ROWS = {
        "rows": {
            "run": "str",
            "final_step?": "float | None",
            "composed_step?": "float | None",
            "capability_step?": "float | None",
            "censored_at?": "float | None",
        }
    }

    label: str = _label()
    persist: int = field()
    rows: list = field()
