"""Simulate the paper's toy models of learning dynamics in concept space.

With no arguments, runs the default presets and writes, for each, trajectories.csv (the trajectory
log format, protocol=sim, step = model time, one run per parameter setting), config.json and a
concept-space figure into runs/theory/<preset>/:

  fig5      Eq. 1, classes 00 and 11 over the concept-signal ratio a (clockwise if size is stronger)
  fig9b     Eq. 2, class 11 over the masking fraction p = 0, 0.25, 0.5, 0.75, 1
  notebook  the authors' own ODE, a in linspace(1, 5, 15)
  swingby3  the structured identity mapping (Yang et al., ICLR 2025), 3 concepts: the OOD loss
  falls, rises
            twice and falls (triple descent) while the training loss falls (figure: losses and the
            swing)
  swingby4  the same with 4 concepts (two rises; no quadruple descent found in the seeds scanned)
  swingby-fig5, -fig8, -fig9, -fig10
            the swing-by paper's figures with the settings its authors made them with (signal
            squared, a positive start): one rise, triple descent, quadruple descent, the failure
            mode's plateau

One model, with parameters and sweeps (a sweep of several flags is their product):

  python -m theory.simulate --model eq1 --param t_switch=8,0 --sweep k=0.5,1,2 --out runs/theory/k
  python -m theory.simulate --model eq2 --sweep p=0,0.5,1 --param beta=0.8
  python -m theory.simulate --model eq1 --concepts color,size,shape --param z_bias=0,1,1
  python -m theory.simulate --energy "lam/2*(z1 - sigmoid(t - 5))**2 + (z2 - 1)**2/2" --param lam=2
  python -m theory.simulate --model sim2 --param mu=1,1.5,2.2 --param scale=0.1 --sweep seed=0,1,62
  python -m theory.simulate --model sim2 --param mu=1,1.7,2.25 --param signal=a2 --param \\
      start=uniform-positive

Vector parameters take one value per concept, comma-separated (a single value is used for every
concept); NAME_i addresses entry i (1-based), e.g. --param t_switch_1=8 or --sweep z_bias_1=0,0.5.
The parameters of every model, with defaults and valid ranges, are listed at the end of --help.
"""

from __future__ import annotations

import hashlib

import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from core import cli, plot

from theory.solvers import exact
from core.stamp import stamp
from core.cli import UsageError
from theory.solvers.integrate import choose_method, compiled, integrate, time_grid
from theory.models.landscape import Landscape
from theory.cli.presets import PRESETS, Panel
from theory.cli import swingby
from theory.cli import swingby_plot
from theory.cli.swingby import SIM_MODELS, SIM_PRESETS
from core.files import write_json
from core.trajectory import write_csv
from theory.cli.args import MAX_ROWS, build_parser, check_args, landscape, settings

# ---------------------------------------------------------------------------------------------
# running


def _solve(land: Landscape, t: np.ndarray, values: dict, n: int, args) -> np.ndarray:
    if n * t.size > MAX_ROWS:
        raise UsageError(
            f"{n:,} trajectories x {t.size:,} points = {n * t.size:,} log rows (about "
            f"{n * t.size * 80 / 1e9:.1f} GB of CSV); at most {MAX_ROWS:,}: use fewer --points "
            "or a smaller --sweep"
        )
    method = choose_method(args.method, n, land)
    if method == "exact" and exact.why_not_linear(land) is not None:
        raise UsageError(
            f"--method exact: {land.name}: {exact.why_not_linear(land)}; valid for flows linear "
            "in z "
            "(eq1, eq2, eq2-split, notebook); use auto"
        )
    if method == "dopri" and not compiled(land):
        print(
            f"compiling the numba kernel for {land.name} (first use, a few seconds)...",
            file=sys.stderr,
        )
    sol = integrate(
        land,
        t,
        values,
        method=args.method,
        rtol=args.rtol,
        atol=args.atol,
        max_step=args.max_step,
    )
    # auto: dopri took what the exact quadrature cannot resolve
    if sol.success and sol.method != method:
        print(f"{land.name}: {sol.message.removeprefix('ok; ')}", file=sys.stderr)
    if not sol.success:
        raise UsageError(
            f"{land.name}: integration failed: {sol.message}; try a shorter --t-end, a looser "
            "--rtol/--atol, "
            "or other parameters (nothing was written)"
        )
    return sol


