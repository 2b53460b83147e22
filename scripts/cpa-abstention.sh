#!/usr/bin/env bash
# The CPA abstention threshold ("no relation fits") of the shipped recipe, chosen on held-out
# tables: for each fold model of scripts/t2d-cross-validation.sh (TCV, default runs/t2d-cv), with
# the shipped model's CPA label-name prior (WEIGHT, default 12), `calibrate --task cpa` on its own
# held-out fold gives the threshold with the best micro-F1 (an abstention counts as a miss) and
# the whole curve. The threshold to store is the median of the five; the out-of-sample report
# scores each fold at the median of the other four folds' thresholds (nested: no fold's
# threshold is chosen on its own tables), pooled over the folds.
# Usage: scripts/cpa-abstention.sh   (writes $OUT, default runs/cpa-abstention, and prints the
# summary; BIN as in the other scripts). About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
TCV=${TCV:-runs/t2d-cv}
OUT=${OUT:-runs/cpa-abstention}
WEIGHT=${WEIGHT:-12}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
T=datasets/t2d-webtables/t2d.tar.gz
mkdir -p "$OUT"
for k in 0 1 2 3 4; do
  model="$TCV/fold$k-avg"
  [ -d "$model" ] || { echo "no $model: run scripts/t2d-cross-validation.sh first" >&2; exit 1; }
  rm -rf "$OUT/fold$k"
  $BIN calibrate --model "$model" --label-names "cpa:t2d=$WEIGHT" --out "$OUT/fold$k" >/dev/null
  $BIN calibrate --model "$OUT/fold$k" --task cpa --dev "t2d=t2d:$T#folds=$k" --curve --json \
    >"$OUT/fold$k.json"
  echo "fold $k: $(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[0]["chosen"]; print("threshold %.2f, coverage %.3f, precision %.3f" % (c["threshold"], c["coverage"], c["precision"]))' "$OUT/fold$k.json")" >&2
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
folds = [json.load(open(f"{out}/fold{k}.json"))[0] for k in range(5)]
chosen = [f["chosen"]["threshold"] for f in folds]
def at(fold, threshold):
    # The curve has a point per 0.01: the one at the threshold, rounded to its grid.
    return min(fold["curve"], key=lambda p: abs(p["threshold"] - threshold))
targets = answered = correct = never_correct = 0
for k, fold in enumerate(folds):
    others = chosen[:k] + chosen[k + 1:]
    point = at(fold, statistics.median(others))
    never = fold["never_abstaining"]
    targets += point["targets"]
    answered += point["answered"]
    correct += point["precision"] * point["answered"]
    never_correct += never["precision"] * never["answered"]
summary = {
    "thresholds": chosen,
    "store": statistics.median(chosen),
    "targets": targets,
    "out_of_sample": {
        "coverage": answered / targets,
        "precision": correct / max(answered, 1),
        "micro_f1_abstaining_as_miss": 2 * correct / (answered + targets),
    },
    "never_abstaining": {"precision": never_correct / targets, "micro_f1": never_correct / targets},
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
o, n = summary["out_of_sample"], summary["never_abstaining"]
print(f"per-fold thresholds {', '.join(f'{t:.2f}' for t in chosen)}; store the median {summary['store']:.2f}")
print(f"out of sample ({targets} pairs, each fold at the median of the other four): coverage {o['coverage']:.3f}, "
      f"precision {o['precision']:.3f} (never abstaining {n['precision']:.3f}), "
      f"micro-F1 with abstentions as misses {o['micro_f1_abstaining_as_miss']:.3f} (never abstaining {n['micro_f1']:.3f})")
PY
