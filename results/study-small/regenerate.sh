#!/usr/bin/env bash
# Issue #35: the study on `small`, whose held-out class composes. Every `small` number of docs/study.md and its
# notebook (results/study-notebook.md), from the saved logs in results/study-small/ (no training, no checkpoints).
#
#   bash results/study-small/regenerate.sh               (from anywhere; about 30 minutes on 2 cores)
#   bash results/study-small/regenerate.sh --skip-laws   (all but the pooled laws' fits and the fresh-level
#                                                              predictions: after a run joins a sweep, a few minutes)
#   ... --check   (then compare with the committed numbers, results/matches.py, and put back what matches)
set -euo pipefail
export CONCEPT_DYNAMICS_RESULTS=write  # remake the committed files (analyses leave them alone otherwise)
SKIP_LAWS='' CHECK=''
for arg in "$@"; do
    case $arg in --skip-laws) SKIP_LAWS=1 ;; --check) CHECK=1 ;; *) sed -n '2,8p' "$0" >&2; exit 2 ;; esac
done
cd "$(dirname "$0")/../.."
# The pooled laws tried on these runs, each with one Δcolor level left out at a time (8 specifications: the
# paper's order, the order the tiny runs showed, each with the options and the coupled model that did best there).
LAWS="eq1 eq1+onset eq1+compete+onset memorize memorize+onset memorize+compete+onset coupled+onset coupled+onset+local"
laws() {  # laws SWEEP: every law of $LAWS, leave one Δcolor level out, and its figures
    [[ -z $SKIP_LAWS ]] || return 0
    for law in $LAWS; do
        python -m fitting.predict "$1/sweep.csv" --covariates "$1/covariates.csv" --leave-out sep_color \
            --class 11 --law "$law" --out "$1/laws/$law"
        python -m figures.predict "$1/laws/$law"
    done
}
V=results/study-small/validation    # small's validation runs (results/ladder/notes.md): Δcolor 0.2, 0.3, 0.5, 0.8 x
python -m pipeline.sweep collect "$V"   # seeds 0-2, naive prompting only; runs/ links to results/ladder/small
python -m fitting.study "$V"             # study.json: learning, turn, behavior per run and per level
python -m figures.study "$V"             # learning.png (Fig. 3), held_out.png (Fig. 4)
laws "$V"
# The five Δcolor levels (0.2, 0.3, 0.4, 0.5, 0.8 x 3 seeds): the validation runs and the over-prompted 0.4
# runs as one study (five-levels/runs/ links to them), and the same 8 laws, one level left out at a time. (The
# committed laws were fitted from validation/ and dcolor/'s logs, before the 0.65 runs joined dcolor/: the same
# 15 runs; eq1 refitted from five-levels/sweep.csv agrees to 1e-7.)
F=results/study-small/five-levels D=results/study-small/dcolor
python -m pipeline.sweep collect "$F"
python -m fitting.study "$F" --by sep_color
python -m figures.study "$F"
laws "$F"
# The fresh level Δcolor 0.65, as fresh-level-test.md wrote it down before its runs: two laws fitted to the other
# 15 runs predict its three seeds (verdict in results/study-notebook.md, "`small`: the pooled toy model").
# fresh-level/runs/ links to the test's input, the over-prompted 0.4 and 0.65 runs of dcolor/ (which since holds the
# weak levels' over-prompted runs too).
R=results/study-small/fresh-level
python -m pipeline.sweep collect "$R" --partial
python -m pipeline.sweep collect "$D" --partial
if [[ -z $SKIP_LAWS ]]; then  # (not `cond || for ...`: set -e does not reach inside an || list)
    for law in eq1+compete+onset coupled+onset+local; do
        python -m fitting.predict "$V/sweep.csv" "$R/sweep.csv" --covariates "$V/covariates.csv" "$R/covariates.csv" \
            --class 11 --holdout sep_color=0.65 --law "$law" --out "$D/fresh-$law"
        python -m figures.predict "$D/fresh-$law"
    done
