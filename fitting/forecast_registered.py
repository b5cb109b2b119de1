"""The forecast's registered test (issue #73): the default forecast against the honest baselines on
new runs.

  python -m fitting.forecast_registered register FOLDER
      write FOLDER/preregistration.json (commit it before any run of FOLDER/jobs.txt trains)
  python -m fitting.forecast_registered score FOLDER [--out FILE]
      score the runs kept in FOLDER/runs once (verdict.json)

The registration fixes, before any run trains: the method (fitting.forecast with no flag: the
`anchor` method on the shipped reference pool), the SHA-256 of the code and of the pool file it
learns from, the cuts, the metrics, the baselines, the decision rule (RULE below) and the jobs.
Scoring reads each kept run only through fitting.forecast's own path: the default pool, the run's
log cut at each cut step, and the baselines at the same cut.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from core import cli
from core.files import read_json
from core.trajectory import read_csv
from fitting import forecast as fc
from fitting.analyses.event_records import ForecastRegistrationRecord, ForecastVerdictRecord
from fitting.analyses.events import run_events, run_facts
from fitting.analyses.outside_score import registering_commit
from fitting.forecast_calibration import _score, cut_row, cut_steps

CAUSAL = ("2000", "3000", "memorized-live", "capability")
HINDSIGHT = (
    0.6,
    0.85,
)  # the check: cuts at these shares of a composing run's behavior step
SCORED_BASELINES = ("blind", "setting", "logistic", "lc-naive", "lc-capability")
MIN_ROWS = 4  # a cut with fewer forecast rows is reported, not scored
MIN_VALID = 10
CODE = (
    "fitting/forecast.py",
    "fitting/forecast_calibration.py",
    "fitting/forecast_registered.py",
    "fitting/analyses/forecast_methods.py",
    "fitting/analyses/forecast_anchor.py",
    "fitting/analyses/forecast_baselines.py",
    "fitting/analyses/reference_pool.py",
    "fitting/analyses/events.py",
    "fitting/estimators/lc_ensemble.py",
    "fitting/reference/small-24px-color-size.json",
)
ROOT = Path(__file__).resolve().parents[1]
RULE = (
    "PASS if all three hold on the valid runs (at least 10 of the 12 registered), else FAIL: "
    "(a) at each causal cut (2000, 3000, memorized-live, capability) with at least 4 forecast "
    "rows, the default "
    "forecast's median absolute error of the behavior step is strictly below that of each "
    "baseline (blind, "
    "setting, logistic, lc-naive, lc-capability), each compared on the rows where that baseline "
    "gives a forecast "
    "(the default's own rows without a forecast count as a forecast of the horizon); "
    "(b) the share of the default's 80% intervals that hold the behavior step, over every "
    "causal-cut row pooled, "
    "is within [0.70, 0.90]; "
    "(c) the default's Brier score of P(composes by the horizon), over every causal-cut row "
    "pooled, is below the "
    "base rate's. Errors, coverage and Brier as fitting.forecast_calibration scores them (a run "
    "that never "
    "composed counts at its last step, its error a lower bound)."
)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def register(folder: Path) -> dict:
    jobs = (folder / "jobs.txt").read_text().splitlines()
    return {
        "issue": 73,
        "method": "anchor (fitting.forecast with no flag: the default pool, the anchor method)",
        "code_sha256": {p: sha(ROOT / p) for p in CODE},
        "pool": "fitting/reference/small-24px-color-size.json",
        "cuts": list(CAUSAL),
        "hindsight_cuts": list(HINDSIGHT),
        "baselines": list(SCORED_BASELINES) + ["base-rate"],
        "metrics": ["median absolute error", "80% coverage", "Brier of P(composes by the horizon)"],
        "rule": RULE,
        "min_rows": MIN_ROWS,
        "min_valid": MIN_VALID,
        "jobs": [line for line in jobs if line and not line.startswith("#")],
        "queue": {
            "precision": "bf16",
            "probe_hash": "16e18d564fed732e",
            "run_minutes": 80,
            "device": "cpu, 2 threads",
        },
        "registered": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def descends(commit: str | None, ancestor: str) -> bool:
    """Whether ``commit`` is ``ancestor`` or comes after it (git); False without a commit."""
    if not commit:
        return False
    r = subprocess.run(
        ["git", "merge-base", "--is-ancestor", ancestor, commit], cwd=ROOT, capture_output=True
    )
    return r.returncode == 0


def validity(run: Path, reg: dict, commit: str | None) -> list[str]:
    facts, q, bad = run_facts(run), reg["queue"], []
    if not facts["finished"]:
        bad.append("not finished")
    if facts["probe_hash"] != q["probe_hash"]:
        bad.append(f"probe {facts['probe_hash']}")
    if commit is None or not descends(facts["first_commit"], commit):
        bad.append("first stamp not after the registration")
    if {d.split()[-1] for d in facts["device"]} != {q["precision"]}:
        bad.append(f"arithmetic {facts['device']}")
    return bad


def rows_for(run: Path) -> list[dict]:
    """The run's forecast rows at every cut, as fitting.forecast with no flag makes them (the
    default pool)."""
    pool, info = fc.default_pool(run)
    e = run_events(run)
    trajectories = read_csv(run / "trajectories.csv")
    end, truth = e["behavior"].censored_at, e["behavior"].step
    cuts = {k: v for k, v in cut_steps(e, trajectories).items() if k in CAUSAL}
    if truth is not None:
        cuts |= {f"{int(f * 100)}%": f * truth for f in HINDSIGHT}
    out = []
    for name, at in cuts.items():
        if at is None or at >= end:
            continue
        doc = fc.forecast(run, at, None, pool, "11", info)
        if doc["observed_behavior_step"] is not None:
            out.append({"run": str(run), "cut": name, "at": at, "already": True})
            continue
        default = {
            "method": "default",
            "behavior_step": doc["behavior_step"],
            "interval": doc["interval"],
            "p_compose": doc["p_compose"],
            "note": doc["method"],
        }
        if default["behavior_step"] is None and default["p_compose"] is None:
            default["behavior_step"] = doc["horizon"]  # no forecast counts as the horizon (RULE)
        out.append(
            cut_row(run, name, at, truth, end, [default, *doc["methods"], *doc["baselines"]])
        )
    return out


def _paired(rows: list[dict], baseline: str) -> dict:
    mine = [
        r
        for r in rows
        if any(
            f["method"] == baseline
            and (f["behavior_step"] is not None or f["p_compose"] is not None)
            for f in r["forecasts"]
        )
    ]
    d, b = _score(mine, "default"), _score(mine, baseline)
    beats = d["mae"] is not None and b["mae"] is not None and d["mae"] < b["mae"]
    return {"rows": len(mine), "default_mae": d["mae"], "baseline_mae": b["mae"], "beats": beats}


def verdict(rows: list[dict], n_valid: int) -> dict:
    causal = [r for r in rows if r["cut"] in CAUSAL and not r["already"]]
    per_cut, ok_a = {}, True
    for cut in CAUSAL:
        mine = [r for r in causal if r["cut"] == cut]
        entry = {"rows": len(mine), "scored": len(mine) >= MIN_ROWS}
        if mine:
            entry["default"] = _score(mine, "default")
            entry["baselines"] = {b: _paired(mine, b) for b in SCORED_BASELINES}
        if entry["scored"]:
            ok_a &= all(v["beats"] for v in entry["baselines"].values() if v["rows"])
        per_cut[cut] = entry
    pooled = _score(causal, "default") if causal else None
    base = _score(causal, "base-rate") if causal else None
    ok_b = (
        pooled is not None and pooled["coverage"] is not None and 0.7 <= pooled["coverage"] <= 0.9
    )
    ok_c = (
        pooled is not None
        and pooled["brier"] is not None
        and base["brier"] is not None
        and pooled["brier"] < base["brier"]
    )
    hind = [r for r in rows if r["cut"].endswith("%") and not r["already"]]
    inside = [_score([r], "default")["coverage"] for r in hind]
    confident_no = sum(
        1
        for r in hind
        for f in r["forecasts"][:1]
        if f["behavior_step"] is None and (f["p_compose"] or 0) < 0.2
    )
    valid = n_valid >= MIN_VALID
    return {
        "valid": valid,
        "verdict": ("PASS" if ok_a and ok_b and ok_c else "FAIL") if valid else "INVALID",
        "parts": {"a_beats_baselines": ok_a, "b_coverage": ok_b, "c_brier": ok_c},
        "per_cut": per_cut,
        "pooled": {"default": pooled, "base_rate": base},
        "hindsight": {
            "rows": len(hind),
            "inside_80": int(np.nansum([x for x in inside if x is not None])),
            "not_expected_below_0.2": confident_no,
        },
    }


def score(folder: Path) -> dict:
    reg = read_json(folder / "preregistration.json", "registration")
    added = registering_commit(folder / "preregistration.json")
    commit = None if added is None else added[0]
    changed = [
        p for p, h in reg["code_sha256"].items() if (ROOT / p).exists() and sha(ROOT / p) != h
    ]
    runs = sorted(p for p in (folder / "runs").iterdir() if (p / "config.json").exists())
    rows, checks = [], {}
    for run in runs:
        bad = validity(run, reg, commit)
        checks[run.name] = bad
        if not bad:
            rows += rows_for(run)
    n_valid = sum(not b for b in checks.values())
    return {
        "registration_commit": commit,
        "code_changed_since": changed,
        "runs": checks,
        "n_valid": n_valid,
        **verdict(rows, n_valid),
        "rows": rows,
    }


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument("action", choices=("register", "score"))
    parser.add_argument(
        "folder", type=Path, help="the test's folder (jobs.txt, preregistration.json)"
    )
    parser.add_argument("--out", type=Path, help="the verdict's file (default FOLDER/verdict.json)")
    args = parser.parse_args(argv)
    if not (args.folder / "jobs.txt").is_file():
        raise cli.UsageError(f"{args.folder}: no jobs.txt (the registered runs, one a line)")
    if args.action == "register":
        out = cli.output_file(
            args.folder / "preregistration.json", "register", owns=("preregistration.json",)
        )
        if cli.checking(args):
            return 0
        ForecastRegistrationRecord(**register(args.folder)).write(out)
        print(f"wrote {out}: commit it before any run trains")
        return 0
    out = cli.output_file(args.out or args.folder / "verdict.json", "--out", owns=("verdict.json",))
    if out.resolve() == (args.folder / "preregistration.json").resolve():
        raise cli.UsageError("--out: that is the registration; the verdict goes beside it")
    if cli.checking(args):
        return 0
    doc = score(args.folder)
    ForecastVerdictRecord(**doc).write(out)
    print(f"{doc['verdict']} ({doc['n_valid']} valid runs): {doc['parts']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
