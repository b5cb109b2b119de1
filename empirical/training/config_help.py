"""The ``--set`` keys as ``empirical.train --help`` teaches them: each key's meaning, read from
TrainConfig's docstring (the one place it is written), with the tiny preset's default."""

from __future__ import annotations

import textwrap

from empirical.training.config import TrainConfig


def key_help() -> dict[str, str]:
    """Each --set key's meaning, whole, read from TrainConfig's docstring (the one place it is
    written): a ``- key: meaning`` bullet and the lines indented under it."""
    meaning, key, bullet = {}, None, 0
    for line in (TrainConfig.__doc__ or "").splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip().startswith("- ") and ": " in line:
            key, text = line.strip()[2:].split(": ", 1)
            meaning[key], bullet = text, indent
        elif key and line.strip() and indent > bullet:
            meaning[key] += " " + line.strip()
        else:
            key = None
    return meaning


def describe_keys() -> str:
    """The --set keys with their tiny defaults and meanings, for --help (100 columns)."""
    defaults, meaning = TrainConfig().to_json(), key_help()
    width = max(len(k) for k in meaning)
    pad = " " * (width + 4)
    return "\n".join(
        textwrap.fill(
            f"{meaning[k]} (tiny: {defaults[k] if defaults[k] != '' else 'none'})",
            100,
            initial_indent=f"  {k:<{width}}  ",
            subsequent_indent=pad,
        )
        for k in defaults
        if k != "preset"
    )
