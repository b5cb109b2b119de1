"""Train many runs of one preset in one process, as one batched model: a seed sweep in one sitting.

  python -m empirical.ensemble --runs DIR --preset NAME [--set KEY=VALUE ...] --seeds 0-7
  python -m empirical.ensemble --runs DIR --preset NAME --member seed=0,sep.color=0.3 --member \\
      seed=1 ...

Each member is a run of its own, in DIR/<its settings> (DIR/seed=3, DIR/seed=1,sep.color=0.3): the
folder of a run trained alone (python -m empirical.train), read by every command as one, and equal
to that run to rounding (same seed: same batches, noise, dropout, clipping, optimizer, EMA;
empirical.training.stacked says how). --set gives what all members share; --member (repeat) or
--seeds what each has of its own: seed, sep.<concept>, per_class, mask_p, mask_classes,
mask_concepts. The members meet at every record (training records, evaluations, saves: the same
steps for all), in between the stacked engine updates all of them at once and the threaded one each
in its own thread without waiting for the others; the stacked engine draws every member's naive
samples at once.

Rerun the same command to resume, even after kill -9 (each member from its own last.pt). A member
whose training diverges is named and stops; the others go on (exit status 1 at the end).

Where it pays: on a GPU, K members cost little more than one (the net is small); on a CPU one
process of K members against K processes side by side: benchmarks/ensemble_speed.py measures both
(docs/speed.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from empirical.training.config import TrainConfig, make_config
from empirical.training.run import Diverged, Run, open_run
from empirical.training import stacked
from empirical.training.stacked import MEMBER_KEYS, check_shared, streams_now
from empirical.training.loop import Meter, checkpoint_line, headline, summary
from core import cli


def open_members(
    cfgs: Sequence[TrainConfig], outs: Sequence[Path], *, progress: bool, command=None
) -> list[Run]:
    """Open (or resume) every member as a run alone, each with the random streams it would draw from
    next."""
    check_shared(cfgs)
    if len({Path(o).resolve() for o in outs}) != len(outs):
        raise ValueError("two members share a folder; give each its own")
    runs = []
    for cfg, out in zip(cfgs, outs):
        run = open_run(cfg, out, progress=progress, command=command)
        run.streams, run.meter = streams_now(run.device), Meter()
        runs.append(run)
    return runs


def train_members(
    cfgs: Sequence[TrainConfig],
    outs: Sequence[Path],
    *,
    engine: str = "auto",
    workers: int | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    command: Sequence[str] | None = None,
) -> tuple[list[dict], list[str]]:
    """Train (or resume) the members together; returns each one's summary (as
    empirical.training.loop.train's) and a line for each member that diverged and stopped.
    ``engine``: empirical.training.stacked's; ``workers``: threads of the threaded engine (default:
    this process's torch threads, each member then computing on one); ``stop_after``: stop after
    that many updates (tests)."""
    import torch
    from tqdm import tqdm

    runs = open_members(cfgs, outs, progress=progress, command=command)
    threads = torch.get_num_threads()
    workers = workers or threads
    if stacked.engine_name(runs, engine) == "threaded":
        torch.set_num_threads(max(1, threads // workers))
    fresh = [run for run in runs if run.step == 0 and 0 in run.evals and not run.logs.points]
    if fresh:  # the untrained models, once
        group = stacked.engine(fresh, engine, workers)
        try:
            evaluate_and_save(group, fresh, evaluated=True)
        finally:
            group.close()
    steps, failed = runs[0].cfg.steps, []
    bar = tqdm(
        total=steps * len(runs),
        initial=sum(run.step for run in runs),
        desc=f"ensemble {runs[0].cfg.preset} x{len(runs)}",
        unit="step",
        disable=None if progress else True,
    )
    left = stop_after
    try:
        while left != 0:
            active = [run for run in runs if run.step < steps and run not in failed]
            if not active:
                break
            low = min(run.step for run in active)  # those behind (a kill between saves) first
            target = min([run.step for run in active if run.step > low] + [steps])
            group = stacked.engine([r for r in active if r.step == low], engine, workers)
            try:
                left, lost = advance(group, target, left, bar, progress and not sys.stderr.isatty())
            finally:
                group.close()
            for run, err in lost:
                failed.append(run)
                print(f"ensemble: {run.out}: {err}", file=sys.stderr, flush=True)
    finally:
        bar.close()
        torch.set_num_threads(threads)
    said = [f"{run.out}: diverged at step {run.step + 1}" for run in failed]
    return [summary(run) for run in runs], said


def advance(ens, target: int, left: int | None, bar, plain: bool):
    """Train the ensemble's members up to step ``target`` (or ``left`` updates), logging, evaluating
    and saving each as alone; their own models hold the state at the end. The members run from one
    record (a training record, an evaluation, a save) to the next without meeting
    (:func:`to_record`). Returns the updates left, and the members that diverged with their errors
    (the ensemble stops there; the caller goes on without them)."""
    cfg, runs = ens.cfg, ens.runs
    evals, held = set(runs[0].evals), headline(cfg)
    start = {id(run): (run.step, run.wall) for run in runs}
    while runs[0].step < target and left != 0:
        before = [run.step for run in runs]
        n = to_record(cfg, before[0], evals, target)
        n = n if left is None else min(n, left)
        results = ens.train_steps(n)
        stepped = [run for run, r in zip(runs, results) if r is None and run.step == before[0] + n]
        if stepped:
            _checkpoint(ens, stepped, evals, held, start, plain)
        bar.update(sum(run.step for run in runs) - sum(before))
        left = None if left is None else left - (max(run.step for run in runs) - before[0])
        lost = [(run, r) for run, r in zip(runs, results) if isinstance(r, Diverged)]
        if lost:
            ens.unstack()
            return left, lost
    ens.unstack()
    return left, []


def to_record(cfg: TrainConfig, step: int, evals: set[int], target: int) -> int:
    """Updates from ``step`` to the next step that writes a record (a training record, an evaluation
    in ``evals``, a save) or to ``target``, whichever comes first."""
    s = step + 1
    while s < target and not (s % cfg.log_every == 0 or s % cfg.save_every == 0 or s in evals):
        s += 1
    return s - step


def _checkpoint(ens, stepped: list[Run], evals: set, held: str, start: dict, plain: bool) -> None:
    """After a stretch of updates (:func:`to_record`): the training record, the evaluation and the
    save each member alone would make at this step."""
    cfg, s = ens.cfg, stepped[0].step
    is_eval, is_save = s in evals, s % cfg.save_every == 0 or s == cfg.steps
    if s % cfg.log_every == 0 or is_eval or is_save:
        ens.sync_schedule()
        for run in stepped:
            run.logs.metrics.append(run.meter.flush(s, cfg.batch, run.wall, run.vdm.gamma))
    if not (is_eval or is_save):
        return
    ens.unstack()

    def said(run: Run) -> None:
        if plain:
            print(checkpoint_line(run, held, start[id(run)]), file=sys.stderr, flush=True)

    evaluate_and_save(ens, stepped, evaluated=is_eval, after=said)


def evaluate_and_save(ens, members: list[Run], *, evaluated: bool, after=None) -> None:
    """Each of ``members`` (those of the ensemble at this checkpoint) evaluated (when ``evaluated``:
    its naive samples drawn for all of them at once where the engine can) and saved, as alone;
    ``after(run)`` after each evaluation."""
    drawn = ens.naive_images() if evaluated else None
    elicited = ens.elicited() if evaluated else None

    def work(run: Run) -> None:
        if run not in members:
            return
        if evaluated:
            run.evaluate(
                images=None if drawn is None else drawn[id(run)],
                elicited=None if elicited is None else elicited[id(run)],
            )
            if after is not None:
                after(run)
        run.save(evaluated=evaluated)

    ens.each(work)


def seed_list(text: str | None) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8]; UsageError naming what is not a seed or a range of them."""
    out = []
    for part in (text or "").split(","):
        if not part.strip() and text is None:
            continue
        lo, dash, hi = part.strip().partition("-")
        try:
            out += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
        except ValueError:
            raise cli.UsageError(
                f"--seeds {text}: {part!r} is not a seed or a range like 0-7"
            ) from None
    return out


