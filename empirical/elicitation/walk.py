"""Concept space for your own model: walk its checkpoints with a sampler and a reader, write the
trajectory log.

Bring two objects and a list of checkpoints; get the log every fitting command reads
(``trajectories.csv`` with its sidecar, the format of core/trajectory.py):

    from empirical.elicitation.walk import Prompt, walk

    class MySampler:                        # any object with this method
        def sample(self, checkpoint, prompt: Prompt, n: int, seed: int):
            ...                             # n images of class prompt.label, reproducible by seed

    class MyReader:                         # any object with these two members
        concepts = ("color", "size")
        def read(self, images):
            ...                             # (P(value 1) (n, C) per concept, readable (n,) bool)

    walk([(0, "ckpt/0.pt"), (500, "ckpt/500.pt"), ...], MySampler(), MyReader(), "runs/mine",
         classes=["00", "01", "10", "11"], held_out=["11"], strengths=[1.5, 2, 3])

- **checkpoint**: whatever your sampler takes (a path, a state dict, a model); the walk only passes
  it on. Steps are integers >= 0 in increasing order.
- **sampler**: ``sample(checkpoint, prompt, n, seed)`` returns ``n`` images (any array-like or list
  whose length is n; the walk hands it to the reader unchanged). ``prompt.label`` is the class (one
  0/1 digit per concept, e.g. ``"11"``), ``prompt.strength`` the over-prompting factor (1 is the
  plain prompt; a sampler that cannot over-prompt raises for other values, and the walk is run
  without ``strengths``). The same seed must give the same images.
- **reader**: ``concepts`` (names) and ``read(images)``: per image the probability of value 1 of
  each concept, in [0, 1], and whether it could be read at all (a reader that abstains marks those
  False; they count against the accuracy and are left out of the point). Concepts are binary. The
  package's probe is one reader (:class:`empirical.probing.reader.ProbeReader`).

Per checkpoint and class the walk writes one reading: the mean probability over the readable images
(the point in concept space; missing when none is readable), the joint accuracy (the share of all
images read as the class), and the share of images read as each corner and as unreadable. Protocols:
``naive`` (every class, plain prompt) and, with ``strengths``, ``overprompt`` for the ``held_out``
classes: each strength is tried on a draw of its own, the best is scored on the naive draw's seed
(so no strength is scored on the images that chose it; the setting and its selection accuracy are
logged). Over-prompting is the hidden-capability protocol that needs no model internals; latent
intervention needs a hook on the conditioning vector, and embedding patching the weights of the
class embedding of a later checkpoint: neither is available through a sampler.

The walk saves every reading in ``OUT/walk.json`` after each checkpoint and rewrites
``OUT/trajectories.csv``: interrupted, the same call resumes after the last finished checkpoint;
called with other settings on the same folder, it refuses. Then, on the folder: ``python -m
fitting.turn OUT``, ``python -m fitting.capability OUT``, ``python -m figures.training OUT``,
``python -m fitting.fit OUT/trajectories.csv``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from empirical.training import runlog
from empirical.training.runlog import Logged
from core.progress import bar as progress_bar
from core.files import read_json, write_json
from core.trajectory import UNREADABLE, write_csv

# the seed streams: every score (naive and the chosen strength), and the draws that choose
SCORE, SELECT = (
    0,
    1,
)


@dataclass(frozen=True)
class Prompt:
    """What the sampler is asked for: a class (one 0/1 digit per concept) at an over-prompting
    strength."""

    label: str
    strength: float = 1.0


class Sampler(Protocol):
    def sample(self, checkpoint: Any, prompt: Prompt, n: int, seed: int) -> Any:
        """``n`` images of ``prompt`` from ``checkpoint``, the same for the same seed."""


class Reader(Protocol):
    concepts: Sequence[str]

    def read(self, images: Any) -> tuple[Any, Any]:
        """(probabilities (n, C) of each concept's value 1 in [0, 1], readable (n,) booleans)."""


def seed_for(seed: int, step: int, label: str, stream: int = SCORE) -> int:
    """The sampler's seed for (walk seed, step, class, stream): reproducible and independent across
    them."""
    digits = [int(d) for d in label]
    return int(
        np.random.SeedSequence([seed, step, stream, len(digits), *digits]).generate_state(1)[0] >> 1
    )


def corners(width: int) -> list[str]:
    """Every class label of ``width`` binary concepts: 00, 01, 10, 11 for two."""
    return ["".join(bits) for bits in itertools.product("01", repeat=width)]


def reading(step: int, label: str, probabilities: Any, readable: Any, n: int, where: str) -> Logged:
    """One reader output -> the logged reading of a class; ValueError naming ``where`` for a bad
    output."""
    prob = np.asarray(probabilities, dtype=float)
    ok = np.asarray(readable)
    width = len(label)
    if prob.shape != (n, width):
        raise ValueError(
            f"{where}: the reader returned probabilities of shape {prob.shape}; expected ({n}, "
            f"{width}): "
            "one row per image, one column per concept"
        )
    if not np.all(np.isfinite(prob)) or prob.min(initial=0) < 0 or prob.max(initial=0) > 1:
        bad = prob[~(np.isfinite(prob) & (prob >= 0) & (prob <= 1))][0]
        raise ValueError(
            f"{where}: the reader returned a probability {float(bad)!r}; each must lie in [0, 1]"
        )
    if ok.shape != (n,) or ok.dtype != bool:
        raise ValueError(
            f"{where}: the reader returned readable of shape {ok.shape} and dtype {ok.dtype}; "
            "expected "
            f"({n},) booleans (True where the image could be read)"
        )
    read_as = (
        np.array(["".join("1" if p > 0.5 else "0" for p in row) for row in prob])
        if n
        else np.array([], str)
    )
    z = tuple(float(v) for v in prob[ok].mean(axis=0)) if ok.any() else (math.nan,) * width
    shares = {c: float(np.mean(ok & (read_as == c))) for c in corners(width)} | {
        UNREADABLE: float(np.mean(~ok))
    }
    return Logged(step, label, z, float(np.mean(ok & (read_as == label))), shares=shares, samples=n)


def _not_finite(images: Any) -> int:
    """How many images of a numeric batch hold a NaN or infinite pixel (0 for a batch numpy cannot
    read)."""
    try:
        batch = np.asarray(images)
    except Exception:  # PIL images, tensors on a GPU, ...: the reader sees them as they are
        return 0
    if batch.dtype.kind not in "fc" or batch.ndim == 0 or not len(batch):
        return 0
    return int((~np.isfinite(batch.reshape(len(batch), -1))).any(axis=1).sum())


@dataclass
class _Walk:
    sampler: Sampler
    reader: Reader
    samples: int
    seeds: Callable[[int, str, int], int]

    def read(self, step: int, checkpoint: Any, prompt: Prompt, stream: int) -> Logged:
        where = f"step {step}, class {prompt.label}, strength {prompt.strength:g}"
        images = self.sampler.sample(
            checkpoint, prompt, self.samples, self.seeds(step, prompt.label, stream)
        )
        try:
            count = len(images)
        except TypeError:
            raise ValueError(
                f"{where}: the sampler returned {type(images).__name__}, not a batch of images"
            ) from None
        if count != self.samples:
            raise ValueError(
                f"{where}: the sampler returned {count} images; {self.samples} were asked for"
            )
        broken = _not_finite(images)
        if broken:
            raise ValueError(
                f"{where}: the sampler returned {broken} of {count} images holding NaN or "
                "infinite pixels "
                "(the model's output, before any reader); check the checkpoint (a diverged model?)"
            )
        return reading(step, prompt.label, *self.reader.read(images), self.samples, where)

    def overprompt(
        self, step: int, checkpoint: Any, label: str, strengths: Sequence[float]
    ) -> Logged:
        """The best strength on its own draw, scored on the naive draw's seed."""
        tried = [self.read(step, checkpoint, Prompt(label, s), SELECT).accuracy for s in strengths]
        best = int(np.argmax(tried))  # the first of the best: the mildest where they tie, as given
        chosen = self.read(step, checkpoint, Prompt(label, strengths[best]), SCORE)
        return Logged(
            step,
            label,
            chosen.z,
            chosen.accuracy,
            f"strength={strengths[best]:g}",
            chosen.shares,
            chosen.samples,
            tried[best],
        )


def check(
    checkpoints: Sequence[tuple[int, Any]],
    reader: Reader,
    classes: Sequence[str],
    held_out: Sequence[str],
    samples: int,
    seed: int,
    strengths: Sequence[float],
) -> list[int]:
    """The walk's arguments, before anything is sampled; returns the steps."""
    concepts = list(getattr(reader, "concepts", None) or [])
    if (
        not concepts
        or not all(isinstance(c, str) and c for c in concepts)
        or len(set(concepts)) != len(concepts)
    ):
        raise ValueError(
            f"reader.concepts {concepts!r}: give the concept names, distinct and non-empty"
        )
    valid = corners(len(concepts))
    for what, labels in (("classes", classes), ("held_out", held_out)):
        bad = [c for c in labels if c not in valid]
        if bad or (what == "classes" and not labels) or len(set(labels)) != len(labels):
            raise ValueError(
                f"{what} {list(labels)!r}: give distinct labels among {', '.join(valid)} (one "
                f"digit per concept of the reader: {', '.join(concepts)})"
            )
    if not set(held_out) <= set(classes):
        raise ValueError(
            f"held_out {list(held_out)!r}: each must also be one of classes {list(classes)!r}"
        )
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples {samples!r}: give a whole number of images per reading, >= 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed {seed!r}: give a whole number >= 0")
    if any(not (isinstance(s, (int, float)) and math.isfinite(s) and s > 0) for s in strengths):
        raise ValueError(
            f"strengths {list(strengths)!r}: give finite numbers > 0 (1 is the plain prompt)"
        )
    if strengths and not held_out:
        raise ValueError(
            "strengths: over-prompting prompts the held_out classes; give at least one"
        )
    return _steps(checkpoints)


def _steps(checkpoints: Sequence[tuple[int, Any]]) -> list[int]:
    """The checkpoints' steps: whole numbers >= 0, increasing, at least one."""
    steps: list[int] = []
    for i, item in enumerate(checkpoints):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ValueError(f"checkpoints[{i}]: give (step, checkpoint) pairs, got {item!r}")
        step = item[0]
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise ValueError(f"checkpoints[{i}]: step {step!r} is not a whole number >= 0")
        if steps and step <= steps[-1]:
            raise ValueError(
                f"checkpoints[{i}]: step {step} comes after step {steps[-1]}; give the "
                "checkpoints in increasing step order, each step once"
            )
        steps.append(int(step))
    if not steps:
        raise ValueError("checkpoints: give at least one (step, checkpoint) pair")
    return steps


def walk(
    checkpoints: Sequence[tuple[int, Any]],
    sampler: Sampler,
    reader: Reader,
    out: str | Path,
    *,
    classes: Sequence[str],
    held_out: Sequence[str] = ("11",),
    samples: int = 32,
    seed: int = 0,
    strengths: Sequence[float] = (),
    run: str | None = None,
    progress: bool | None = None,
    seeds: Callable[[int, str, int], int] | None = None,
) -> Path:
    """Read every checkpoint's classes (and over-prompt the held-out ones at ``strengths``); write
    OUT/walk.json and OUT/trajectories.csv after each checkpoint. Resumes an interrupted walk of the
    same settings. Returns the log.

    ``seeds``: how the sampler's seed is made from (step, class, stream), SCORE (0) or SELECT (1);
    default :func:`seed_for` with ``seed``. A sampler may bring its own (``RunSampler.seeds``
    reproduces a run's draws)."""
    classes, held_out, strengths = list(classes), list(held_out), [float(s) for s in strengths]
    steps = check(checkpoints, reader, classes, held_out, samples, seed, strengths)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: is a file; give a folder for the walk's log")
    concepts = [str(c) for c in reader.concepts]
    settings = {
        "concepts": concepts,
        "classes": classes,
        "held_out": held_out,
        "samples": samples,
        "seed": seed,
        "strengths": strengths,
    }
    protocols = ["naive"] + ["overprompt"] * bool(strengths)
    done = _resume(out / "walk.json", settings, protocols)
    seeds = seeds or (lambda step, label, stream: seed_for(seed, step, label, stream))
    doer = _Walk(sampler, reader, samples, seeds)
    todo = [(s, c) for s, (_, c) in zip(steps, checkpoints) if s not in done["naive"]]
    hide = None if progress is None else not progress
    for step, checkpoint in progress_bar(
        todo, desc="checkpoints", unit="ckpt", enabled=not hide, leave=False
    ):
        done["naive"][step] = [
            doer.read(step, checkpoint, Prompt(label), SCORE) for label in classes
        ]
        if strengths:
            done["overprompt"][step] = [
                doer.overprompt(step, checkpoint, label, strengths) for label in held_out
            ]
        _save(out, settings, done, run or out.name)
    if not todo:  # nothing left: the log is rewritten from walk.json alone
        _save(out, settings, done, run or out.name)
    return out / "trajectories.csv"


def _resume(path: Path, settings: dict, protocols: list[str]) -> dict[str, dict[int, list[Logged]]]:
    done: dict[str, dict[int, list[Logged]]] = {p: {} for p in protocols}
    if not path.exists():
        return done
    doc = read_json(path, "walk file (JSON)", "delete it to start the walk again")
    if not isinstance(doc, dict) or doc.get("settings") != settings:
        raise ValueError(
            f"{path}: made with other settings ({(doc or {}).get('settings')!r}); give another "
            "folder, "
            "or delete it to walk again with these"
        )
    for protocol in protocols:
        for key, entries in (doc.get("readings", {}).get(protocol) or {}).items():
            try:
                done[protocol][int(key)] = [
                    Logged.from_json(int(key), label, e) for label, e in entries.items()
                ]
            except (ValueError, AttributeError) as err:
                raise ValueError(
                    f"{path}: readings[{protocol!r}][{key!r}]: {err}; delete the file to walk again"
                ) from None
    return done


def _save(out: Path, settings: dict, done: dict[str, dict[int, list[Logged]]], run: str) -> None:
    readings = {
        p: {str(s): {r.label: r.to_json() for r in by_step[s]} for s in sorted(by_step)}
        for p, by_step in done.items()
    }
    write_json(out / "walk.json", {"settings": settings, "readings": readings})
    by_protocol = {
        p: [r for s in sorted(by_step) for r in by_step[s]] for p, by_step in done.items()
    }
    found = runlog.trajectories(
        by_protocol,
        concepts=settings["concepts"],
        classes=settings["classes"],
        seed=settings["seed"],
        run=run,
    )
    meta = {
        "source": "empirical.walk",
        "concepts": settings["concepts"],
        "held_out": settings["held_out"],
        "walk": settings,
    }
    write_csv(out / "trajectories.csv", found, meta=meta)
