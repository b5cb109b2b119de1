#!/usr/bin/env bash
# The composition ladder (issue #36): from the `small` preset back toward `tiny`, one change at a time.
#
#   bash results/ladder/run.sh [RUNG ...]     # default: every rung, in the order below
#
# Each rung is one sweep: the changed key over its values (--grid), seeds 0 and 1, Δcolor 0.8 and 0.5,
# 6,000 steps, naive prompting and over-prompting at every checkpoint. Rerun the same command at any
# time: finished runs are skipped and interrupted ones resume from their last checkpoint (the runs,
# with their checkpoints, live under $RUNS, default runs/ladder). After each rung its logs and sample
# grids (no checkpoints) are copied to results/ladder/<rung>/ and the table is remade:
# results/ladder/ladder.json and ladder.md (python -m fitting.ladder).
#
# Cost on 2 CPU cores, measured: with over-prompting at every checkpoint (as here) each of a run's 41 evaluations
# takes about 55 s alone on 2 threads, and one run alone took 120 min to step 4,800 (results/ladder/notes.md, `ema`), so a
# rung of 4 runs does not fit a 3-hour session; run one cell at a time, or on a GPU (device.sh).
set -euo pipefail
export CONCEPT_DYNAMICS_RESULTS=write  # remake the committed files (analyses leave them alone otherwise)
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-runs/ladder}
DOCS=results/ladder
BASE=(--preset small --set steps=6000 --set protocols=overprompt --grid seed=0,1 --grid sep.color=0.8,0.5
      --set "probe=$(realpath -m "$RUNS")/probe/{concepts}-{resolution}px" --executor local --max-parallel 2)

declare -A RUNG=(
  [base]=""                                           # small itself at 6,000 steps, with over-prompting
  [resolution]="--grid resolution=16,20"              # the object's scale: 24 px composes, 16 px loses its color
  [depth]="--grid channels=32,64"                     # tiny's 2-level net at 24 px
  [ema]="--grid ema=0,0.995"                          # tiny's decay, and none (the official runs)
  [ema-warmup]="--set ema_warmup=true"                # 0.999 with warm-up: a shorter lag early
  [cfg-dropout]="--grid p_cfg=0.2"                    # tiny's classifier-free dropout
  [cfg-dropout-10k]="--grid p_cfg=0.2 --set steps=10000"  # the same to 10,000 steps: a delay, or a block?
  [clip]="--set clip=1.0 --set clip_scope=net"         # tiny's clipping: 1.0 over the network only
  [lr]="--grid lr=0.0003"                             # a smaller learning rate
  [images]="--grid per_class=512"                     # a quarter of the images per class
  [resolution-32]="--grid resolution=32"              # the paper's resolution (1.8x the cost)
)
ORDER=(base resolution depth ema cfg-dropout clip ema-warmup lr images resolution-32 cfg-dropout-10k)

rungs=("$@")
[[ ${#rungs[@]} -gt 0 ]] || rungs=("${ORDER[@]}")
for rung in "${rungs[@]}"; do
  [[ -v "RUNG[$rung]" ]] || { echo "unknown rung '$rung'; valid: ${ORDER[*]}" >&2; exit 2; }
  # shellcheck disable=SC2086
  python -m pipeline.sweep "${BASE[@]}" ${RUNG[$rung]} --out "$RUNS/$rung"
  for run in "$RUNS/$rung"/runs/*/; do
    dest="$DOCS/$rung/$(basename "$run")"
    mkdir -p "$dest"
    cp "$run"/config.json "$run"/trajectories.csv "$run"/trajectories.meta.json "$run"/metrics.jsonl "$dest"/
    gzip -n -9 -f "$dest"/metrics.jsonl  # the package reads metrics.jsonl.gz as it reads metrics.jsonl
    last=$(ls "$run"/samples/step_*.png 2>/dev/null | tail -1)  # the last grid only (results stays small)
    [[ -z "$last" ]] || { mkdir -p "$dest/samples" && cp "$last" "$dest/samples/"; }
    cp "$run"/stages.json "$run"/elicit/*.json "$dest"/ 2>/dev/null || true
  done
done
mapfile -t logged < <(find "$DOCS" -mindepth 2 -maxdepth 3 -name trajectories.csv -not -path "*/evidence/*" -printf '%h\n' | sort)
python -m fitting.ladder "${logged[@]}" --out "$DOCS/ladder.json" | grep '^|' > "$DOCS/ladder.md"