def _config(kind: str, name: str, land: Landscape, t: np.ndarray, args, method: str) -> dict:
    return {
        kind: name,
        "model": land.name,
        "energy": str(land.energy),
        "concepts": list(land.concepts),
        **({"held_gates": {str(g): str(expr) for g, expr in land.held}} if land.held else {}),
        "t_end": float(t[-1]),
        "points": int(t.size),
        "method": method,
        "rtol": args.rtol,
        "atol": args.atol,
        "command": "python -m theory.simulate " + " ".join(args.argv),
        "stamp": stamp(command=["python", "-m", "theory.simulate", *args.argv]),
    }


def _runs_config(sol, runs: Sequence[str], label: str) -> list[dict]:
    out = []
    for i, run in enumerate(runs):
        params = {
            k: (v[i].tolist() if v.shape[1] > 1 or k == "z0" else float(v[i, 0]))
            for k, v in sol.params.items()
        }
        out.append({"run": run, "class": label, "params": params})
    return out


def run_preset(name: str, args) -> list[Path]:
    """Simulate every panel of a preset; returns the paths written (log, config, figure)."""
    preset = PRESETS[name]()
    out = _preset_out(name, args)
    t = time_grid(args.t_end or preset.t_end, args.points or 200)
    trajectories, runs_cfg, sols = [], [], []
    for panel in preset.panels:
        n = len(panel.sweep_values)
        sol = _solve(panel.landscape, t, panel.values, n, args)
        sols.append(sol)
        trajectories += sol.trajectories(panel.label, runs=panel.runs)
        runs_cfg += _runs_config(sol, panel.runs, panel.label)
    cfg = _config("preset", name, preset.panels[0].landscape, t, args, sols[0].method)
    cfg.update(
        description=preset.description,
        panels=[
            {"title": p.title, "class": p.label, "sweep": {p.sweep: list(p.sweep_values)}}
            for p in preset.panels
        ],
        runs=runs_cfg,
    )
    paths = [
        write_csv(out / "trajectories.csv", trajectories),
        write_json(out / "config.json", cfg),
    ]
    paths.append(_figure(preset.panels, sols, out / f"{name}.png", preset.description))
    return paths


def _preset_out(name: str, args) -> Path:
    """runs/theory/<preset>, or --out itself when exactly one preset runs."""
    several = len(args.preset or [*PRESETS, *SIM_PRESETS]) > 1
    return Path(args.out or "runs/theory") / name if several or args.out is None else args.out


def _sim_written(
    sims, out: Path, cfg: dict, title: str, name: str, argv: Sequence[str]
) -> list[Path]:
    trajectories = [t for sim in sims for t in swingby.trajectories(sim)]
    _check_rows(len(trajectories), sims[0].t.size)
    cfg |= {
        "t_end": float(sims[0].t[-1]),
        "points": int(sims[0].t.size),
        "runs": [sim.summary() for sim in sims],
        "command": "python -m theory.simulate " + " ".join(argv),
        "stamp": stamp(command=["python", "-m", "theory.simulate", *argv]),
    }
    return [
        write_csv(out / "trajectories.csv", trajectories),
        write_json(out / "config.json", cfg),
        swingby_plot.figure(sims, out / f"{name}.png", title),
    ]


def run_sim_preset(name: str, args) -> list[Path]:
    """A swing-by preset: the SIM simulation, its log, config and figure."""
    sims, p = swingby.preset_runs(name, args.t_end, args.points)
    cfg = {"preset": name, "model": p.model, "description": p.description, "seed_choice": p.scan}
    return _sim_written(sims, _preset_out(name, args), cfg, p.description, name, args.argv)


def run_sim_model(args) -> list[Path]:
    """``--model sim1|sim2`` with --param and --sweep."""
    t = time_grid(args.t_end if args.t_end is not None else 40.0, args.points or 801)
    sims = swingby.model_runs(args.model, args.param, args.sweep, t)
    out = args.out or Path("runs/theory") / args.model
    cfg = {"single": args.model, "model": args.model}
    return _sim_written(
        sims,
        out,
        cfg,
        f"{args.model}: " + ", ".join(s.run for s in sims[:6]),
        args.model,
        args.argv,
    )


