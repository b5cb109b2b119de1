"""Real training: the conditional VDM on synthetic concept images, logged as concept-space
trajectories.

torch is imported only inside this package. The data-generating process (``data``, ``render``) and
the sample grids (``grid``) need numpy and matplotlib only.

Run as ``python -m empirical.<command>`` (or a pipeline command, which imports this package) without
an optional dependency it needs (torch, diffusers, submitit, pandas), a command stops with one line
naming the extra to install, not a traceback.
"""

import os
import sys

# module -> extra
EXTRAS = {
    "torch": "torch",
    "diffusers": "diffusers",
    "submitit": "sweep",
    "pandas": "pandas",
}


def _missing_extra(kind, err, tb, previous=sys.excepthook):
    name = (getattr(err, "name", None) or "").split(".")[0]
    if not (isinstance(err, ModuleNotFoundError) and name in EXTRAS):
        return previous(kind, err, tb)
    parts = (sys.argv[0] if sys.argv else "").removesuffix(".py").split("/")
    module = ".".join(parts[-2:]) if len(parts) > 1 else "empirical"  # .../pipeline/sweep.py
    extra = EXTRAS[name]
    sys.stderr.write(
        f"python -m {module}: error: this command needs {name}, an optional extra: "
        f'pip install -c constraints.txt -e ".[{extra}]" from a clone (the constraints file keeps '
        "torch to its CPU build)\n"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(2)  # the usage exit code of every command; the interpreter was ending anyway


# python -m empirical.<command>: only then, never for an importer
if sys.argv and sys.argv[0] == "-m":
    sys.excepthook = _missing_extra
