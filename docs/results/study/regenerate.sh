#!/usr/bin/env bash
# Every number and figure of docs/study.md, from the saved outputs under docs/results/study/ (no training,
# no checkpoints): the runs' logs are collected into tables, then measured, drawn and predicted.
#
#   bash docs/results/study/regenerate.sh        (from the repository root; about two minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=docs/results/study/dcolor
python -m empirical.sweep collect "$D" --partial          # sweep.csv, covariates.csv from the run logs
python -m fitting.study "$D"                              # study.json: learning, turn, behavior, capability
python -m figures.study "$D"                              # learning.png, timing.png, held_out.png
python -m fitting.predict "$D/sweep.csv" --covariates "$D/covariates.csv" --leave-out sep_color --class 11 \
    --out "$D/predict"                                    # the pooled toy model, one Δcolor level left out at a time
python -m fitting.predict "$D/sweep.csv" --covariates "$D/covariates.csv" --leave-out sep_color --class 11 \
    --model memorize --out "$D/predict-memorize"          # the same with the switch reversed (target, then memorized bias)
python -m fitting.predict "$D/sweep.csv" --covariates "$D/covariates.csv" --leave-out sep_color --class 11 \
    --model memorize --onset --out "$D/predict-memorize-onset"   # and with the clock starting at a fitted onset
P=docs/results/study/mask-pilot                           # the masking pilot: p = 0 at Δcolor 0.6 and 0.8
python -m empirical.sweep collect "$P" --partial
python -m fitting.study "$P" --by sep_color
python -m figures.study "$P"
M=docs/results/study/mask                                 # the masking sweep at Δcolor 0.6 (p x seed)
python -m fitting.masking "$M"/runs/* --out "$M"          # masking.json and its table
python -m figures.masking "$M/masking.json" --detail 0.5  # masking.png (Fig. 8, 9a, 10)
E=docs/results/study/dcolor-elicit                        # seeds 3 and 4 at every Δcolor, elicited after training
python -m empirical.sweep collect "$E" --partial
python -m fitting.study "$E"
python -m figures.study "$E"
for model in "eq1 predict" "memorize predict-memorize" "memorize predict-memorize-onset --onset"; do
    set -- $model                                         # the pooled laws again on these runs alone: a replication
    python -m fitting.predict "$E/sweep.csv" --covariates "$E/covariates.csv" --leave-out sep_color --class 11 \
        --model "$1" ${3:-} --out "$E/$2"
done
