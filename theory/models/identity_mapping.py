"""The structured identity mapping (SIM): a toy theory whose concept switches are outcomes, not
inputs.

From "Swing-by Dynamics in Concept Learning and Compositional Generalization" (Yang, Park, Lubana,
Okawa, Hu & Tanaka, ICLR 2025). Unlike Eq. 1, where the switch times are parameters, here they come
out of solved learning dynamics.

**Task.** s concept clusters in R^d (s <= d). Cluster p is Gaussian around mu_p e_p, with the shared
covariance diag(sigma_1^2, ..., sigma_s^2, 0, ...). The target of every input is the input itself.
Averaged over the clusters, the second moment of the inputs is A = diag(a), with the concept signal

    a_p = mu_p^2 / s + sigma_p^2      (0 beyond the s concept directions),

so a linear map W has training loss L(W) = 1/2 ||(W - I) A^(1/2)||_F^2. The out-of-distribution
probe is x_hat = sum_p mu_p e_p: every concept at once, a composition never seen in training. Its
loss is 1/2 ||W x_hat - x_hat||^2.

**Models.**

- ``sim1``, one linear layer under gradient flow dW/dt = -(W - I) A, in closed form:
  W(t) = I + (W(0) - I) exp(-A t). Coordinate k of the output at z is
  (1 - e^{-a_k t}) z_k + sum_i e^{-a_i t} w_ki(0) z_i. Each concept is learned at its own rate a_k,
  independently.
- ``sim2`` (:mod:`theory.solvers.two_layer`, which integrates this module's :func:`u_flow`), the
  symmetric two-layer linear model W = U U^T from a start U(0), integrated numerically:

      dW/dt = W A + A W - 1/2 (A W^2 + W^2 A + 2 W A W).

  The exact gradient flow on U moves W at twice this rate, so this is a time rescaling. Diagonal
  entries grow logistically, in order of signal. The off-diagonal entries grow with them, so the
  output at x_hat can swing toward a training cluster and back ("swing-by"), while the training loss
  falls monotonically.

**Two conventions of the authors' figure scripts** (FFTYYY/ConceptDynamics-code, read for facts
only): their flow uses the signal squared, A^2 (``signal="a2"``), where gradient descent on the data
gives A (``signal="a"``, the default: the paper's printed equations); and their start is U(0)
uniform in [0, scale) (``start="uniform-positive"``, every entry positive) where the default draws
it Gaussian (``start="gaussian"``: entries N(0, scale^2 / d), off-diagonals of either sign). A rise
of the OOD loss needs a positive off-diagonal start, so the start law sets how often multiple
descent happens (docs/theory.md has the rates).

**Concept space.** Coordinate p of the model's output at an input, divided by mu_p. The trained
target is 1 for the concepts present and 0 for the others. A swing can overshoot, so coordinates are
not confined to [0, 1].

Only numpy and scipy are used here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import NDArray


# the flow's rates: the signal (the printed equations) or its square (the authors' scripts)
SIGNALS = (
    "a",
    "a2",
)
# U(0): N(0, scale^2/d), or uniform in [0, scale) (the authors' scripts)
STARTS = (
    "gaussian",
    "uniform-positive",
)


@dataclass(frozen=True)
class Task:
    """A SIM task: the cluster centres' norms ``mu`` (one per concept), their spread ``sigma`` (one
    per concept, or one for all) and the ambient dimension ``d`` (default: the number of
    concepts)."""

    mu: tuple[float, ...]
    sigma: tuple[float, ...] | float = 0.05
    d: int | None = None

    def __post_init__(self) -> None:
        mu = tuple(float(m) for m in np.atleast_1d(self.mu))
        s = len(mu)
        sigma = tuple(float(v) for v in np.broadcast_to(np.atleast_1d(self.sigma), (s,)))
        if s < 1 or not all(np.isfinite(mu)) or min(mu) <= 0:
            raise ValueError(f"mu={list(mu)}: give one positive, finite cluster norm per concept")
        if not all(np.isfinite(sigma)) or min(sigma) < 0:
            raise ValueError(f"sigma={list(sigma)}: spreads must be finite and >= 0")
        d = s if self.d is None else int(self.d)
        if d < s:
            raise ValueError(
                f"d={d}: the ambient dimension must be at least the number of concepts ({s})"
            )
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "d", d)

    @property
    def s(self) -> int:
        """The number of concepts."""
        return len(self.mu)

    @property
    def signal(self) -> NDArray[np.float64]:
        """(d,) a: mu_p^2 / s + sigma_p^2 for the concept directions, 0 beyond them."""
        a = np.zeros(self.d)
        a[: self.s] = np.square(self.mu) / self.s + np.square(self.sigma)
        return a

    @property
    def x_hat(self) -> NDArray[np.float64]:
        """(d,) the out-of-distribution probe: every concept at once, sum_p mu_p e_p."""
        x = np.zeros(self.d)
        x[: self.s] = self.mu
        return x

    def centre(self, p: int) -> NDArray[np.float64]:
        """(d,) the centre of cluster p (0-based): mu_p e_p."""
        x = np.zeros(self.d)
        x[p] = self.mu[p]
        return x

    def initial(
        self, scale: float = 0.1, seed: int = 0, start: str = "gaussian"
    ) -> NDArray[np.float64]:
        """(d, d) a start U(0) of the two-layer model (W(0) = U(0) U(0)^T): entries N(0, scale^2 /
        d) (``gaussian``), or uniform in [0, scale) (``uniform-positive``, the authors' scripts)."""
        if not (np.isfinite(scale) and scale >= 0):
            raise ValueError(f"scale={scale}: the initial scale must be finite and >= 0")
        rng = np.random.default_rng(seed)
        if start == "gaussian":
            return scale * rng.standard_normal((self.d, self.d)) / np.sqrt(self.d)
        if start == "uniform-positive":
            return rng.uniform(0, scale, (self.d, self.d))
        raise ValueError(f"start={start!r}: valid: {', '.join(STARTS)}")

    def rates(self, signal: str = "a") -> NDArray[np.float64]:
        """(d,) the rates the flow runs at: the signal a (``a``, the printed equations) or a^2
        (``a2``, the authors' figure scripts)."""
        if signal not in SIGNALS:
            raise ValueError(f"signal={signal!r}: valid: {', '.join(SIGNALS)}")
        return self.signal ** (2 if signal == "a2" else 1)

    def sample(self, n: int, seed: int = 0) -> NDArray[np.float64]:
        """(s * n, d) training inputs: n draws from each cluster (the targets are the inputs
        themselves)."""
        rng = np.random.default_rng(seed)
        x = np.zeros((self.s * n, self.d))
        for p in range(self.s):
            rows = slice(p * n, (p + 1) * n)
            x[rows, : self.s] = rng.standard_normal((n, self.s)) * self.sigma
            x[rows, p] += self.mu[p]
        return x


def check_start(task: Task, t: Sequence[float], w0: NDArray) -> tuple[NDArray, NDArray]:
    t = np.asarray(t, dtype=float)
    w0 = np.asarray(w0, dtype=float)
    if (
        t.ndim != 1
        or t.size < 1
        or not np.all(np.isfinite(t))
        or np.any(np.diff(t) <= 0)
        or t[0] < 0
    ):
        raise ValueError("t must be finite, >= 0 and strictly increasing")
    if w0.shape != (task.d, task.d) or not np.all(np.isfinite(w0)):
        raise ValueError(
            f"the start (W(0) or U(0)) must be a finite ({task.d}, {task.d}) matrix, got shape "
            f"{w0.shape}"
        )
    return t, w0


def sim1(task: Task, t: Sequence[float], w0: NDArray, *, signal: str = "a") -> NDArray[np.float64]:
    """(T, d, d) W(t) of the one-layer model: I + (W(0) - I) exp(-A t), exactly (A^2 with
    ``signal="a2"``)."""
    t, w0 = check_start(task, t, w0)
    eye = np.eye(task.d)
    return eye + (w0 - eye)[None] * np.exp(-np.outer(t, task.rates(signal)))[:, None, :]


def flow(w: NDArray, a: NDArray) -> NDArray[np.float64]:
    """dW/dt of the symmetric two-layer model: W A + A W - 1/2 (A W^2 + W^2 A + 2 W A W)."""
    aw, wa = a[:, None] * w, w * a[None, :]
    w2 = w @ w
    return wa + aw - 0.5 * (a[:, None] * w2 + w2 * a[None, :] + 2 * (wa @ w))


def u_flow(a: NDArray):
    """The two-layer model's term for signals ``a`` (d,): dU/dt = -1/2 G U with G = (W - I) A + A (W
    - I) and W = U U^T, as a function of (t, U raveled), which moves W exactly by :func:`flow` and
      keeps it positive
    semi-definite (integrating W itself, a negative eigenvalue from round-off would blow up in
    finite time)."""
    a = np.asarray(a, dtype=float)
    d, eye = a.size, np.eye(a.size)

    def rhs(_, y):
        u = y.reshape(d, d)
        dev = u @ u.T - eye
        g = dev * a[None, :] + a[:, None] * dev
        return (-0.5 * g @ u).ravel()

    return rhs


def train_loss(task: Task, w: NDArray) -> NDArray[np.float64]:
    """(T,) 1/2 ||(W - I) A^(1/2)||_F^2 along a path W (T, d, d)."""
    dev = np.asarray(w) - np.eye(task.d)
    return 0.5 * np.einsum("tij,j->t", dev**2, task.signal)


def ood_loss(task: Task, w: NDArray) -> NDArray[np.float64]:
    """(T,) 1/2 ||W x_hat - x_hat||^2 along a path W (T, d, d)."""
    x = task.x_hat
    return 0.5 * np.sum((np.asarray(w) @ x - x) ** 2, axis=-1)


def coordinates(task: Task, w: NDArray, x: NDArray) -> NDArray[np.float64]:
    """(T, s) concept-space coordinates of the output at input x: (W x)_p / mu_p for each concept
    p."""
    return (np.asarray(w) @ np.asarray(x, dtype=float))[..., : task.s] / np.array(task.mu)


def plateau(t: NDArray, y: NDArray, *, rel: float = 0.05, floor: float = 0.01) -> float:
    """The longest time a curve stays within ``rel`` of where it entered a stretch, while above
    ``floor`` times its start: a loss stuck above zero (the SIM's failure mode) plateaus for most of
    the run."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    longest = 0.0
    for i in np.flatnonzero(y >= floor * y[0]):
        away = np.flatnonzero((np.abs(y[i:] - y[i]) > rel * abs(y[i])) | (y[i:] < floor * y[0]))
        end = i + (away[0] if away.size else y.size - i) - 1
        longest = max(longest, float(t[end] - t[i]))
    return longest


def learned_order(t: NDArray, w: NDArray, s: int, level: float = 0.5) -> list[int]:
    """The concepts (0-based) in the order their diagonal entry w_pp first reaches ``level``; never:
    last."""
    first = []
    for p in range(s):
        hit = np.flatnonzero(np.asarray(w)[:, p, p] >= level)
        first.append(float(t[hit[0]]) if hit.size else np.inf)
    return sorted(range(s), key=lambda p: first[p])


def rises(y: NDArray, *, prominence: float = 1e-3) -> int:
    """How many times a curve rises again after falling, counting only rises of at least
    ``prominence`` times its range: 0 for a monotone descent, 2 for a triple descent."""
    from scipy.signal import find_peaks

    y = np.asarray(y, dtype=float)
    span = float(np.ptp(y)) if y.size else 0.0
    if span == 0:
        return 0
    peaks, _ = find_peaks(y, prominence=prominence * span)
    return int(peaks.size)
