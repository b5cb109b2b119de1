"""Standard output that survives its reader going away (``... | head``): every command's stdout
while it runs (core.cli.command)."""

from __future__ import annotations

import os


class PipeSafe:
    """stdout that a reader going away (``... | head``, ``| true``) cannot stop: the command
    finishes its work and writes its files; what it would still print goes nowhere."""

    def __init__(self, stream):
        self._stream = stream

    def _gone(self) -> None:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        self._stream = open(os.devnull, "w")

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name):
        return getattr(self._stream, name)
