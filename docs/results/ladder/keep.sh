#!/usr/bin/env bash
# What the docs keep of a training run, no checkpoints: its config, metrics (gzip-compressed: the package's
# readers take metrics.jsonl.gz as they take metrics.jsonl), trajectories and their meta, the over-prompting
# record and the last sample grid (and RUN_DIR.log, device.sh's log of it, as train.log).
#
#   bash docs/results/ladder/keep.sh RUN_DIR DEST_DIR      copy them into DEST_DIR
#
# device.sh sources this file for kept_files when it packs a batch's runs.
kept_files() {  # kept_files RUN_DIR: the files of the run the docs keep, one per line
    local run=${1%/} f
    for f in config.json trajectories.csv trajectories.meta.json metrics.jsonl elicit/overprompt.json; do
        [[ ! -f "$run/$f" ]] || echo "$run/$f"
    done
    ls "$run"/samples/step_*.png 2>/dev/null | sort -V | tail -1
    return 0
}
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    [[ $# -eq 2 && -f "${1%/}/config.json" ]] || { sed -n '2,7p' "$0" >&2; exit 2; }
    run=${1%/} dest=$2
    mkdir -p "$dest/samples"
    while read -r f; do
        case $f in
            */elicit/overprompt.json) cp "$f" "$dest/overprompt.json" ;;
            */samples/*) cp "$f" "$dest/samples/" ;;
            *) cp "$f" "$dest/" ;;
        esac
    done < <(kept_files "$run")
    [[ ! -f "$dest/metrics.jsonl" ]] || gzip -n -9 -f "$dest/metrics.jsonl"
    [[ ! -f "$run.log" ]] || cp "$run.log" "$dest/train.log"
    echo "kept $run in $dest: $(ls "$dest" | tr '\n' ' ')"
fi
