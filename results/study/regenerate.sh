#!/usr/bin/env bash
# Every `tiny` number and figure of docs/study.md and results/study-notebook.md, from the saved outputs under
# results/study/ (no training, no checkpoints): the runs' logs are collected into tables, then measured, drawn
# and predicted.
#
#   bash results/study/regenerate.sh        (from the repository root; about 30 minutes on 2 cores)
#   ... --check   (then compare with the committed numbers, results/matches.py, and put back what matches)
set -euo pipefail
export CONCEPT_DYNAMICS_RESULTS=write  # remake the committed files (analyses leave them alone otherwise)
[[ $# -eq 0 || ( $# -eq 1 && $1 == --check ) ]] || { sed -n '2,7p' "$0" >&2; exit 2; }
cd "$(dirname "$0")/../.."
CHECK=${1:-}
laws() {  # laws OUT SWEEP..: the pooled toy models on the sweeps' runs, one Δcolor level left out at a time
    local out=$1 logs=() covs=() model
    shift
    for d in "$@"; do logs+=("$d/sweep.csv"); covs+=("$d/covariates.csv"); done
    for model in "eq1 predict" \
                 "memorize predict-memorize" \
                 "memorize+onset predict-memorize-onset" \
                 "memorize+onset+compete predict-memorize-onset-compete" \
                 "coupled+onset predict-coupled-onset" \
                 "coupled+onset+compete predict-coupled-onset-compete" \
                 "memorize+onset+compete+mean predict-memorize-onset-compete-discrepancy" \
                 "coupled+onset+mean predict-coupled-onset-discrepancy" \
                 "memorize+onset+compete+local predict-memorize-onset-compete-local" \
                 "coupled+onset+local predict-coupled-onset-local"; do
        set -- $model   # eq1; the switch reversed (target, then memorized bias); a fitted onset; competing speeds;
                        # the coupled model (color memorizes once size is learned); the shared discrepancy; the
                        # local one (the residuals of the nearest training levels)
        python -m fitting.predict "${logs[@]}" --covariates "${covs[@]}" --leave-out sep_color --class 11 \
            --law "$1" --out "$out/$2"
        python -m figures.predict "$out/$2"              # leave_out.png (and each level's prediction.png)
    done
}

D=results/study/dcolor
python -m pipeline.sweep collect "$D" --partial          # sweep.csv, covariates.csv from the run logs
python -m fitting.study "$D"                              # study.json: learning, turn, behavior, capability
python -m figures.study "$D"                              # learning.png, timing.png, held_out.png
laws "$D" "$D"
P=results/study/mask-pilot                           # the masking pilot: p = 0 at Δcolor 0.6 and 0.8
python -m pipeline.sweep collect "$P" --partial
python -m fitting.study "$P" --by sep_color
python -m figures.study "$P"
M=results/study/mask                                 # the masking sweep at Δcolor 0.6 (p x seed)
python -m fitting.masking "$M"/runs/* --out "$M"          # masking.json and its table
python -m figures.masking "$M/masking.json" --detail 0.5  # masking.png (Fig. 8, 9a, 10)
E=results/study/dcolor-elicit                        # seeds 3 and 4 at every Δcolor, elicited after training
python -m pipeline.sweep collect "$E" --partial
python -m fitting.study "$E"
python -m figures.study "$E"
laws "$E" "$E"                                            # the pooled laws again on these runs alone: a replication
S=results/study/dcolor-seeds                         # seeds 5 and 6 at every Δcolor, naive only (issue 15)
python -m pipeline.sweep collect "$S" --partial
python -m fitting.study "$S"
python -m figures.study "$S"
laws "$S" "$S"                                            # a second replication, on runs no law was chosen on
N=results/study/dcolor-07                            # Δcolor 0.7, seeds 5 to 8: a sixth level (issue 15)
python -m pipeline.sweep collect "$N" --partial          # (one level: no study.json of its own)
laws results/study/dcolor-pooled-07 "$D" "$E" "$S" "$N"   # the four sweeps pooled: 0.7 between 0.6 and 0.8
F=results/study/dcolor-02                            # Δcolor 0.2, seeds 5-6: a fresh level below the range, trained
python -m pipeline.sweep collect "$F" --partial          # after the local discrepancy was designed (its README)
for model in "coupled+onset+local fresh-coupled-onset-local" \
             "memorize+onset+compete+mean fresh-memorize-onset-compete-discrepancy" \
             "coupled+onset fresh-coupled-onset"; do
    set -- $model
    python -m fitting.predict "$D/sweep.csv" "$E/sweep.csv" "$S/sweep.csv" "$N/sweep.csv" "$F/sweep.csv" --class 11 \
        --covariates "$D/covariates.csv" "$E/covariates.csv" "$S/covariates.csv" "$N/covariates.csv" "$F/covariates.csv" \
        --holdout sep_color=0.2 --law "$1" --out "$F/$2"
    python -m figures.predict "$F/$2"
done
Q=results/study/dcolor-pooled
laws "$Q" "$D" "$E" "$S"                                  # all three sweeps pooled: 7 seeds a level
for k in 1 3; do                                          # the chosen laws when runs are scarce: k seeds a level
    for extra in "" "+mean"; do
        python -m fitting.predict "$D/sweep.csv" "$E/sweep.csv" "$S/sweep.csv" --leave-out sep_color --class 11 \
            --covariates "$D/covariates.csv" "$E/covariates.csv" "$S/covariates.csv" \
            --law "memorize+onset+compete$extra" --train-per-level "$k" --draws 10 --out "$Q/scarce-$k${extra:+-discrepancy}"
        python -m figures.predict "$Q/scarce-$k${extra:+-discrepancy}"
    done
    python -m fitting.predict "$D/sweep.csv" "$E/sweep.csv" "$S/sweep.csv" --leave-out sep_color --class 11 \
        --covariates "$D/covariates.csv" "$E/covariates.csv" "$S/covariates.csv" \
        --law coupled+onset+local --train-per-level "$k" --draws 10 --out "$Q/scarce-$k-coupled-local"
    python -m figures.predict "$Q/scarce-$k-coupled-local"
done
[[ -z $CHECK ]] || python results/matches.py --restore  # --check: compare, and put back what matches