fi
# Capability against behavior across separations (Fig. 6, workshop Fig. 3): every over-prompted color x size run
# of `small`: the Δcolor sweep at Δsize 0.4 (0.2 and 0.3, 15,000 steps cut at 8,632 on a lent H100; 0.4, 0.65; 0.5 and 0.8
# seed 2 on the CPU), the ladder's base runs (the same preset over-prompted,
# 6,000 steps: Δcolor 0.5 and 0.8, seeds 0 and 1) and the Δsize sweep at Δcolor 0.5 (dsize/runs/, grouped with
# Δcolor 0.5); capability/runs/ links to them. Grouped by Δcolor (the steps differ: 6,000, 8,632 or 10,000).
C=results/study-small/capability
python -m pipeline.sweep collect "$C" --partial  # the weak levels were cut at 8,632 of 15,000
python -m fitting.study "$C" --by sep_color
python -m fitting.study "$C" --by sep_color --only sep_size=0.4  # study-sep_size=0.4.json: across Δcolor alone
python -m figures.study "$C"
# The Δsize sweep at Δcolor 0.5 (the other concept's Fig. 3 panel): Δsize 0.1, 0.2, 0.3 x 2 seeds trained
# over-prompted (dsize/runs/), and Δsize 0.4, the validation runs at Δcolor 0.5 (links named by their Δsize;
# 0.4 is the largest separation of size the data allow).
S=results/study-small/dsize
python -m pipeline.sweep collect "$S" --partial
python -m fitting.study "$S" --by sep_size
python -m figures.study "$S"
# The masking sweep on shape x color (`small-mask`, Δcolor 0.3; Fig. 8-10): p x seed under mask/runs/ (the pilot
# is p = 0 seed 0; all 8 runs, p = 0, 0.25, 0.5, 0.75 x seeds 0 and 1, trained on the CPU by cpu-jobs-2026-11-26.txt)
M=results/study-small/mask
python -m pipeline.sweep collect "$M" --partial
python -m fitting.masking "$M"/runs/* --out "$M"          # masking.json and its table
python -m figures.masking "$M/masking.json" --detail 0.5  # masking.png (panel (c): the run nearest p = 0.5)
# The weak color seeds trained again on the CPU to 15,000 steps (weak-cpu/: Δcolor 0.2 seed 2, 0.3 seeds 0 and 2;
# the rest of cpu-jobs-2026-11-26.txt as it finishes): the held-out color's learning step past 10,000 (Fig. 3's
# weak end), and each run's capability against its behavior
W=results/study-small/weak-cpu
python -m pipeline.sweep collect "$W" --partial
python -m fitting.study "$W" --by sep_color
for run in "$W"/runs/*/; do
    python -m fitting.capability "$run"   # elicitation.json, elicitation_summary.json
    python -m figures.capability "$run"   # capability.png (Fig. 6 for one run)
done
# Fig. 3 on each (Δcolor, seed)'s longest run: fig3/runs/ links to the validation runs (10,000 steps), the
# over-prompted 0.4 and 0.65 runs (10,000) and, where they went further, the weak seeds' CPU runs (weak-cpu/, 15,000)
G=results/study-small/fig3
python -m pipeline.sweep collect "$G"
python -m fitting.study "$G" --by sep_color   # study.json (its capability rows: see capability/, the pool for those)
python -m figures.study "$G"                  # learning.png (Fig. 3 with six levels), held_out.png
# The runs trained with over-prompting at every checkpoint (device-jobs.txt, device-jobs-weak.txt; weak-cpu/: the
# weak color seeds trained again on the CPU to 15,000 steps, cpu-jobs-2026-11-26.txt):
# one row per run (memorized as, turn, composed, capability, cost), python -m fitting.ladder
shopt -s nullglob
trained=()  # not the links (dsize/runs/sep.size=0.4,* are validation runs, trained elsewhere and naive only)
for run in results/study-small/{dcolor,dsize,mask,weak-cpu}/runs/*; do [[ -L "$run" ]] || trained+=("$run"); done
python -m fitting.ladder "${trained[@]}" --out results/study-small/runs.json | grep '^|' > results/study-small/runs.md
[[ -z $CHECK ]] || python results/matches.py --restore  # --check: compare, and put back what matches
