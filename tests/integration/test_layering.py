"""The layering of the package, checked statically and at run time.

Statically (every import of every file, function-level ones included, read with ``ast``): core (the ground
floor: log format, folder layout, record base, files, CLI conventions) imports nothing else of ours, nor sympy,
numba or torch, and names no upper package even in text; theory imports none of empirical, fitting and figures;
empirical never imports fitting or figures; figures never imports empirical, and of fitting only its records (it
reads files); torch only in empirical; no import cycle between files. Inside a package with floors (FLOORS), no
module imports one on a higher floor: fitting's records (the lowest) import none of fitting, its estimators no analysis, and neither imports the commands
on top; theory's go models, solvers, cli, then its command; empirical's floors go images, nets, probing, training, elicitation, then its commands. pipeline, the
orchestration floor, sits on top of every package and nothing imports it. The checker is tested on planted
violations. At run time: the torch-free parts import and run without torch.
"""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = ("core", "theory", "empirical", "fitting", "figures", "pipeline")
FORBIDDEN = {  # package -> packages (and third-party roots) it must never import
    "core": {"theory", "empirical", "fitting", "figures", "pipeline", "torch", "sympy", "numba"},
    "theory": {"empirical", "fitting", "figures", "pipeline", "torch"},
    "fitting": {"empirical", "figures", "pipeline", "torch"},
    "figures": {"empirical", "pipeline", "torch"},  # and of fitting only its records (ONLY)
    "empirical": {"fitting", "figures", "pipeline"},
    "pipeline": set(),  # the orchestration floor: on top, it may run any part
}

# package -> {package it may import only in part: the modules it may import}
ONLY = {"figures": {"fitting": {"fitting.records"}}}
UPPER = (
    "theory",
    "empirical",
    "fitting",
    "figures",
    "pipeline",
)  # core names none of them, even in text

# package -> its sub-packages from the lowest floor up; the modules directly in the package (its commands) are
# the top floor
FLOORS = {
    "fitting": ("fitting.records", "fitting.estimators", "fitting.analyses"),
    "theory": ("theory.models", "theory.solvers", "theory.cli"),
    "empirical": tuple(
        f"empirical.{f}" for f in ("images", "nets", "probing", "training", "elicitation")
    ),
}


def modules(root: Path) -> dict[str, Path]:
    return {
        ".".join(p.relative_to(root).with_suffix("").parts): p
        for pkg in PACKAGES
        for p in sorted((root / pkg).rglob("*.py"))
    }


def floor(module: str) -> int:
    subs = FLOORS.get(module.split(".")[0], ())
    return next(
        (i for i, sub in enumerate(subs) if module == sub or module.startswith(sub + ".")),
        len(subs),
    )


def imports(path: Path, known: set[str]) -> set[str]:
    """Every module a file imports, at any depth (function-level imports count), resolved to files where possible."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in known else node.module)
    return out


def graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    return {m: imports(p, set(mods)) for m, p in mods.items()}


def violations(root: Path) -> list[str]:
    """'a.b imports c.d' for every import a layer forbids, plus every import cycle between files."""
    g = graph(root)
    bad = [
        f"{m} imports {i}"
        for m, deps in g.items()
        for i in sorted(deps)
        if i.split(".")[0] in FORBIDDEN[m.split(".")[0]]
    ]
    bad += [
        f"{m} imports {i}"
        for m, deps in g.items()
        for i in sorted(deps)
        if i.split(".")[0] in ONLY.get(m.split(".")[0], {})
        and i not in ONLY[m.split(".")[0]][i.split(".")[0]]
    ]
    up = [
        f"{m} imports {i} (a higher floor)"
        for m, deps in g.items()
        for i in sorted(deps)
        if i in g and i.split(".")[0] == m.split(".")[0] and floor(i) > floor(m)
    ]
    return bad + up + [" -> ".join(c) for c in cycles(g)]


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of files (Tarjan), as a closed path."""
    edges = {m: sorted(d for d in deps if d in g and d != m) for m, deps in g.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group) + [sorted(group)[0]])

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_package_keeps_its_layers_and_has_no_import_cycle():
    assert violations(ROOT) == []


