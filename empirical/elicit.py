"""Run the hidden-capability protocols on a run's saved checkpoints.

  python -m empirical.elicit RUN_DIR [--protocols overprompt,intervention,patch,cfg] [--classes held-out]

For every checkpoint with saved weights and every chosen class, each protocol sweeps its settings
(see empirical.protocols) and records the best joint accuracy, the concept-space point there, and
the setting. Results go to RUN_DIR/elicit/<protocol>.json after every checkpoint, and
RUN_DIR/trajectories.csv is rebuilt with one trajectory per (class, protocol) next to the naive
ones (column ``setting`` says which setting won). Interrupt it at any time and rerun: finished
checkpoints are skipped, no row is lost or duplicated. Then
``python -m fitting.capability RUN_DIR`` compares capability with behavior.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence


from empirical import checkpoint, evaluate, protocols, runlog
from empirical.config import TrainConfig, read_run_config
from theory import cli
from theory.trajectory import read_csv


def load_run(run: Path) -> tuple[TrainConfig, dict]:
    """A run folder's TrainConfig and config.json, checked; ValueError naming what is wrong."""
    run = Path(run)
    if not run.is_dir():
        raise ValueError(f"{run}: not a folder; give a run folder written by python -m empirical.train")
    path = run / "config.json"
    if not path.exists():
        raise ValueError(f"{path}: not a training run (no config.json); train one with python -m empirical.train")
    doc = read_run_config(path)
    if not isinstance(doc.get("probe"), dict) or not {"path", "hash"} <= set(doc["probe"]):
        raise ValueError(f"{path}: not a training run's config: it has no 'probe' section with path and hash")
    try:
        return TrainConfig(**doc["train"]), doc
    except (TypeError, ValueError) as err:  # TypeError: an unknown or missing key
        raise ValueError(f"{path}: {err}") from None


def naive_points(run: Path) -> list[runlog.Logged]:
    """Every naive evaluation of a run: those kept in checkpoints/last.pt (the source training rebuilds the log
    from) and any others in trajectories.csv, so a deleted log loses nothing."""
    run = Path(run)
    points = []
    last = run / "checkpoints" / "last.pt"
    if last.exists():
        try:
            points = [runlog.Logged.from_list(p) for p in checkpoint.load(last).get("logs", {}).get("points", [])]
        except ValueError as err:
            raise ValueError(f"{last}: {err}") from None
    have = {(p.step, p.label) for p in points}
    log = run / "trajectories.csv"
    if log.exists():
        points += [runlog.Logged(int(s), t.label, tuple(float(v) for v in z), float(a)) for t in read_csv(log)
                   if t.protocol == "naive" for s, z, a in zip(t.step, t.z, t.accuracy) if (int(s), t.label) not in have]
    return sorted(points, key=lambda p: (p.step, p.label))


def run_protocols(run: Path, names: Sequence[str], classes: Sequence[str] | None = None, *, progress: bool = True,
                  device: str = "auto") -> dict[str, dict]:
    """Elicit every saved checkpoint of a run under each protocol; returns {protocol: results}."""
    from empirical.probe import load as load_probe
    from tqdm import tqdm

    run = Path(run)
    cfg, doc = load_run(run)
    if not names:
        raise ValueError(f"no protocol given; valid: {', '.join(protocols.PROTOCOLS)}")
    for name in names:
        if name not in protocols.PROTOCOLS:
            raise ValueError(f"unknown protocol {name!r}; valid: {', '.join(protocols.PROTOCOLS)}")
    labels = list(cfg.data.held_out if classes is None else classes)
    if not labels:
        raise ValueError(f"no class given; valid: held-out, all, or labels among {', '.join(cfg.data.classes)}")
    for label in labels:
        if label not in cfg.data.classes:
            raise ValueError(f"unknown class {label!r}; valid: {', '.join(cfg.data.classes)}")
    probe, _, digest = load_probe(doc["probe"]["path"])
    if digest != doc["probe"]["hash"]:
        raise ValueError(f"{doc['probe']['path']}: the probe changed since training ({digest} != {doc['probe']['hash']})")
    steps = checkpoint.saved_steps(run)
    if not steps:
        raise ValueError(f"{run / 'checkpoints'}: no saved weights (train with keep_checkpoints=true)")
    dev = evaluate.select_device(device, "--device")
    if "patch" in names and steps[-1] != cfg.steps:
        raise ValueError(f"--protocols patch needs the final checkpoint (step {cfg.steps}); the last saved is step "
                         f"{steps[-1]}: finish training first, or leave patch out")
    final = checkpoint.load_model(run, steps[-1], cfg, dev) if "patch" in names else None
    naive = naive_points(run)  # read once, before anything is rewritten
    meta = runlog.run_meta(cfg, digest, source="empirical.train + empirical.elicit")
    todo = {name: [s for s in steps if not set(labels) <= set(runlog.read_elicit(run, name).get(s, {}))] for name in names}
    bar = tqdm(total=sum(map(len, todo.values())), desc="elicit", unit="ckpt", disable=None if progress else True)
    all_results = {}
    for name in names:
        results = runlog.read_elicit(run, name)
        for step in todo[name]:
            t0 = time.perf_counter()
            model = checkpoint.load_model(run, step, cfg, dev)
            results.setdefault(step, {}).update(protocols.elicit_step(model, probe, cfg, step, name, labels, final=final))
            info = {"classes": labels, "settings": [s.name for s in protocols.settings(name, cfg.data, labels[0])],
                    "seconds_per_checkpoint": round(time.perf_counter() - t0, 2)}
            runlog.write_elicit(run, name, results, info)
            runlog.write(run, concepts=cfg.concepts, classes=cfg.data.classes, seed=cfg.seed, naive=naive, meta=meta)
            bar.update(1)
        all_results[name] = results
    bar.close()
    runlog.write(run, concepts=cfg.concepts, classes=cfg.data.classes, seed=cfg.seed, naive=naive, meta=meta)
    return all_results


@cli.command("empirical.elicit")
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m empirical.elicit``: see the module docstring."""
    parser = cli.parser("empirical.elicit", __doc__)
    parser.add_argument("run", type=Path, help="a run folder written by python -m empirical.train")
    parser.add_argument("--protocols", default=",".join(protocols.PROTOCOLS),
                        help=f"comma-separated (default all: {', '.join(protocols.PROTOCOLS)})")
    parser.add_argument("--classes", default="held-out", help="held-out (default), all, or labels like 11,01")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    args = parser.parse_args(argv)
    names = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if not names:
        raise ValueError(f"--protocols {args.protocols!r}: give at least one of {', '.join(protocols.PROTOCOLS)}")
    cfg, _ = load_run(args.run)
    cli.output_dir(args.run / "elicit", "RUN")
    if args.classes == "held-out":
        classes = None
    elif args.classes == "all":
        classes = cfg.data.classes
    else:
        classes = [c.strip() for c in args.classes.split(",") if c.strip()]
        if not classes:
            raise ValueError(f"--classes {args.classes!r}: give held-out, all, or labels among {', '.join(cfg.data.classes)}")
    if "cfg" in names and cfg.p_cfg == 0:
        raise ValueError(f"--protocols cfg: {args.run} was trained with p_cfg=0 (no unconditional model); drop cfg")
    results = run_protocols(args.run, names, classes, device=args.device)
    for name, res in results.items():
        last = max(res)
        best = {label: f"{v[1]:.2f} ({v[2]})" for label, v in res[last].items()}
        print(f"{name}: {len(res)} checkpoints; at step {last}: {best}")
    print(f"wrote {args.run / 'elicit'} and {args.run / 'trajectories.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
