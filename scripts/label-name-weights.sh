#!/bin/bash
# Chooses the weights of the label-name prior (`colswarm calibrate --label-names`, the t2d
# namespace's CTA and CPA heads) by cross-validation, on the fold models of
# scripts/t2d-cross-validation.sh. Each fold model is scored on its held-out fold at every
# weight of a grid; for each fold the weight with the best micro-F1 on the other four folds is
# applied to it, and the five folds' predictions so made are pooled and compared with the same
# models without the prior and with the char n-gram baseline (CPA). The weight to store in a
# model trained on all the data is the one best on the five folds pooled, printed last.
# About a minute on the 2-core machine of docs/TRAINING.md. Writes $CV/label-names.
# Usage: CV=runs/t2d-cv scripts/label-name-weights.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CV=${CV:-runs/t2d-cv}
BIN=${BIN:-"cargo run -q -p colswarm-cli --"}
WEIGHTS=${WEIGHTS:-"0 2 4 6 8 10 12 16"}
OUT=$CV/label-names
mkdir -p "$OUT/predictions"
for k in 0 1 2 3 4; do
  [ -d "$CV/fold$k-avg" ] || { echo "no fold model $CV/fold$k-avg: run scripts/t2d-cross-validation.sh" >&2; exit 1; }
  for w in $WEIGHTS; do
    rm -rf "$OUT/model"
    $BIN calibrate --model "$CV/fold$k-avg" --label-names "t2d=$w" --out "$OUT/model" > /dev/null
    for task in cta cpa; do
      $BIN eval --model "$OUT/model" --format t2d --input datasets/t2d-webtables/t2d.tar.gz --split "folds=$k" \
        --task $task --no-specialists --json --predictions "$OUT/predictions/$task-w$w-fold$k.jsonl" \
        > "$OUT/$task-w$w-fold$k.json"
    done
  done
done
rm -rf "$OUT/model"
python3 - "$OUT" "$WEIGHTS" <<'PY'
import json, sys
out, weights = sys.argv[1], sys.argv[2].split()
for task in ("cta", "cpa"):
    # Micro-F1 counts: true positives, predicted labels and gold labels per (weight, fold).
    counts = {}
    for w in weights:
        for k in range(5):
            r = json.load(open(f"{out}/{task}-w{w}-fold{k}.json"))
            tp = sum(l["true_positives"] for l in r["per_label"])
            pred = sum(l["predicted"] for l in r["per_label"])
            gold = sum(l["support"] for l in r["per_label"])
            counts[w, k] = (tp, pred, gold)
    def f1(w, folds):
        tp, pred, gold = (sum(counts[w, k][i] for k in folds) for i in range(3))
        return 2 * tp / (pred + gold) if pred + gold else 0.0
    with open(f"{out}/{task}-chosen-all.jsonl", "w") as chosen:
        for k in range(5):
            others = [j for j in range(5) if j != k]
            best = max(weights, key=lambda w: (f1(w, others), -float(w)))
            print(f"{task} fold {k}: weight {best} (on the other folds {f1(best, others):.4f}, "
                  f"without {f1('0', others):.4f}); held out {f1(best, [k]):.4f} against {f1('0', [k]):.4f}")
            chosen.write(open(f"{out}/predictions/{task}-w{best}-fold{k}.jsonl").read())
    with open(f"{out}/{task}-none-all.jsonl", "w") as none:
        for k in range(5):
            none.write(open(f"{out}/predictions/{task}-w0-fold{k}.jsonl").read())
    pooled = {w: f1(w, range(5)) for w in weights}
    print(f"{task} pooled: " + ", ".join(f"{w}: {v:.4f}" for w, v in pooled.items()))
    best = max(weights, key=lambda w: (pooled[w], -float(w)))
    print(f"{task}: weight for a model trained on all the data: {best}")
PY
for task in cta cpa; do
  echo "== $task: the prior (weights chosen on the other folds) against none"
  $BIN compare "$OUT/$task-chosen-all.jsonl" "$OUT/$task-none-all.jsonl"
done
if [ -f "$CV/predictions/baseline-all.jsonl" ]; then
  echo "== cpa: the prior against the char n-gram baseline"
  $BIN compare "$OUT/cpa-chosen-all.jsonl" "$CV/predictions/baseline-all.jsonl"
fi