def _check_rows(n: int, points: int) -> None:
    if n * points > MAX_ROWS:
        raise UsageError(
            f"{n:,} trajectories x {points:,} points = {n * points:,} log rows; at most "
            f"{MAX_ROWS:,}: "
            "use fewer --points or a smaller --sweep"
        )


def _figure(panels: Sequence[Panel], sols, path: Path, suptitle: str) -> Path:
    fig, axes = plot.subplots(
        1, len(panels), figsize=(5.6 * len(panels), 5.0), squeeze=False, layout="constrained"
    )
    for ax, panel, sol in zip(axes[0], panels, sols):
        sm = plot.concept_space(
            ax,
            sol.z,
            panel.sweep_values,
            concepts=panel.landscape.concepts,
            cmap=panel.cmap,
            norm=panel.norm(),
            targets=panel.targets,
            title=panel.title,
        )
        bar = fig.colorbar(sm, ax=ax, shrink=0.8, label=panel.sweep_label or panel.sweep)
        if len(panel.sweep_values) <= 10:
            bar.set_ticks(panel.sweep_values, labels=[f"{v:.3g}" for v in panel.sweep_values])
            bar.minorticks_off()
    fig.suptitle(suptitle, fontsize=10)
    return plot.save(fig, path)


def run_model(land: Landscape, args) -> list[Path]:
    """Simulate one model over the product of the --sweep values; returns the paths written."""
    sweeps, combos, batched, runs = settings(land, args)
    t = time_grid(args.t_end if args.t_end is not None else land.t_end, args.points or 200)
    sol = _solve(land, t, batched, len(runs), args)
    out = args.out or Path("runs/theory") / _default_folder(land, args)
    cfg = _config("single", land.name, land, t, args, sol.method)
    cfg.update(
        sweeps={name: vals for name, vals in sweeps}, runs=_runs_config(sol, runs, args.label)
    )
    trajectories = sol.trajectories(args.label, runs=runs)
    paths = [
        write_csv(out / "trajectories.csv", trajectories),
        write_json(out / "config.json", cfg),
    ]
    colour = np.array([c[0] for c in combos], dtype=float) if sweeps else np.zeros(1)
    paths.append(
        _model_figure(
            land, sol, colour, sweeps[0][0] if sweeps else None, out / f"{_slug(land.name)}.png"
        )
    )
    return paths


def _default_folder(land: Landscape, args) -> str:
    """The folder under runs/theory of a run without --out: the model's name; for --energy, named
    by the energy too (custom-<hash>), so a new energy never replaces the last one's files."""
    if getattr(args, "energy", None) is None:
        return land.name
    return f"{land.name}-{hashlib.sha1(args.energy.encode()).hexdigest()[:8]}"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _model_figure(land: Landscape, sol, colour: np.ndarray, sweep: str | None, path: Path) -> Path:
    two_d = land.dim == 2
    fig, axes = plot.subplots(
        1, 1 + two_d, figsize=(5.6 * (1 + two_d), 4.8), squeeze=False, layout="constrained"
    )
    if two_d:
        sm = plot.concept_space(
            axes[0, 0], sol.z, colour, concepts=land.concepts, title=f"{land.name}: concept space"
        )
        if sweep:
            fig.colorbar(sm, ax=axes[0, 0], shrink=0.8, label=sweep)
    plot.coordinates(axes[0, -1], sol.t, sol.z, colour, concepts=land.concepts)
    axes[0, -1].set_title(f"{land.name}: coordinates over time")
    return plot.save(fig, path)


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    check_args(args)
    cli.output_dir(args.out or "runs/theory", "--out")
    if cli.checking(args):  # the parameters too, resolved against the model, nothing solved
        if args.model in SIM_MODELS:
            swingby.model_settings(args.model, args.param, args.sweep)
        elif args.model is not None or args.energy is not None:
            settings(landscape(args), args)
        return 0
    start = time.perf_counter()
    if args.model in SIM_MODELS:
        written = run_sim_model(args)
    elif args.model is not None or args.energy is not None:
        written = run_model(landscape(args), args)
    else:
        written = []
        for name in args.preset or [*PRESETS, *SIM_PRESETS]:
            written += run_sim_preset(name, args) if name in SIM_PRESETS else run_preset(name, args)
    for path in written:
        print(f"wrote {path}")
    print(f"done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
