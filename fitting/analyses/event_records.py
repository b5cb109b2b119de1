"""The records of the event-time analyses (core.records explains a record): the registered outside-range test's
registration and verdict (fitting.outside), a run's forecast (fitting.forecast) and the forecasts' calibration
(fitting.forecast_calibration)."""

from __future__ import annotations

from dataclasses import dataclass

from core.record import Record


@dataclass(frozen=True, kw_only=True)
class RegistrationRecord(Record):
    """preregistration.json: the pool, the laws' and baselines' predictions per setting, the rule and its margins."""

    FILE = "preregistration.json"
    WRITER = "python -m fitting.outside register"
    ROWS = {"settings": ("sep", "steps", "corner", "events")}

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
class VerdictRecord(Record):
    """verdict.json: per law and event the errors, the margin, pass or fail, the coverage; the corner."""

    FILE = "verdict.json"
    WRITER = "python -m fitting.outside score"
    ROWS = {"runs": ("run", "seed", "sep")}

    runs: list
    devices: list
    runs_per_setting: list
    probes: list
    events: dict
    corner: dict
    complete: bool
    summary: str
    registered_before: dict | None = None
    valid: bool = False
    invalid_because: list | None = None


@dataclass(frozen=True, kw_only=True)
class CalibrationRecord(Record):
    """calibration.json: every leave-one-out forecast and the scores per cut and method."""

    FILE = "calibration.json"
    WRITER = "python -m fitting.forecast_calibration"
    ROWS = {"forecasts": ("run", "cut", "at", "already")}

    cuts: list
    scores: dict
    forecasts: list
