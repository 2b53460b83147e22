#!/usr/bin/env bash
# T2D as the shipped model answers it, by five-fold cross-validation, and the CPA abstention
# threshold ("no relation fits") chosen on held-out tables. For each fold model of
# scripts/t2d-cross-validation.sh (TCV, default runs/t2d-cv) it builds the shipped configuration:
# the label-name priors (CPA WEIGHT, default 12; CTA CTA_WEIGHT, default 16, left off the
# subject column), a T2D expert trained on the fold's four training folds alone (the shipped
# expert's shape, seed 11) and the `t2d-silver` expert, both opening below 0.95. On the model's
# own held-out fold, `calibrate --task cpa` gives the threshold with the best micro-F1 (an
# abstention counts as a miss) and the whole curve, and `eval` the CPA and CTA predictions
# (pooled in $OUT/predictions-{cpa,cta}-all.jsonl, for `colswarm compare`; CTA's subject column is the model's own choice). The threshold to store is the median of the five; the
# out-of-sample report scores each fold at the median of the other four folds' thresholds
# (nested: no fold's threshold is chosen on its own tables), pooled over the folds.
# Usage: scripts/t2d-as-shipped.sh   (writes $OUT, default runs/t2d-as-shipped, and prints the
# summary; BIN as in the other scripts). About 8 minutes on 2 cores, most of it the experts.
set -euo pipefail
cd "$(dirname "$0")/.."
TCV=${TCV:-runs/t2d-cv}
OUT=${OUT:-runs/t2d-as-shipped}
WEIGHT=${WEIGHT:-12}
CTA_WEIGHT=${CTA_WEIGHT:-16}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
T=datasets/t2d-webtables/t2d.tar.gz
SILVER=t2d-silver=models/colswarm-small/experts/t2d-silver
mkdir -p "$OUT"

fold() {
  local k=$1 others model="$TCV/fold$k-avg" expert="$OUT/expert$k"
  others=$(python3 -c "print(','.join(str(i) for i in range(5) if i != $k))")
  [ -d "$model" ] || { echo "no $model: run scripts/t2d-cross-validation.sh first" >&2; exit 1; }
  if [ ! -d "$expert-avg" ]; then
    $BIN --threads 1 train --recipe recipes/expert.toml --set model.d_model=32 --quiet \
      --train "t2d=t2d:$T#folds=$others" --out "$expert" >"$expert.json"
    mv "$expert/averaged" "$expert-avg"
  fi
  rm -rf "$OUT/fold$k" "$OUT/fold$k-prior" "$OUT/fold$k-one"
  $BIN calibrate --model "$model" --label-names "cpa:t2d=$WEIGHT" --label-names "cta:t2d=$CTA_WEIGHT" \
    --label-names-skip-subject t2d=yes --out "$OUT/fold$k-prior" >/dev/null
  $BIN add-specialist --model "$OUT/fold$k-prior" --specialist "t2d-expert=$expert-avg" --open-below 0.95 \
    --out "$OUT/fold$k-one" >/dev/null
  $BIN add-specialist --model "$OUT/fold$k-one" --specialist "$SILVER" --open-below 0.95 --out "$OUT/fold$k" >/dev/null
  rm -rf "$OUT/fold$k-prior" "$OUT/fold$k-one"
  $BIN --threads 1 calibrate --model "$OUT/fold$k" --task cpa --dev "t2d=t2d:$T#folds=$k" --curve --json \
    >"$OUT/fold$k.json"
  for task in cpa cta; do
    $BIN --threads 1 eval --model "$OUT/fold$k" --format t2d --input "$T" --split "folds=$k" --task $task \
      --json --predictions "$OUT/predictions-$task-fold$k.jsonl" >"$OUT/eval-$task-fold$k.json"
  done
  echo "fold $k: $(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[0]["chosen"]; print("threshold %.2f, coverage %.3f, precision %.3f" % (c["threshold"], c["coverage"], c["precision"]))' "$OUT/fold$k.json")" >&2
}

for pair in "0 1" "2 3" "4"; do
  pids=()
  for k in $pair; do fold "$k" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done   # a failed fold stops the script
done
for task in cpa cta; do
  cat "$OUT"/predictions-$task-fold?.jsonl >"$OUT/predictions-$task-all.jsonl"
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
