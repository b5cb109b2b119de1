"""The records of the event-time analyses (core.records explains a record): the registered outside-range test's
registration (fitting.outside; its verdict, which figures.outside reads, is core.records.VerdictRecord) and the
forecasts' calibration (fitting.forecast_calibration)."""

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
class CalibrationRecord(Record):
    """calibration.json: every leave-one-out forecast and the scores per cut and method."""

    FILE = "calibration.json"
    WRITER = "python -m fitting.forecast_calibration"
    ROWS = {"forecasts": ("run", "cut", "at", "already")}

    cuts: list
    scores: dict
    forecasts: list
