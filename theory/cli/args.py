"""The command line of ``python -m theory.simulate``: the parser, the checks of its flags, the
landscape that --model or --energy names, and NAME=VALUE parameters and sweeps resolved against it
(theory.simulate runs what this module parsed).
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np

from core import cli

from theory.cli import swingby
from core.cli import UsageError
from theory.models.expression import FUNCTIONS
from theory.solvers.integrate import AUTO_DOPRI_FROM
from theory.models.landscape import Landscape
from theory.models.paper import MAX_CONCEPTS, MODELS, get_model
from theory.models.user_energy import from_expression
from theory.cli.presets import PRESETS
from theory.cli.swingby import SIM_MODELS, SIM_PRESETS

MAX_ROWS = (
    2_000_000  # trajectories x points written to one log (about 150 MB of CSV, 1 GB while writing)
)


def _parameter_help() -> str:
    lines = ["parameters (defaults; valid range):"]
    for name in MODELS:
        land = get_model(name)
        lines.append(f"  {name}: {land.doc}")
        for p in land.params:
            default = ",".join(f"{v:g}" for v in p.default)
            kind = "per concept" if p.vector else "scalar"
            lines.append(f"    {p.name:<9} = {default:<9} {p.valid_range():<10} {kind}: {p.doc}")
        lines.append(
            f"    {'z0':<9} = {','.join(f'{v:g}' for v in land.z0):<9} [0, 1]     per concept: "
            "start"
        )
    lines.append(swingby.help_text())
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m theory.simulate`` (its docstring as help; the parameters of
    every model in the epilog), made while the command runs."""
    parser = cli.parser(epilog=_parameter_help())
    _model_arguments(parser)
    _solver_arguments(parser)
    return parser


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    """What to simulate: a preset, a model or an energy, its parameters, sweeps, concepts and
    class."""
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--preset",
        action="append",
        choices=[*PRESETS, *SIM_PRESETS],
        help="run this preset (repeatable); default: all",
    )
    what.add_argument("--model", choices=[*MODELS, *SIM_MODELS], help="simulate one model")
    what.add_argument(
        "--energy",
        metavar="EXPR",
        help="simulate your own energy E(z1, z2, ..., t), give its other symbols with --param; "
        "allowed: numbers, pi, "
        "names, + - * / **, and "
        + ", ".join(dict.fromkeys(f.lower() for f in FUNCTIONS))
        + " (parsed, never run)",
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter (repeatable)",
    )
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="sweep a parameter (repeatable: product)",
    )
    parser.add_argument(
        "--concepts",
        metavar="NAMES",
        help="concept names, comma-separated; sets their number for eq1/eq2 (default color,size)",
    )
    parser.add_argument(
        "--label",
        "--class",
        dest="label",
        default="11",
        metavar="LABEL",
        help="class label written to the log (default 11; --class is an alias)",
    )


def _solver_arguments(parser: argparse.ArgumentParser) -> None:
    """How to integrate and where to write: time, points, method, tolerances, output folder."""
    parser.add_argument(
        "--t-end", type=float, default=None, metavar="T", help="end of model time (default 25)"
    )
    parser.add_argument(
        "--points",
        type=int,
        default=None,
        metavar="N",
        help="output points, linspace(0, T, N) (default 200; swingby3 and swingby4 501, the "
        "swing-by figure presets 1001)",
    )
    parser.add_argument(
        "--method",
        choices=["auto", "exact", "dopri", "stacked", "loop"],
        default="auto",
        help="integrator (default auto: exact quadrature where the flow is linear in z, as for "
        "eq1, "
        f"eq2 and notebook; else stacked below {AUTO_DOPRI_FROM} trajectories, else dopri)",
    )
    parser.add_argument(
        "--rtol", type=float, default=1e-9, help="relative tolerance (default 1e-9)"
    )
    parser.add_argument(
        "--atol", type=float, default=1e-11, help="absolute tolerance (default 1e-11)"
    )
    parser.add_argument(
        "--max-step",
        type=float,
        default=math.inf,
        metavar="H",
        help="no integration step longer than H in model time (default: unbounded; an adaptive "
        "step can jump over a switch or pulse narrower than it: give H below its width)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default runs/theory/<preset> or runs/theory/<model>)",
    )


def _target(land: Landscape, name: str, flag: str) -> tuple[str, int | None]:
    """Resolve ``lam`` or ``lam_2`` to (group, entry index or None)."""
    valid = ", ".join(land.param_names + ("z0",))
    groups = {p.name: p for p in land.params}
    size = {n: p.size for n, p in groups.items()} | {"z0": land.dim}
    vector = {n: p.vector for n, p in groups.items()} | {"z0": True}
    if name in size:
        return name, None
    base, _, idx = name.rpartition("_")
    if base in size and vector[base] and idx.isdigit() and 1 <= int(idx) <= size[base]:
        return base, int(idx) - 1
    raise UsageError(
        f"{flag} {name}: {land.name} has no parameter {name!r}; valid: {valid} (NAME_i for one "
        "entry)"
    )