def members(
    shared: Sequence[str], own: Sequence[str], seeds: str | None
) -> list[tuple[str, list[str]]]:
    """Each member's folder name and its --set overrides: the shared ones, then its own."""
    given = [text.split(",") for text in own] + [[f"seed={s}"] for s in seed_list(seeds)]
    if not given:
        raise cli.UsageError(
            "name the members: --seeds 0-7, or --member KEY=VALUE[,KEY=VALUE] (repeat)"
        )
    out = []
    for pairs in given:
        for pair in pairs:
            key = pair.split("=", 1)[0].strip()
            if "=" not in pair or key.split(".")[0] not in MEMBER_KEYS:
                raise cli.UsageError(
                    f"--member {','.join(pairs)}: {pair!r} is not a member's own KEY=VALUE (keys: "
                    f"{', '.join(MEMBER_KEYS)}, sep.<concept>); what all share goes in --set"
                )
        out.append((",".join(sorted(p.strip() for p in pairs)), [*shared, *pairs]))
    names = [name for name, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise cli.UsageError(f"member {twice[0]} named twice; each member needs its own settings")
    return out


@cli.command
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser()
    parser.add_argument("--runs", type=Path, required=True, help="the folder the members go under")
    parser.add_argument(
        "--preset", default="tiny", help="a preset of empirical.train (default tiny)"
    )
    cli.add_set(
        parser, "a setting every member shares, as empirical.train's --set (repeatable)", "shared"
    )
    parser.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="one member's own settings, e.g. seed=1,sep.color=0.3 (repeat for each member)",
    )
    parser.add_argument("--seeds", help="members that differ in seed alone: e.g. 0-7 or 0,2,5")
    parser.add_argument(
        "--engine",
        choices=("auto", *stacked.ENGINES),
        default="auto",
        help="stacked: one batched model (vmap), threaded: one member a core; auto: stacked on a "
        "GPU, "
        "threaded on a CPU (faster there, benchmarks/ensemble_speed.py)",
    )
    args = parser.parse_args(argv)
    plan = members(args.shared, args.member, args.seeds)
    cfgs = [make_config(args.preset, overrides) for _, overrides in plan]
    check_shared(cfgs)
    cli.output_dir(args.runs, "--runs")
    if cli.checking(args):
        return 0
    outs = [args.runs / name for name, _ in plan]
    try:
        done, failed = train_members(cfgs, outs, engine=args.engine)
    except KeyboardInterrupt:
        print("ensemble: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    for doc in done:
        print(f"{doc['out']}: {doc['step']} steps, {doc['wall_s']:.0f} s of training")
    for line in failed:
        print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
