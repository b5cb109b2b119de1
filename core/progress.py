"""Progress on long work: a tqdm bar on a terminal, and plain lines where stderr is a log file.

tqdm draws nothing when stderr is not a terminal (its ``disable=None``), so a command whose output
went to a file was silent for minutes (issue #52: an elicitation, 5 minutes). :func:`bar` keeps
tqdm's bar on a terminal and, elsewhere, writes one line at most every ``every`` seconds (and at the
end):

    elicit: 12/40 ckpt (30%), 95 s, about 221 s left

    with bar(total=len(todo), desc="elicit", unit="ckpt") as progress:
        for item in todo:
            ...
            progress.update(1)
"""

from __future__ import annotations

import sys
import time
from typing import Any, Iterable, Iterator

EVERY = 30.0  # seconds between two plain lines


class _Lines:
    """tqdm's small interface (update, set_postfix, refresh, write, close, iteration), as occasional
    lines on stderr."""

    def __init__(
        self,
        iterable: Iterable | None,
        total: int | None,
        desc: str,
        unit: str,
        initial: int,
        every: float,
    ):
        self.total, self.desc, self.unit, self.n, self.every = total, desc, unit, initial, every
        self.start = self.last = time.monotonic()
        self.first, self.postfix, self.iterable, self.closed = initial, "", iterable, False

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable or ():
                yield item
                self.update(1)
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        if time.monotonic() - self.last >= self.every:
            self._say()

    def set_postfix(self, refresh: bool = False, **values: Any) -> None:
        self.postfix = ", ".join(f"{k} {v}" for k, v in values.items())

    def refresh(self) -> None:
        """A line now if ``every`` seconds have passed since the last (tqdm redraws its bar
        here)."""
        if time.monotonic() - self.last >= self.every:
            self._say()

    def write(self, text: str, file: Any = None) -> None:
        """A message on its own line (tqdm.write)."""
        print(text, file=file or sys.stderr, flush=True)

    def close(self) -> None:
        if not self.closed and (self.n > self.first or self.total == 0):
            self._say()
        self.closed = True

    def _say(self) -> None:
        self.last = now = time.monotonic()
        spent, done = now - self.start, self.n - self.first
        text = f"{self.desc}: {self.n}"
        if self.total:
            text += f"/{self.total} {self.unit} ({100 * self.n / self.total:.0f}%), {spent:.0f} s"
            if 0 < done and self.n < self.total:
                text += f", about {spent / done * (self.total - self.n):.0f} s left"
        else:
            text += f" {self.unit}, {spent:.0f} s"
        print(text + (f"; {self.postfix}" if self.postfix else ""), file=sys.stderr, flush=True)

    def __enter__(self) -> "_Lines":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Silent(_Lines):
    def _say(self) -> None:
        pass


def bar(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    initial: int = 0,
    enabled: bool = True,
    every: float = EVERY,
    **tqdm_options: Any,
):
    """A progress bar (tqdm) on a terminal, plain lines elsewhere, nothing when not ``enabled``.
    With an ``iterable``, iterate over what this returns (as tqdm)."""
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    if enabled and sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, **tqdm_options)
    return (_Lines if enabled else _Silent)(iterable, total, desc, unit, initial, every)