def test_core_names_no_upper_package():
    """The ground floor is plumbing: no module of core names a module of the parts above it, even in a string
    (a writer's command, a record schema, a protocol list)."""
    import re

    named = re.compile(r"\b(" + "|".join(UPPER) + r")\.[a-z_]")
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in sorted((ROOT / "core").glob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if named.search(line)
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "file, line, found",
    [
        (
            "theory/models/landscape.py",
            "import fitting.estimators.curves",
            "theory.models.landscape imports fitting.estimators.curves",
        ),
        (
            "core/plot.py",
            "from theory.models import paper",
            "core.plot imports theory.models.paper",
        ),
        ("core/cli.py", "    import sympy", "core.cli imports sympy"),
        (
            "figures/training.py",
            "from fitting.turn import find_turn",
            "figures.training imports fitting.turn",
        ),
        (
            "figures/masking.py",
            "    from empirical import data",
            "figures.masking imports empirical.data",
        ),
        ("fitting/estimators/curves.py", "import torch", "fitting.estimators.curves imports torch"),
        (
            "empirical/images/render.py",
            "from fitting.estimators import curves",
            "empirical.images.render imports fitting.estimators.curves",
        ),
        (
            "fitting/estimators/pooled.py",
            "from fitting.analyses import study_runs",
            "fitting.estimators.pooled imports fitting.analyses.study_runs (a higher floor)",
        ),
        (
            "fitting/analyses/report.py",
            "    from fitting import fit",
            "fitting.analyses.report imports fitting.fit (a higher floor)",
        ),
        (
            "empirical/images/render.py",
            "    from empirical.nets import unet",
            "empirical.images.render imports empirical.nets.unet (a higher floor)",
        ),
        (
            "empirical/training/run.py",
            "from pipeline import sweep",
            "empirical.training.run imports pipeline.sweep",
        ),
        (
            "theory/models/identity_mapping.py",
            "from theory.solvers import dopri",
            "theory.models.identity_mapping imports theory.solvers.dopri (a higher floor)",
        ),
        (
            "figures/fit.py",
            "from fitting.estimators import curves",
            "figures.fit imports fitting.estimators.curves",
        ),
        (
            "core/files.py",
            "from core import trajectory",
            "core.files -> core.log_cells -> core.sidecar -> core.trajectory -> core.files",
        ),
    ],
)
@pytest.mark.slow  # 11 s; the checker runs on the package by default
def test_a_planted_violation_is_found(tmp_path, file, line, found):
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / file
    text = target.read_text()
    if line.startswith("    "):  # a function-level import counts too
        text += "\n\ndef _planted():\n" + line + "\n"
    else:
        text = line + "\n" + text
    target.write_text(text)
    assert found in violations(tmp_path)


# As if torch were not installed: any 'import torch' raises ImportError (sys.modules stays clean).
BLOCK_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch' (blocked by the layering test)")
sys.meta_path.insert(0, _NoTorch())
"""


def run(code: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH + code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_theory_fitting_and_data_run_without_torch(tmp_path):
    code = f"""
import theory.simulate, theory.solvers.integrate, fitting.fit, fitting.estimators.model_fit, fitting.capability, figures.training
import empirical.data, empirical.images.render, empirical.images.grid
from theory.simulate import main as simulate
from fitting.fit import main as fit
assert simulate(['--preset', 'fig9b', '--out', r'{tmp_path}']) == 0
assert fit([r'{tmp_path / "trajectories.csv"}', '--model', 'eq2', '--no-figures']) == 0
"""
    proc = run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_the_probe_does_need_torch(tmp_path):
    proc = run("import empirical.probe", tmp_path)
    assert proc.returncode != 0 and "torch" in proc.stderr


def test_empirical_never_imports_fitting(tmp_path):
    """Training and elicitation stand on their own: block fitting and import every empirical module."""
    block = BLOCK_TORCH.replace(
        'name == "torch" or name.startswith("torch.")',
        'name == "fitting" or name.startswith("fitting.")',
    )
    modules = sorted(
        ".".join(p.relative_to(ROOT / "empirical").with_suffix("").parts)
        for p in (ROOT / "empirical").rglob("*.py")
        if p.stem != "__init__"
    )
    code = (
        block
        + "import importlib\n"
        + "".join(f"importlib.import_module('empirical.{m}')\n" for m in modules)
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
