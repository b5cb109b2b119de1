"""Turn an array of concept-space points saved elsewhere into the package's trajectory log, in one
line.

  python -m empirical.convert FILE --layout AXES --concepts C1,C2 --classes L1,L2,... (--steps \\
      S,S,... | --steps-key K)
                              [--key K] [--runs R1,R2,...] [--protocol naive] --out trajectories.csv

FILE is one array of points in [0, 1] (an all-NaN point is a missing one), in any axis order:
  .npy   the array itself (read without unpickling objects)
  .npz   one array of it, named by --key (the keys are listed when it is missing)
  .pth   a tensor, or a dict (nested dicts too: --key a.b) of tensors, arrays or lists, as the
  official code saves
         its trajectory exports; read with torch's weights-only loader, so no arbitrary object is
         unpickled (needs torch)
--layout names the axes in order: class, step and concept, and run when the file holds several runs
(conditions), e.g. run,class,step,concept for the official (conditions, classes, checkpoints,
concepts) exports. The steps come from --steps (one per checkpoint) or from another entry of the
same .npz/.pth (--steps-key). Every fitting and figure command reads the output
(core/trajectory.py's format).

Examples:
  python -m empirical.convert data.pth --key data --layout run,class,step,concept --concepts \\
      color,size \\
      --classes 00,01,10,11 --steps-key steps --out runs/official/trajectories.csv
  python -m empirical.convert points.npy --layout class,step,concept --concepts color,size \\
      --classes 00,01,10,11 \\
      --steps 0,500,1000,1500 --out runs/mine/trajectories.csv
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
import zipfile

import numpy as np

from core import cli
from core.frames import from_array
from core.trajectory import write_csv

SUFFIXES = (".npy", ".npz", ".pth", ".pt")


class NpzEntries(Mapping):
    """The arrays of a .npz file by name, each read when asked for (issue #51: every entry was
    loaded, also those --key did not select)."""

    def __init__(self, path: Path, names: tuple[str, ...]):
        self.path, self.names = path, names

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise KeyError(name)
        with _whole_npz(self.path):
            with np.load(self.path, allow_pickle=False) as npz:
                return npz[name]

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


@contextlib.contextmanager
def _whole_npz(path: Path):
    """A .npz cut short or damaged (a zip without its directory, a member failing its CRC) as a
    ValueError naming the file, not zipfile's traceback."""
    try:
        yield
    except (zipfile.BadZipFile, zlib.error, EOFError) as err:
        raise ValueError(f"{path}: not a whole .npz file ({err}); save the arrays again") from None


