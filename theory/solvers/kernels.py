"""Compiled integrators cached across processes: the first dopri solve of a landscape no longer pays
numba's compilation in every new process.

A landscape's kernel is a generated module (theory.solvers.dopri.kernel_source: the landscape's flow
and the integrator), written once to the cache folder under a name keyed by the hash of its source,
numba's and Python's versions, and imported from there with ``cache=True``, so numba's own on-disk
cache applies: the second process loads the machine code instead of compiling it. The folder is
``$NUMBA_CACHE_DIR/concept-dynamics-kernels`` when NUMBA_CACHE_DIR is set, else
``$XDG_CACHE_HOME/concept-dynamics/kernels`` (``~/.cache`` when XDG_CACHE_HOME is unset). Where it
cannot be written, the kernel is built in memory as before (compiled once per process).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

from theory.solvers import dopri
from core.cache import user_cache
from core.files import atomic_write


def cache_dir() -> Path:
    """Where generated kernel modules (and, unless NUMBA_CACHE_DIR says otherwise, numba's cache)
    live."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "concept-dynamics-kernels"
    return user_cache("kernels")


def load(flow_source: str) -> Callable:
    """The batch integrator ``run(t_eval, Z0, P, rtol, atol, max_steps, h_max, out, status)`` for
    a flow's source, from the on-disk cache when possible."""
    import numba

    source = dopri.kernel_source(flow_source, cache=True)
    key = hashlib.sha256("\n".join([source, numba.__version__, sys.version]).encode()).hexdigest()[
        :24
    ]
    name = f"concept_dynamics_kernel_{key}"
    if name in sys.modules:
        return sys.modules[name].run
    path = cache_dir() / f"{name}.py"
    try:
        if not path.exists() or path.read_text() != source:
            atomic_write(path, lambda fh: fh.write(source))
    except OSError:  # a read-only home, a full disk: compile in memory, as before
        return dopri.kernel(flow_source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:  # a half-made module must not answer the next call (without its run)
        del sys.modules[name]
        raise
    return module.run
