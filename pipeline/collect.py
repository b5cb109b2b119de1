"""Runs as data: a sweep's runs (or any run folders) joined with their covariates, as one table.

  python -m pipeline.sweep collect DIR [--partial]

writes DIR/sweep.csv, a trajectory log (docs: core/trajectory.py) with one row per run x class x
protocol x checkpoint and the run's covariates as extra columns, and DIR/covariates.csv, one row per
run: ``run``, ``seed``, every config value that varies across the runs, each concept's separation
``sep_<concept>`` and measured concept signal ``signal_<concept>`` (the pixel MSE between the
classes that differ only in that concept, empirical.images.dgp.concept_signal), and ``mask_p`` where
any run masks prompts. A ``<name>_<concept>`` column belongs to that concept (fitting.predict reads
it so). Unfinished runs are left out unless --partial.

From Python (pandas, an optional extra: pip install 'concept-dynamics[pandas]'):

    from pipeline.collect import load_runs, read_metrics
    df = load_runs(["runs/sweep"])          # a sweep folder, or run folders
    df[df["class"] == "11"]                  # class labels stay strings ("01", not 1)
    read_metrics("runs/sweep/runs/seed=0,sep.color=0.3")   # training records: loss, gamma, images/s

Only numpy and the standard library are needed, except by the pandas functions.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from empirical.training.config import TrainConfig, saved_config
from empirical.images.dgp import DataConfig, concept_signal
from core import cli
from core.files import atomic_write, json_line, plain_or_gz, read_text
from core.trajectory import UNREADABLE, Trajectory, read_csv, write_csv

# config values that never describe a run's covariates
NOT_COVARIATES = (
    "seed",
    "sep",
    "probe",
    "device",
)


def run_folders(root: str | Path) -> list[Path]:
    """The run folders of a sweep folder (``DIR/runs/*``), sorted."""
    root = Path(root)
    if not (root / "runs").is_dir():
        raise ValueError(
            f"{root}: not a sweep folder (no runs/ inside); give the --out of python -m "
            "pipeline.sweep"
        )
    return sorted(p for p in (root / "runs").iterdir() if p.is_dir())


def expand(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders from a mix of run folders (with config.json) and sweep folders (with runs/)."""
    out = []
    for path in map(Path, paths):
        if (path / "config.json").is_file():
            out.append(path)
        elif (path / "runs").is_dir():
            out += [p for p in run_folders(path) if (p / "config.json").is_file()]
        else:
            raise ValueError(
                f"{path}: neither a run folder (config.json) nor a sweep folder (runs/)"
            )
    if not out:
        raise ValueError(f"no run folders in {', '.join(map(str, paths)) or '(nothing given)'}")
    return out


def last_step(run: Path) -> int | None:
    """The last step a run's metrics.jsonl records (None before the first record)."""
    path = plain_or_gz(Path(run) / "metrics.jsonl")
    if not path.exists():
        return None
    for line in reversed(read_text(path, "metrics log").splitlines()):
        try:
            return int(json_line(line, path, 0)["step"])
        except (ValueError, KeyError, TypeError):
            continue
    return None


@functools.lru_cache(maxsize=256)
def _signal(
    concepts: tuple[str, ...], sep: tuple[tuple[str, float], ...], resolution: int
) -> tuple[tuple[str, float], ...]:
    data = DataConfig(concepts, dict(sep), resolution=resolution)
    return tuple((c, v["mse"]) for c, v in concept_signal(data).items())


@dataclass(frozen=True)
class RunData:
    """A run folder read: its id, config, trajectories, and whether training finished."""

    path: Path
    name: str
    cfg: TrainConfig
    trajectories: tuple[Trajectory, ...]

    @property
    def finished(self) -> bool:
        """Training reached its last step (a naive evaluation at ``steps`` is logged)."""
        return any(
            t.protocol == "naive" and int(t.step[-1]) == self.cfg.steps for t in self.trajectories
        )

    def signal(self) -> dict[str, float]:
        """Each concept's measured concept signal (pixel MSE between the classes differing in it
        only); none for a faces run (its data are no rendering of separations)."""
        if self.cfg.celeba:
            return {}
        return dict(
            _signal(self.cfg.concepts, tuple(sorted(self.cfg.sep.items())), self.cfg.resolution)
        )


def read_run(path: Path, name: str | None = None) -> RunData:
    """A run folder's config and trajectories, checked (ValueError naming the file)."""
    doc = saved_config(path)
    try:
        cfg = TrainConfig(**doc["train"])
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path / 'config.json'}: {err}") from None
    log = path / "trajectories.csv"
    trajectories = tuple(read_csv(log)) if log.exists() else ()
    return RunData(path, name or path.name, cfg, trajectories)


def read_runs(paths: Sequence[str | Path], *, partial: bool = True) -> list[RunData]:
    """Every run under ``paths``; run ids are the folder names (the paths, where two names
    collide)."""
    folders = expand(paths)
    names = [p.name for p in folders]
    clash = len(set(names)) < len(names)
    runs = [read_run(p, str(p) if clash else p.name) for p in folders]
    return [r for r in runs if partial or r.finished]


def covariates(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    """One row per run: run, seed, the config values that vary, sep_<concept>, signal_<concept>,
    mask_p where used."""
    configs = [r.cfg.to_json() for r in runs]
    varying = [
        k
        for k in configs[0]
        if k not in NOT_COVARIATES and len({json.dumps(c.get(k)) for c in configs}) > 1
    ]
    concepts = list(dict.fromkeys(c for r in runs for c in r.cfg.concepts))
    masking = any(r.cfg.mask_p > 0 for r in runs)
    rows = []
    for run, cfg in zip(runs, configs):
        row: dict[str, Any] = {"run": run.name, "seed": run.cfg.seed}
        for key in varying:
            value = cfg[key]
            row[key] = "-".join(map(str, value)) if isinstance(value, list) else value
        signal = run.signal()
        row |= {f"sep_{c}": run.cfg.sep.get(c, "") for c in concepts}
        row |= {f"signal_{c}": signal.get(c, "") for c in concepts}
        if masking:
            row["mask_p"] = run.cfg.mask_p
        rows.append(row)
    return rows


def table(runs: Sequence[RunData], rows: Sequence[dict[str, Any]]) -> list[Trajectory]:
    """Every trajectory of the runs, with the run's id and its covariates as extra columns."""
    out = []
    for run, row in zip(runs, rows):
        extra = {k: _text(v) for k, v in row.items() if k not in ("run", "seed")}
        for t in run.trajectories:
            columns = dict(t.extra) | {k: (v,) * t.step.size for k, v in extra.items()}
            out.append(dataclasses.replace(t, run=run.name, extra=columns))
    concepts = {t.concepts for t in out}
    if len(concepts) > 1:
        raise ValueError(
            f"the runs log different concepts ({' vs '.join(map(str, concepts))}); collect each "
            "set apart"
        )
    return out


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    return str(value)


def write_covariates(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """covariates.csv, atomically."""
    import csv

    header = list(dict.fromkeys(k for row in rows for k in row))

    def write(fh) -> None:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows([[_text(row.get(k, "")) for k in header] for row in rows])

    return atomic_write(path, write)


def collect(root: str | Path, *, partial: bool = False) -> tuple[Path, Path, list[RunData]]:
    """Write ROOT/sweep.csv and ROOT/covariates.csv from a sweep folder; returns the two paths and
    the runs used."""
    root = Path(root)
    everything = read_runs([root])
    runs = [r for r in everything if partial or r.finished]
    runs = [r for r in runs if r.trajectories]
    if not runs:
        raise ValueError(
            f"{root}: no run has finished training yet ({len(everything)} started)"
            + ("" if partial else "; --partial collects unfinished runs too")
        )
    rows = covariates(runs)
    return (
        write_csv(root / "sweep.csv", table(runs, rows)),
        write_covariates(root / "covariates.csv", rows),
        runs,
    )


def load_runs(paths: str | Path | Sequence[str | Path], *, partial: bool = True):
    """Trajectories of run folders (or sweep folders) joined with their covariates, as a pandas
    DataFrame.

    One row per run x class x protocol x checkpoint: the log's columns (step, class, protocol, seed,
    run, z_<concept>, accuracy, shares, ...) and the covariates (as in covariates.csv). ``class``,
    ``run``, ``protocol`` and ``setting`` are strings; an empty cell is NaN."""
    pd = _pandas("load_runs")
    runs = [
        r
        for r in read_runs([paths] if isinstance(paths, (str, Path)) else paths, partial=partial)
        if r.trajectories
    ]
    if not runs:
        raise ValueError(f"{paths}: no run has logged a trajectory yet")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_csv(Path(tmp) / "runs.csv", table(runs, covariates(runs)))
        return pd.read_csv(
            path,
            dtype={"class": str, "run": str, "protocol": str, "setting": str},
            keep_default_na=False,
            na_values=[""],
        )


def read_metrics(run: str | Path | Sequence[str | Path], kind: str = "train"):
    """A run's metrics.jsonl as a pandas DataFrame: ``train`` records (step, loss terms in bits/dim,
    gamma_0, gamma_1, grad_norm, wall_s, images_per_s), or ``eval`` records, one row per step x
    class (z_<concept>, accuracy, unreadable share, eval_s). Several runs (a list, as load_runs
    takes): one frame with a ``run`` column, the run folder's name."""
    pd = _pandas("read_metrics")
    if kind not in ("train", "eval"):
        raise ValueError(f"kind={kind!r}: valid: train, eval")
    if not isinstance(run, (str, Path)):
        try:
            runs = list(run)
        except TypeError:
            raise TypeError(
                f"read_metrics takes a run folder or a list of them, got {type(run).__name__}"
            ) from None
        if not runs:
            raise ValueError("read_metrics: the list of runs is empty")
        return pd.concat(
            [read_metrics(r, kind).assign(run=Path(r).name) for r in runs], ignore_index=True
        )
    path = plain_or_gz(Path(run) / "metrics.jsonl")
    records = []
    for i, line in enumerate(read_text(path, "metrics log").splitlines(), 1):
        if not line.strip():
            continue
        rec = json_line(line, path, i)
        if rec.get("kind") != kind:
            continue
        if kind == "train":
            records.append({k: v for k, v in rec.items() if k != "kind"})
            continue
        concepts = saved_config(Path(run))["train"]["concepts"]
        for label, c in rec.get("classes", {}).items():
            z = [math.nan if v is None else v for v in c.get("z", [])]
            records.append(
                {
                    "step": rec["step"],
                    "class": label,
                    **{f"z_{n}": v for n, v in zip(concepts, z)},
                    "accuracy": c.get("accuracy"),
                    UNREADABLE: c.get(UNREADABLE),
                    "eval_s": rec.get("eval_s"),
                }
            )
    frame = pd.DataFrame.from_records(records)
    if kind == "eval" and len(frame):
        frame["class"] = frame["class"].astype(str)
    return frame


def _pandas(what: str):
    try:
        import pandas
    except ImportError:
        raise ImportError(
            f"{what} needs pandas: pip install 'concept-dynamics[pandas]' (or pip install pandas)"
        ) from None
    return pandas


@cli.command("pipeline.sweep")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pipeline.sweep collect DIR``: see the module docstring."""
    parser = cli.parser("pipeline.sweep collect", __doc__)
    parser.add_argument(
        "dir",
        type=Path,
        metavar="DIR",
        help="a sweep folder (the --out of python -m pipeline.sweep)",
    )
    parser.add_argument(
        "--partial", action="store_true", help="also collect runs that have not finished training"
    )
    args = parser.parse_args(argv)
    if cli.checking(args):
        return 0
    run_folders(args.dir)  # a sweep folder, before anything is written
    cli.output_dir(args.dir, "DIR")
    log, cov, runs = collect(args.dir, partial=args.partial)
    kept = {Path(r.path).resolve() for r in runs}
    left = [f.name for f in run_folders(args.dir) if f.resolve() not in kept]
    print(
        f"collected {len(runs)} runs"
        + (f" ({len(left)} unfinished left out; --partial includes them)" if left else "")
        + f": wrote {log} and {cov}"
    )
    if left:
        print(
            f"python -m pipeline.sweep collect: left out (unfinished): {', '.join(left)}",
            file=sys.stderr,
        )
    return 0
