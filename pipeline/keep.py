"""What results/ keeps of a training run, no checkpoints: its config, metrics (gzip-compressed:
every reader takes metrics.jsonl.gz as it takes metrics.jsonl), trajectories and their meta, the
over-prompting record, the last sample grid, and RUN_DIR.log (the batch runner's log of the run) as
train.log.

  python -m pipeline.keep RUN_DIR DEST_DIR      # copy them into DEST_DIR (made if missing)

``pipeline.batch --pack`` packs the same files (:func:`kept_files`); ``results/ladder/keep.sh``
calls this.
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path
from typing import Sequence

from core import cli
from core.files import atomic_write, copy_file, read_json

KEPT = ("config.json", "trajectories.csv", "trajectories.meta.json", "metrics.jsonl")
OVERPROMPT = "elicit/overprompt.json"


def _step(grid: Path) -> int:
    found = re.search(r"(\d+)", grid.stem)
    return int(found.group(1)) if found else -1


def kept_files(run: Path) -> list[Path]:
    """The files of ``run`` results/ keeps, in a fixed order (the last sample grid by step number,
    not by name)."""
    run = Path(run)
    files = [run / name for name in (*KEPT, OVERPROMPT) if (run / name).is_file()]
    grids = sorted((run / "samples").glob("step_*.png"), key=_step)
    log = run.with_name(run.name + ".log")
    return files + grids[-1:] + ([log] if log.is_file() else [])


def kept_name(run: Path, path: Path) -> str:
    """Where a kept file goes under DEST_DIR."""
    if path.name == run.name + ".log":
        return "train.log"
    if path.parent.name == "samples":
        return f"samples/{path.name}"
    return path.name


def another_run(run: Path, dest: Path) -> str | None:
    """Why ``dest`` holds another run than ``run`` (its config's training settings differ), or
    None."""
    theirs, mine = dest / "config.json", run / "config.json"
    if not theirs.is_file() or theirs.is_symlink():
        return None
    try:
        a, b = read_json(mine, "config"), read_json(theirs, "config")
    except ValueError as err:
        return str(err)
    a, b = (
        (a.get("train") if isinstance(a, dict) else a),
        (b.get("train") if isinstance(b, dict) else b),
    )
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return "its config differs in " + ", ".join(
            f"{k} ({b.get(k)!r} there, {a.get(k)!r} here)" for k in diff[:3]
        )
    return "its config.json is not a training run's"


def keep(run: Path, dest: Path) -> list[str]:
    """Copy what results/ keeps of ``run`` into ``dest`` (metrics compressed, the newer log
    replacing an older copy; every file written whole, never through a symbolic link); returns the
    names written. A ``dest`` that holds another run is refused (ValueError naming both)."""
    other = another_run(run, dest)
    if other:
        raise ValueError(
            f"DEST_DIR {dest}: holds another run than {run} ({other}); keep each run in its own "
            "folder"
        )
    written = []
    for path in kept_files(run):
        name = kept_name(run, path)
        if name == "metrics.jsonl":
            data = gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)
            atomic_write(dest / "metrics.jsonl.gz", lambda fh: fh.write(data), binary=True)
            # a stale plain copy would be read first
            (dest / "metrics.jsonl").unlink(missing_ok=True)
            name += ".gz"
        else:
            copy_file(path, dest / name)
        written.append(name)
    return written


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument("run", type=Path, help="a training run's folder (holding config.json)")
    parser.add_argument("dest", type=Path, help="the folder to copy into")
    args = parser.parse_args(argv)
    cli.output_dir(args.dest, "DEST_DIR")
    if cli.checking(args):
        return 0
    if not (args.run / "config.json").is_file():
        raise cli.UsageError(f"RUN_DIR {args.run}: holds no config.json, so it is not a run folder")
    written = keep(args.run, args.dest)
    print(f"kept {args.run} in {args.dest}: {' '.join(written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
