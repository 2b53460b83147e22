#!/bin/bash
# Five-fold cross-validation of T2D CPA: the shipped recipe (recipes/colswarm-small.toml,
# before its PARL stage; version 6's read no word vectors) against the char n-gram baseline, on all ~1,040 T2D CPA targets instead of the 181 of the
# hash dev split. Fold K holds the tables whose FNV-1a id hash is K mod 5 (`#folds=K`; fold 0
# is `#dev`). For each fold a primary is trained on the other four T2D folds plus WikiTables
# and GitTables cv_0–2 (seed $SEED, default 12; 10 epochs, the mean of epochs 5–10), and the
# baseline on the same four folds; the five folds' predictions are pooled and compared with a
# paired bootstrap over tables. One thread per run, two folds at a time: 23 minutes in all on
# the 2-core machine of docs/TRAINING.md. Writes $OUT (default runs/t2d-cv) and prints the
# comparison; scripts/label-name-weights.sh then chooses the label-name prior's weights on its
# fold models.
# Usage: scripts/t2d-cross-validation.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/t2d-cv}
BIN=${BIN:-"cargo run -q -p colswarm-cli --"}
# Changes of the recipe, e.g. version 6's reading without word vectors:
# TRAIN_ARGS="--set model.word_vectors= --set model.table_topic=false".
TRAIN_ARGS=${TRAIN_ARGS:-}
SEED=${SEED:-12}
D=datasets
G=$D/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
mkdir -p "$OUT/predictions"

fold() {
  local k=$1 others
  others=$(python3 -c "print(','.join(str(i) for i in range(5) if i != $k))")
  # shellcheck disable=SC2086
  $BIN --threads 1 train --recipe recipes/colswarm-small.toml --set model.hierarchy_closure=true \
    --train wikitables=turl-csv:$D/wikitables-turl-subset/train_wikitables_subset_20.csv.gz \
    --train gittables=sato-cv:${G}0.csv.gz,${G}1.csv.gz,${G}2.csv.gz --train "t2d=t2d:$D/t2d-webtables/t2d.tar.gz#folds=$others" \
    --dev wikitables=turl-csv:$D/wikitables-turl-subset/dev_wikitables_subset_2.csv.gz \
    --dev gittables=sato-cv:${G}3.csv.gz --dev "t2d=t2d:$D/t2d-webtables/t2d.tar.gz#folds=$k" \
    --seed "$SEED" --quiet $TRAIN_ARGS --out "$OUT/fold$k" > "$OUT/fold$k-train.json"
  # The mean of the last six epochs (the recipe's averaging).
  rm -rf "$OUT/fold$k-avg"
  mv "$OUT/fold$k/averaged" "$OUT/fold$k-avg"
  $BIN eval --model "$OUT/fold$k-avg" --format t2d --input $D/t2d-webtables/t2d.tar.gz --split "folds=$k" \
    --no-specialists --json --predictions "$OUT/predictions/model-fold$k.jsonl" > "$OUT/model-fold$k.json"
  $BIN baseline --kind char-ngram --train "t2d=t2d:$D/t2d-webtables/t2d.tar.gz#folds=$others" \
    --eval "t2d=t2d:$D/t2d-webtables/t2d.tar.gz#folds=$k" --json \
    --predictions "$OUT/predictions/baseline-fold$k.jsonl" > "$OUT/baseline-fold$k.json"
}

for pair in "0 1" "2 3" "4"; do
  pids=()
  for k in $pair; do fold "$k" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done   # a failed fold stops the script
done
cat "$OUT"/predictions/model-fold?.jsonl > "$OUT/predictions/model-all.jsonl"
cat "$OUT"/predictions/baseline-fold?.jsonl > "$OUT/predictions/baseline-all.jsonl"
for k in 0 1 2 3 4; do
  python3 -c "import json,sys; m,b=(json.load(open(f)) for f in sys.argv[1:]); print(f'fold $k: {m[\"n_targets\"]} targets, model {m[\"micro_f1\"]:.3f}, baseline {b[\"micro_f1\"]:.3f}')" \
    "$OUT/model-fold$k.json" "$OUT/baseline-fold$k.json"
done
$BIN compare "$OUT/predictions/model-all.jsonl" "$OUT/predictions/baseline-all.jsonl" --json > "$OUT/compare.json"
$BIN compare "$OUT/predictions/model-all.jsonl" "$OUT/predictions/baseline-all.jsonl"
