"""The CPU's ensemble engine: K runs in threads of one process, one member a core (issue #54).

Each member is updated by its own :meth:`Run.train_step`, drawing from its own streams, as the run
alone would be; the members meet only where a record is written (a training record, an evaluation, a
save): between two records each thread runs its member's updates without waiting for the others, as
separate processes would. A member's training time (``Run.wall``) is its own updates' time, not its
wait for the others at a record. The same interface as empirical.training.stacked's ``Stacked``.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from empirical.training.run import Diverged, Run

SWITCH = 2e-4  # seconds between the threads' hand-overs of the interpreter


def account(run: Run, terms: dict[str, float], took: float) -> None:
    """One update's loss terms into ``run``'s meter, its ``took`` seconds into the run's training
    time."""
    run.meter.add(terms)
    run.wall += took


def updates(run: Run, n: int, stop: threading.Event | None = None) -> Diverged | None:
    """``n`` updates of ``run``, each accounted (fewer once ``stop`` is set); the Diverged that
    stopped it (it is not updated), or None."""
    for _ in range(n):
        if stop is not None and stop.is_set():
            return None
        tick = time.perf_counter()
        try:
            terms = run.train_step()
        except Diverged as err:
            return err
        account(run, terms, time.perf_counter() - tick)
    return None


class Threaded:
    """K opened runs at the same step, ``workers`` of them at a time in threads of this process (the
    CPU's engine: one member a core, as separate processes would be, without their start-up and
    memory)."""

    def __init__(self, runs: Sequence[Run], workers: int):
        if len({run.step for run in runs}) != 1:
            raise ValueError(
                f"an ensemble trains members at one step; these are at {[r.step for r in runs]}"
            )
        self.runs, self.cfg = list(runs), runs[0].cfg
        self.pool = ThreadPoolExecutor(max(1, min(workers, len(self.runs))))
        # set when the ensemble stops (an error in a thread, an interrupt): the other threads end
        # their stretch
        self.stop = threading.Event()
        # the threads hand the interpreter over between torch's calls sooner than every 5 ms: a
        # member waits
        # less for the other's Python (about +8% at K = 2 on 2 cores, benchmarks/ensemble_speed.py)
        self.switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH)
        for run in self.runs:
            run.vdm.train()

    def train_step(self) -> list[dict[str, float] | Diverged]:
        """One update of every member: its loss terms, or its :class:`Diverged` (it alone is not
        updated)."""

        def one(run: Run):
            try:
                return run.train_step()
            except Diverged as err:
                return err

        return self._map(one)

    def train_steps(self, n: int) -> list[Diverged | None]:
        """``n`` updates of every member, each thread running its member's without waiting for the
        others (each update accounted: :func:`account`). Per member: None, or the Diverged that
        stopped it (it alone)."""

        def stretch(run: Run) -> Diverged | None:
            try:
                return updates(run, n, self.stop)
            except BaseException:
                self.stop.set()
                raise

        return self._map(stretch)

    def each(self, work) -> None:
        """``work(run)`` for every member, in the threads."""
        self._map(work)

    def _map(self, work) -> list:
        if len(self.runs) == 1:  # no thread for one member
            return [work(self.runs[0])]
        return list(self.pool.map(work, self.runs))

    def unstack(self) -> None:
        """Nothing to do: each member trains its own model."""

    def naive_images(self) -> None:
        """None: each member draws its own samples (in its thread)."""

    def elicited(self) -> None:
        """None: each member draws its own protocols' samples (in its thread)."""

    sync_schedule = unstack

    def close(self) -> None:
        self.stop.set()
        self.pool.shutdown()
        sys.setswitchinterval(self.switch)
