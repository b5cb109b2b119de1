"""The probe a training run reads: where its config puts it, providing it (trained there, once,
where it does not exist yet: runs sharing a probe wait for the one that trains it), and reading it,
checked against the run. Opening a run only reads its probe; ``empirical.training.run.open_run``
provides it first.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core import cli
from core.files import read_json
from empirical.nets.probe_net import CELEBA, SETUPS, ProbeConfig
from empirical.probing.reader import load as read_probe
from empirical.probing import celeba_probe
from empirical.probing.probe_train import train_evaluate_save
from empirical.training import lock
from empirical.training.config import TrainConfig, no_shipped_probe


def probe_folder(cfg: TrainConfig, out: Path) -> tuple[Path, bool]:
    """The probe the config names, and whether it exists; refuses a probe.pt that is not a file."""
    path = Path(cfg.probe_path(str(out)))
    if path.suffix == ".pt" and not path.is_file():
        raise ValueError(
            f"probe={cfg.probe}: {path} is not a file; give an existing probe.pt, or a folder (a "
            "probe is "
            "trained there if it has none)"
        )
    exists = (path / "probe.pt").exists() or (path.suffix == ".pt" and path.exists())
    if not exists and "{package}" in cfg.probe:  # a shipped probe is never trained into the package
        raise ValueError(no_shipped_probe(cfg))
    return path, exists


def provide_probe(cfg: TrainConfig, out: Path, *, progress: bool) -> Path:
    """The probe the config names, trained and saved there first where it does not exist yet (runs
    sharing a probe wait for the one that trains it); returns its path. Opening a run never trains
    one: this does."""
    path, exists = probe_folder(cfg, out)
    if exists:
        return path
    cli.output_dir(path, f"probe={cfg.probe}:")
    pcfg = probe_config(cfg)
    with lock.hold(path, wait=True):
        if not (path / "probe.pt").exists():
            print(
                f"train: no probe at {path}; training one ({pcfg.steps} steps at "
                f"{cfg.resolution} px)",
                file=sys.stderr,
            )
            trainer = celeba_probe.train_evaluate_save if cfg.celeba else train_evaluate_save
            _, doc = trainer(pcfg, path, progress=progress)
            print(
                f"train: probe saved; worst per-concept accuracy {doc['min_accuracy']}",
                file=sys.stderr,
            )
    return path


def probe_config(cfg: TrainConfig) -> ProbeConfig:
    """The probe a run trains where it has none: the setup of its concepts (faces: the face probe on
    its selection), at its resolution, ``probe_steps`` steps."""
    if cfg.celeba:
        return ProbeConfig(
            setup=CELEBA,
            attributes=cfg.concepts,
            data=cfg.celeba,
            resolution=cfg.resolution,
            steps=cfg.probe_steps,
        )
    setups = [name for name, s in SETUPS.items() if s["concepts"] == cfg.concepts]
    if not setups:
        valid = "; ".join(f"{n}: {s['concepts']}" for n, s in SETUPS.items())
        raise ValueError(f"no probe setup covers concepts {cfg.concepts}; valid: {valid}")
    return ProbeConfig(setup=setups[0], resolution=cfg.resolution, steps=cfg.probe_steps)


def load_probe(cfg: TrainConfig, out: Path):
    """The probe the config names, read and checked against the run's concepts and resolution:
    (model, path, hash). It must exist (:func:`provide_probe` trains a missing one)."""
    path, exists = probe_folder(cfg, out)
    if not exists:
        raise ValueError(
            f"probe={cfg.probe}: no probe at {path}; python -m empirical.train trains one there "
            "before the run "
            "opens (in Python: empirical.training.run.open_run, or probes.provide_probe first), "
            "or give "
            "probe=<folder> of an existing probe"
        )
    model, pcfg, digest = read_probe(path)
    _reads_the_run(cfg, path, pcfg)
    return model, str(path), digest


def check_probe(cfg: TrainConfig, out: Path) -> None:
    """What opening the run would refuse of its probe, checked before any work (``--check-args``, a
    job file's check): a shipped probe that is not there, or a probe of other concepts, resolution
    or faces (read from its probe.json; the weights are checked when the run opens)."""
    path, exists = probe_folder(cfg, out)
    meta = path / "probe.json" if path.suffix != ".pt" else path.with_name("probe.json")
    if not exists or not meta.is_file():
        return
    try:
        pcfg = ProbeConfig(**read_json(meta, "probe")["config"])
    except (KeyError, TypeError, ValueError):
        return  # not a probe's description: reading the probe itself says what is wrong
    _reads_the_run(cfg, path, pcfg)


def _reads_the_run(cfg: TrainConfig, path: Path, pcfg: ProbeConfig) -> None:
    if cfg.celeba and Path(pcfg.data).resolve() != Path(cfg.celeba).resolve():
        raise ValueError(
            f"{path}: the probe read the faces of {pcfg.data or 'no selection'}, the run trains on "
            f"{cfg.celeba}; set probe=<folder> to that selection's probe"
        )
    if pcfg.concepts != cfg.concepts or pcfg.resolution != cfg.resolution:
        raise ValueError(
            f"{path}: the probe reads {pcfg.concepts} at {pcfg.resolution} px, the run needs "
            f"{cfg.concepts} at {cfg.resolution} px; set probe=<folder> to another probe"
        )