def load_entries(path: Path) -> Any:
    """The file's content: an array (.npy), or a mapping of names to arrays (.npz, .pth), or a .pth
    tensor."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(
            f"{path}: a {suffix or 'file without suffix'} cannot be read; valid: "
            f"{', '.join(SUFFIXES)}"
        )
    if suffix == ".npy":
        try:
            return np.load(path, allow_pickle=False)
        except ValueError as err:
            if "allow_pickle" in str(err):  # object arrays need pickle
                raise ValueError(
                    f"{path}: holds Python objects, not numbers ({err}); save a numeric array"
                ) from None
            raise ValueError(
                f"{path}: not a whole .npy file ({err}); save the array again"
            ) from None
    if suffix == ".npz":
        with _whole_npz(path), np.load(path, allow_pickle=False) as npz:
            return NpzEntries(path, tuple(npz.files))
    try:
        import torch
    except ImportError:
        raise ValueError(
            f"{path}: reading .pth needs torch (pip install torch); or save the array as .npy"
        ) from None
    try:
        # mmap: a tensor is read from disk only when --key selects it (the zip format; not the
        # legacy one)
        lazy = zipfile.is_zipfile(path)
        return torch.load(path, map_location="cpu", weights_only=True, mmap=lazy)
    except Exception as err:  # the weights-only unpickler refuses arbitrary objects
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"{path}: not readable without unpickling arbitrary objects ({first}); save tensors, "
            "arrays, "
            "lists and dicts only"
        ) from None


def entry(content: Any, key: str | None, path: Path, flag: str) -> np.ndarray:
    """The array named by ``key`` (dots go into nested dicts), or the content itself when it is one
    array."""
    if key is None:
        if isinstance(content, Mapping):
            raise ValueError(
                f"{path} holds several entries ({', '.join(_names(content))}): name one with {flag}"
            )
        return _numeric(content, path, "the file")
    node = content
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            valid = (
                ", ".join(_names(node)) if isinstance(node, Mapping) else "none (it is one array)"
            )
            raise ValueError(f"{flag} {key}: {path} has no entry {part!r}; valid: {valid}")
        node = node[part]
    return _numeric(node, path, f"{flag} {key}")


def _names(content: Mapping, prefix: str = "") -> list[str]:
    out = []
    for k, v in content.items():
        out += _names(v, f"{prefix}{k}.") if isinstance(v, Mapping) else [f"{prefix}{k}"]
    return out


def _numeric(value: Any, path: Path, what: str) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().float().numpy()
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{path}: {what} is a {type(value).__name__}, not an array of numbers"
        ) from None
    return arr


def _csv(text: str, flag: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise ValueError(f"{flag} {text!r}: give comma-separated names, none empty")
    return items


def one_steps_source(steps, steps_key) -> None:
    """The steps come from exactly one place: a list (--steps) or an entry of the file
    (--steps-key)."""
    if (steps is None) == (steps_key is None):
        raise ValueError(
            "give the steps either with --steps (a list) or with --steps-key (an entry of the file)"
        )


def convert(
    file: str | Path,
    out: str | Path,
    *,
    layout: str,
    concepts: Sequence[str],
    classes: Sequence[str],
    steps: Sequence[float] | None = None,
    steps_key: str | None = None,
    key: str | None = None,
    runs: Sequence[str] | None = None,
    protocol: str = "naive",
) -> Path:
    """Read ``file``'s array (and steps), check it as a log is checked, write the trajectory log
    ``out``."""
    path = Path(file)
    one_steps_source(steps, steps_key)
    content = load_entries(path)
    z = entry(content, key, path, "--key")
    if steps_key is not None:
        if not isinstance(content, Mapping):
            raise ValueError(
                f"--steps-key {steps_key}: {path} holds one array, not named entries; give --steps"
            )
        steps = entry(content, steps_key, path, "--steps-key").ravel()
    steps = np.asarray(steps, dtype=float)
    if steps.size and (
        not np.all(np.isfinite(steps)) or steps.min() < 0 or np.any(np.diff(steps) <= 0)
    ):
        raise ValueError(
            f"steps {steps.tolist()[:8]}{'...' if steps.size > 8 else ''}: they must be finite, "
            ">= 0 and "
            "increasing"
        )
    trajs = from_array(
        z, steps, layout=layout, concepts=concepts, classes=classes, runs=runs, protocol=protocol
    )
    return write_csv(out, trajs, meta={"source": str(path), "key": key, "layout": layout})


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument("file", type=Path, help=f"the array file ({', '.join(SUFFIXES)})")
    parser.add_argument(
        "--layout", required=True, help="the array's axes in order, e.g. run,class,step,concept"
    )
    parser.add_argument(
        "--concepts", required=True, help="the concept axis's names in order, e.g. color,size"
    )
    parser.add_argument(
        "--classes", required=True, help="the class axis's labels in order, e.g. 00,01,10,11"
    )
    parser.add_argument("--steps", help="the training step of each checkpoint, comma-separated")
    parser.add_argument("--steps-key", help="the file's entry that holds the steps (.npz, .pth)")
    parser.add_argument(
        "--key", help="the file's entry that holds the points (.npz, .pth; dots for nested dicts)"
    )
    parser.add_argument(
        "--runs", help="names of the runs (conditions) along the run axis (default run0, run1, ...)"
    )
    parser.add_argument(
        "--protocol",
        default="naive",
        help="the protocol the points were read under (default naive)",
    )
    parser.add_argument("--out", required=True, help="the trajectory log to write (.csv)")
    args = parser.parse_args(argv)
    steps = None
    if args.steps is not None:
        try:
            steps = [float(s) for s in _csv(args.steps, "--steps")]
        except ValueError:
            raise ValueError(
                f"--steps {args.steps!r}: give numbers, comma-separated (e.g. 0,500,1000)"
            ) from None
    one_steps_source(steps, args.steps_key)
    out = cli.output_file(args.out, suffix=".csv", owns=("trajectories.csv",))
    cli.not_an_input([out], [args.file])
    if cli.checking(args):
        return 0
    written = convert(
        args.file,
        out,
        layout=args.layout,
        concepts=_csv(args.concepts, "--concepts"),
        classes=_csv(args.classes, "--classes"),
        steps=steps,
        steps_key=args.steps_key,
        key=args.key,
        runs=None if args.runs is None else _csv(args.runs, "--runs"),
        protocol=args.protocol,
    )
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
