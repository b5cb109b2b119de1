#!/usr/bin/env bash
# Issue #33: sim2 with one W(t) for all classes of a run, against per-class sim2 and eq1 (naive prompting),
# on the 8 tiny runs of the per-class comparison (results/sim2_vs_eq1/) and the 12 composing `small`
# runs (results/ladder/small/). One sim_joint.json per run and table.md (docs/theory.md's table); the
# figures are drawn for every run and kept in the repository for four of them (KEEP).
#
#   bash results/sim2_vs_eq1/joint/regenerate.sh      # about 40 s per run on one core
set -euo pipefail
export CONCEPT_DYNAMICS_RESULTS=write  # remake the committed files (analyses leave them alone otherwise)
cd "$(dirname "$0")/../../.."
OUT=results/sim2_vs_eq1/joint
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
KEEP="small-sep.color-0.8_seed-0 small-sep.color-0.2_seed-1 tiny-color0.3-size0.4 tiny-color0.8-size0.2"
for log in results/tiny/color0.{3-size0.4,8-size0.2}{,-seed1,-seed2}/trajectories.csv \
           results/tiny13/color0.{3-size0.4,8-size0.2}/trajectories.csv; do
  name=$(basename "$(dirname "$(dirname "$log")")")-$(basename "$(dirname "$log")")
  python -m fitting.sim_joint "$log" --out "$OUT/$name"
  python -m figures.sim_joint "$OUT/$name/sim_joint.json"
done
for log in results/ladder/small/sep.color=*/trajectories.csv; do
  name=small-$(basename "$(dirname "$log")" | tr '=,' '-_')
  python -m fitting.sim_joint "$log" --out "$OUT/$name"
  python -m figures.sim_joint "$OUT/$name/sim_joint.json"
done
python - "$OUT" > "$OUT/table.md" <<'PY'
import json, pathlib, sys
print("| run | coordinates | AIC sim2, one W(t) (k=6) | sim2 per class (k=18) | eq1 per class (k=27) | preferred | joint sim2 behind eq1 by | joint RMSE 01 / 10 / 11 | joint sim2 on a bound | per-class fits on a bound (sim2 / eq1) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(pathlib.Path(sys.argv[1]).glob("*/sim_joint.json")):
    for r in json.loads(path.read_text())["runs"]:
        m = r["models"]
        j, s, e = (m[k] for k in ("sim2 joint", "sim2 per class", "eq1 per class"))
        hits = lambda fits: sum(len(v) for v in fits.values())
        print(f"| {path.parent.name} | {j['n']} | {j['aic']:.0f} | {s['aic']:.0f} | {e['aic']:.0f} | {r['preferred']} | "
              f"{j['aic'] - e['aic']:.0f} | {' / '.join(format(j['rmse'][c], '.2f') for c in r['classes'])} | "
              f"{', '.join(j['at_bounds']) or 'none'} | {hits(s['at_bounds'])} / {hits(e['at_bounds'])} |")
PY
for dir in "$OUT"/*/; do  # the repository keeps four figures (results stays small); the json draws the rest
  [[ " $KEEP " == *" $(basename "$dir") "* ]] || rm -f "$dir"/*.png
done