def _apply(land: Landscape, values: dict, name: str, numbers: list[float], flag: str) -> None:
    group, idx = _target(land, name, flag)
    current = np.atleast_1d(np.asarray(values[group], dtype=float)).copy()
    if idx is not None:
        if len(numbers) != 1:
            raise UsageError(f"{flag} {name}: one value expected for a single entry")
        current[idx] = numbers[0]
    elif len(numbers) == 1:
        current[:] = numbers[0]
    elif len(numbers) == current.size:
        current = np.array(numbers)
    else:
        raise UsageError(
            f"{flag} {name}: needs 1 or {current.size} values (one per concept: "
            f"{', '.join(land.concepts)}), got {len(numbers)}"
        )
    values[group] = current


def _once(given: dict[str, str], name: str, flag: str) -> None:
    """Refuse a parameter named twice (issue #51: --sweep k=... dropped --param k=1 silently)."""
    if name in given:
        swept = " (a swept parameter takes its values from --sweep alone)"
        raise UsageError(
            f"{flag} {name}: {name} is also set by {given[name]}; give each parameter once"
            + (swept if "--sweep" in (flag, given[name]) else "")
        )
    given[name] = flag


def settings(land: Landscape, args) -> tuple[list, list, dict[str, np.ndarray], list[str]]:
    """--param and --sweep, checked against the landscape's valid ranges: (sweeps as (name, values),
    the value combinations, the parameters batched over runs (N, size), each run's name)."""
    values = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in land.defaults().items()}
    given: dict[str, str] = {}
    for item in args.param:
        name, text = cli.assignment(item, "--param")
        _once(given, name, "--param")
        _apply(land, values, name, cli.numbers(text, "--param", name), "--param")
    sweeps = []
    for item in args.sweep:
        name, text = cli.assignment(item, "--sweep")
        _once(given, name, "--sweep")
        _target(land, name, "--sweep")
        sweeps.append((name, cli.numbers(text, "--sweep", name)))
    combos = list(itertools.product(*(vals for _, vals in sweeps))) or [()]
    settings, runs = [], []
    for combo in combos:
        v = {k: a.copy() for k, a in values.items()}
        for (name, _), x in zip(sweeps, combo):
            _apply(land, v, name, [x], "--sweep")
        settings.append(v)
        runs.append(",".join(f"{name}={x:g}" for (name, _), x in zip(sweeps, combo)) or land.name)
    batched = {k: np.stack([s[k] for s in settings]) for k in values}
    land.resolve(batched)
    return sweeps, combos, batched, runs


def landscape(args) -> Landscape:
    """The landscape --model or --energy names, with --concepts (the energy's symbols from --param
    and --sweep)."""
    concepts = [c.strip() for c in args.concepts.split(",")] if args.concepts else None
    if concepts is not None and (not all(concepts) or len(set(concepts)) != len(concepts)):
        raise UsageError(f"--concepts {args.concepts}: names must be distinct and non-empty")
    if concepts is not None and len(concepts) > MAX_CONCEPTS:
        raise UsageError(
            f"--concepts: {len(concepts)} names; at most {MAX_CONCEPTS} concepts (each is a sympy "
            "gradient to compile)"
        )
    if args.energy is not None:
        given = {}
        for item in args.param:
            name, text = cli.assignment(item, "--param")
            given[name] = cli.numbers(text, "--param", name)[0]
        for item in args.sweep:  # a swept symbol needs no --param; its first value is the default
            name, text = cli.assignment(item, "--sweep")
            given.setdefault(name, cli.numbers(text, "--sweep", name)[0])
        land = from_expression(args.energy, given, concepts=concepts)
        return land
    if args.model == "notebook":
        if concepts is not None and len(concepts) != 2:
            raise UsageError("--concepts: the notebook model has exactly 2 concepts")
        return get_model("notebook")
    n = len(concepts) if concepts is not None else 2
    return MODELS[args.model](n, concepts)


def check_args(args) -> None:
    """The flags that need no model to check: points, time, tolerances, label, and which go
    together."""
    if args.points is not None and args.points < 2:
        raise UsageError(f"--points {args.points}: need at least 2 output points")
    if args.points is not None and args.points > MAX_ROWS:
        raise UsageError(f"--points {args.points}: at most {MAX_ROWS:,} output points")
    if args.t_end is not None and not (np.isfinite(args.t_end) and args.t_end > 0):
        raise UsageError(f"--t-end {args.t_end}: must be a finite number > 0")
    for flag, value in (("--rtol", args.rtol), ("--atol", args.atol)):
        if not 1e-15 <= value < 1:
            raise UsageError(f"{flag} {value}: must lie in [1e-15, 1)")
    if not args.max_step > 0:  # NaN too
        raise UsageError(f"--max-step {args.max_step}: must be a positive time, e.g. 0.01")
    if (
        not args.label
        or args.label != args.label.strip()
        or not args.label.isprintable()
        or "," in args.label
    ):
        raise UsageError(
            f"--label {args.label!r}: a class label must be non-empty printable text without "
            "commas or "
            "surrounding spaces, e.g. 11"
        )
    if args.model is None and args.energy is None and (args.param or args.sweep or args.concepts):
        raise UsageError(
            "--param, --sweep and --concepts need --model or --energy (presets fix their "
            "parameters)"
        )
    if args.model in SIM_MODELS and args.concepts:
        raise UsageError(
            f"--concepts: {args.model} names its concepts c1, c2, ...; their number is that of "
            "--param mu"
        )
