"""A batched Dormand-Prince 5(4) integrator in numba: one adaptive solve per trajectory, in
parallel.

Each trajectory gets its own step-size control (the same embedded pair, error norm, controller and
4th-order continuous extension as scipy's ``RK45``): the solver takes its natural steps and fills
the output times it passes by dense output, stepping exactly onto the final time. Trajectories are
distributed over cores with ``prange``.

Why hand-written: scipy's ``solve_ivp`` has no batch-over-parameters API and a large per-call
overhead (the authors looped over it); stacking all systems into one call shares one step size.
numbalsoda has no wheel for CPython 3.11. The kernel is differential-tested against ``solve_ivp``.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable

import numpy as np
from numba import prange

# Dormand & Prince (1980) RK5(4)7M tableau.
C2, C3, C4, C5 = 1 / 5, 3 / 10, 4 / 5, 8 / 9
A21 = 1 / 5
A31, A32 = 3 / 40, 9 / 40
A41, A42, A43 = 44 / 45, -56 / 15, 32 / 9
A51, A52, A53, A54 = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
A61, A62, A63, A64, A65 = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
# 5th order (b2 = b7 = 0)
B1, B3, B4, B5, B6 = (
    35 / 384,
    500 / 1113,
    125 / 192,
    -2187 / 6784,
    11 / 84,
)
# b - b*: the difference to the embedded 4th-order solution (local error estimate)
E1, E3, E4, E5, E6, E7 = 71 / 57600, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40

# Dense output (Shampine 1986): y(t + x h) = y + h Σ_i k_i (P_i1 x + P_i2 x² + P_i3 x³ + P_i4 x⁴).
P1 = (1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432)
P3 = (0.0, 131558114200 / 32700410799, -68118460800 / 10900136933, 87487479700 / 32700410799)
P4 = (0.0, -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072)
P5 = (0.0, 127303824393 / 49829197408, -318862633887 / 49829197408, 701980252875 / 199316789632)
P6 = (0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844)
P7 = (0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423)  # row 2 is zero

SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0

OK, TOO_MANY_STEPS, STEP_TOO_SMALL = 0, 1, 2
NOT_FINITE = 4  # (3 is the exact path's UNRESOLVED)
H_FLOOR = 1e-10  # the first step's least length, as a fraction of the integration span
MESSAGES = {
    OK: "ok",
    TOO_MANY_STEPS: "too many steps",
    STEP_TOO_SMALL: "step size underflow",
    NOT_FINITE: "the solution is not finite (overflow)",
}

# The integrator, as plain Python: :func:`kernel_source` turns it into a numba module together with
# a
# landscape's generated ``flow(t, z, p, out)`` (theory.solvers.kernels caches that module's compiled
# code on disk).
flow = None  # bound to the landscape's flow in each generated kernel module


def norm(err, y, y_new, rtol, atol):
    acc = 0.0
    for i in range(err.size):
        sc = atol + rtol * max(abs(y[i]), abs(y_new[i]))
        acc += (err[i] / sc) ** 2
    return np.sqrt(acc / err.size)


def initial_step(t, y, p, k1, ys, k2, rtol, atol, t_end):
    """The first step's length (Hairer, Norsett & Wanner, Sec. II.4), as in scipy; k1 = flow(t,
    y)."""
    d = y.size
    d0 = 0.0
    d1 = 0.0
    for i in range(d):
        sc = atol + rtol * abs(y[i])
        d0 += (y[i] / sc) ** 2
        d1 += (k1[i] / sc) ** 2
    d0 = np.sqrt(d0 / d)
    d1 = np.sqrt(d1 / d)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    for i in range(d):
        ys[i] = y[i] + h0 * k1[i]
    flow(t + h0, ys, p, k2)
    d2 = 0.0
    for i in range(d):
        sc = atol + rtol * abs(y[i])
        d2 += ((k2[i] - k1[i]) / sc) ** 2
    d2 = np.sqrt(d2 / d) / h0
    if max(d1, d2) <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1 / 5)
    # floor: with |y0| tiny but above the heuristic's 1e-5 (in units of atol), h0 = 0.01 d0 / d1 can
    # fall below
    # the underflow test's 1e-14 before the first step; the controller still shrinks a step that is
    # too long
    return max(min(100 * h0, h1), H_FLOOR * (t_end - t))


def dense(out, j, x, hs, y, k1, k3, k4, k5, k6, k7):
    """The continuous extension at y(t + x hs), written into out[j]."""
    x2 = x * x
    x3 = x2 * x
    x4 = x3 * x
    for i in range(y.size):
        out[j, i] = y[i] + hs * (
            k1[i] * (P1[0] * x + P1[1] * x2 + P1[2] * x3 + P1[3] * x4)
            + k3[i] * (P3[1] * x2 + P3[2] * x3 + P3[3] * x4)
            + k4[i] * (P4[1] * x2 + P4[2] * x3 + P4[3] * x4)
            + k5[i] * (P5[1] * x2 + P5[2] * x3 + P5[3] * x4)
            + k6[i] * (P6[1] * x2 + P6[2] * x3 + P6[3] * x4)
            + k7[i] * (P7[1] * x2 + P7[2] * x3 + P7[3] * x4)
        )


def one(t_eval, y0, p, rtol, atol, max_steps, h_max, out):
    d = y0.size
    y = y0.copy()
    y_new, ys, err = np.empty(d), np.empty(d), np.empty(d)
    k1, k2, k3, k4 = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    k5, k6, k7 = np.empty(d), np.empty(d), np.empty(d)
    t, t_end = t_eval[0], t_eval[-1]
    out[0, :] = y
    flow(t, y, p, k1)
    h = min(initial_step(t, y, p, k1, ys, k2, rtol, atol, t_end), h_max)
    steps, j = 0, 1  # j: the next output to fill
    while j < t_eval.size:
        steps += 1
        if steps > max_steps:
            return TOO_MANY_STEPS
        clipped = h >= t_end - t
        hs = t_end - t if clipped else h
        if not clipped and hs < 1e-14 * max(1.0, abs(t)):
            return STEP_TOO_SMALL
        for i in range(d):
            ys[i] = y[i] + hs * A21 * k1[i]
        flow(t + C2 * hs, ys, p, k2)
        for i in range(d):
            ys[i] = y[i] + hs * (A31 * k1[i] + A32 * k2[i])
        flow(t + C3 * hs, ys, p, k3)
        for i in range(d):
            ys[i] = y[i] + hs * (A41 * k1[i] + A42 * k2[i] + A43 * k3[i])
        flow(t + C4 * hs, ys, p, k4)
        for i in range(d):
            ys[i] = y[i] + hs * (A51 * k1[i] + A52 * k2[i] + A53 * k3[i] + A54 * k4[i])
        flow(t + C5 * hs, ys, p, k5)
        for i in range(d):
            ys[i] = y[i] + hs * (
                A61 * k1[i] + A62 * k2[i] + A63 * k3[i] + A64 * k4[i] + A65 * k5[i]
            )
        flow(t + hs, ys, p, k6)
        for i in range(d):
            y_new[i] = y[i] + hs * (B1 * k1[i] + B3 * k3[i] + B4 * k4[i] + B5 * k5[i] + B6 * k6[i])
        flow(t + hs, y_new, p, k7)
        for i in range(d):
            err[i] = hs * (
                E1 * k1[i] + E3 * k3[i] + E4 * k4[i] + E5 * k5[i] + E6 * k6[i] + E7 * k7[i]
            )
        e = norm(err, y, y_new, rtol, atol)
        if not e <= 1.0:  # NaN too (overflow): rejected, the step shrinks until it underflows
            h = hs * (max(MIN_FACTOR, SAFETY * e**-0.2) if e == e else MIN_FACTOR)
            continue
        t_new = t_end if clipped else t + hs
        while j < t_eval.size and t_eval[j] < t_new:  # outputs inside the step: dense output
            dense(out, j, (t_eval[j] - t) / hs, hs, y, k1, k3, k4, k5, k6, k7)
            j += 1
        if j < t_eval.size and t_eval[j] == t_new:  # an output on the step's end: exact
            out[j, :] = y_new
            j += 1
        t = t_new
        y[:] = y_new
        k1[:] = k7  # first same as last
        h = min(hs * (MAX_FACTOR if e == 0.0 else min(MAX_FACTOR, SAFETY * e**-0.2)), h_max)
    return OK


def run(t_eval, Z0, P, rtol, atol, max_steps, h_max, out, status):
    for n in prange(Z0.shape[0]):
        status[n] = one(t_eval, Z0[n], P[n], rtol, atol, max_steps, h_max, out[n])


INTEGRATOR = (norm, initial_step, dense, one, run)
# error_model='numpy': a division by zero gives inf or NaN (which the step controller rejects),
# never an exception
# raised inside the kernel
JIT = {
    "norm": "@numba.njit(cache={cache}, error_model='numpy')",
    "initial_step": "@numba.njit(cache={cache}, error_model='numpy')",
    "dense": "@numba.njit(inline='always', cache={cache}, error_model='numpy')",
    "one": "@numba.njit(cache={cache}, error_model='numpy')",
    "run": "@numba.njit(parallel=True, cache={cache}, error_model='numpy')",
}


def kernel_source(flow_source: str, *, cache: bool) -> str:
    """The source of a kernel module: this module's constants, the jitted ``flow`` and the
    integrator.

    ``run(t_eval, Z0, P, rtol, atol, max_steps, h_max, out, status)`` integrates (steps no longer
    than h_max) t_eval (T,), Z0 (N, D),
    P (N, P) into out (N, T, D) in place, one status (N,) per trajectory."""
    constants = "".join(f"{name} = {value!r}\n" for name, value in _constants().items())
    parts = [
        "import math\n",
        "import numba\n",
        "import numpy as np\n",
        "from numba import prange\n\n",
        constants,
        "\n\n",
        f"@numba.njit(cache={cache}, fastmath=False, error_model='numpy')\n",
        flow_source.replace("def f(", "def flow(", 1),
    ]
    for fn in INTEGRATOR:
        parts += ["\n\n", JIT[fn.__name__].format(cache=cache) + "\n", inspect.getsource(fn)]
    return "".join(parts)


def _constants() -> dict:
    names = [n for n in globals() if n.isupper() and n not in ("JIT", "INTEGRATOR", "MESSAGES")]
    return {n: globals()[n] for n in names}


def kernel(flow_source: str) -> Callable:
    """The parallel batch integrator for a flow given as source (``def f(t, z, p, out)``), built in
    memory (compiled on the first call, seconds; nothing cached on disk: see theory.solvers.kernels
    for that)."""
    namespace: dict = {}
    exec(compile(kernel_source(flow_source, cache=False), "<dopri kernel>", "exec"), namespace)
    return namespace["run"]


def solve(
    run: Callable,
    t_eval: np.ndarray,
    Z0: np.ndarray,
    P: np.ndarray,
    *,
    rtol: float,
    atol: float,
    max_steps: int = 1_000_000,
    max_step: float = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """Integrate N systems with a :func:`kernel`, no step longer than ``max_step``; returns
    (out (N, T, D), status (N,))."""
    Z0 = np.ascontiguousarray(Z0, dtype=np.float64)
    P = np.ascontiguousarray(P, dtype=np.float64)
    t_eval = np.ascontiguousarray(t_eval, dtype=np.float64)
    out = np.empty((Z0.shape[0], t_eval.size, Z0.shape[1]))
    status = np.zeros(Z0.shape[0], dtype=np.int64)
    run(t_eval, Z0, P, float(rtol), float(atol), int(max_steps), float(max_step), out, status)
    return out, status
