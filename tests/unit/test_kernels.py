"""Compiled integrators cached across processes (theory.solvers.kernels): a second process loads the machine code
from numba's cache instead of compiling it, with the same results as the in-memory kernel."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from theory.solvers import dopri
from theory.solvers import kernels
from theory.solvers.integrate import time_grid
from theory.models.paper import eq1
from theory.models.user_energy import from_expression

CHILD = """
import json, sys
import numpy as np
import pytest
from theory.solvers.integrate import integrate, kernel, time_grid
from theory.models.paper import eq1
land = eq1()
sol = integrate(land, time_grid(25, 50), {"t_switch": np.c_[np.linspace(2, 12, 70), np.zeros(70)]}, method="dopri")
run = kernel(land)
print(json.dumps({"hits": sum(run.stats.cache_hits.values()), "misses": sum(run.stats.cache_misses.values()),
                  "module": run.__module__, "last": sol.z[:, -1].tolist()}))
"""


def child(cache: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow  # long end to end: run with -m slow
def test_a_second_process_loads_the_kernel_from_the_cache(tmp_path):
    first, second = child(str(tmp_path)), child(str(tmp_path))
    assert first["hits"] == 0 and first["misses"] == 1  # compiled, and written to the cache
    assert second["hits"] == 1 and second["misses"] == 0  # loaded, not compiled
    assert first["module"] == second["module"] and first["module"].startswith(
        "concept_dynamics_kernel_"
    )
    np.testing.assert_array_equal(first["last"], second["last"])
    generated = list((tmp_path / "concept-dynamics-kernels").glob("concept_dynamics_kernel_*.py"))
    assert len(generated) == 1 and "def flow(t, z, p, out):" in generated[0].read_text()


@pytest.mark.slow  # compiles two kernels, 14 s
def test_the_cached_kernel_equals_the_in_memory_one(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    land = eq1()
    t = time_grid(25, 40)
    z0, p = (
        np.full((5, 2), 0.5),
        land.pack(land.resolve({"t_switch": np.c_[np.linspace(2, 12, 5), np.zeros(5)]})),
    )
    cached, memory = (
        dopri.solve(kernels.load(land.flow_source), t, z0, p, rtol=1e-9, atol=1e-11),
        dopri.solve(dopri.kernel(land.flow_source), t, z0, p, rtol=1e-9, atol=1e-11),
    )
    np.testing.assert_array_equal(cached[0], memory[0])
    assert not cached[1].any()


@pytest.mark.slow  # numba compiles a parallel kernel in memory, 15 s; loading from the cache: the tests above
def test_an_unwritable_cache_falls_back_to_compiling_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker))  # the cache folder would lie under a file
    land = from_expression("(z1 - 0.25)**2 + (z2 - 0.75)**2 / 3")  # a flow no other test has loaded
    run = kernels.load(land.flow_source)
    assert not str(run.__module__).startswith("concept_dynamics_kernel_")
    z, status = dopri.solve(
        run, time_grid(10, 5), np.full((1, 2), 0.5), np.empty((1, 0)), rtol=1e-9, atol=1e-11
    )
    assert not status.any() and abs(z[0, -1, 0] - 0.25) < 1e-3


def test_the_cache_folder_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kernels.cache_dir() == tmp_path / "concept-dynamics" / "kernels"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nb"))
    assert kernels.cache_dir() == tmp_path / "nb" / "concept-dynamics-kernels"


def test_a_kernel_module_that_fails_to_load_is_not_kept(tmp_path, monkeypatch):
    """A kernel module that raises as it runs (a compile error, say) leaves no half-made entry
    behind: the next load fails the same way, never with 'has no attribute run'."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    broken = (
        "def f(t, z, p, out):\n    out[0] = 0.0\n\n\nraise RuntimeError('the flow module failed')\n"
    )
    for _ in range(2):
        with pytest.raises(RuntimeError, match="the flow module failed"):
            kernels.load(broken)
    assert not [
        m
        for m in sys.modules
        if m.startswith("concept_dynamics_kernel_") and not hasattr(sys.modules[m], "run")
    ]
