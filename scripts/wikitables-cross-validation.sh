#!/bin/bash
# Five-fold cross-validation of WikiTables CTA in the setting the shipped model is trained in:
# WikiTables train *and* dev. The train split is balanced (about 20 columns per label set) while
# dev, like the tables a user brings, follows the real, skewed distribution, so a score on dev of
# a model fit on train alone says little about a model fit on both. Fold K holds the dev tables
# whose FNV-1a 64 id hash is K mod 5 (as `#folds=K`); for each fold the shipped recipe (seed 12,
# 10 epochs, the mean of the last six epochs, specialists frozen beside it) is trained on
# WikiTables train plus the other four dev folds, GitTables cv_0–2 and T2D `#train`, and the
# char n-gram baseline on the same WikiTables tables; the five held-out folds' predictions are
# pooled and compared with a paired bootstrap over tables. Each model is also scored without the
# hierarchy closure (a copy of it whose `labels.json` lists no super-types).
# One thread per run, two folds at a time: about 35 minutes on the 2-core machine of
# docs/TRAINING.md. Writes $OUT (default runs/wikitables-cv) and prints the comparisons.
# Rerunning it resumes the folds' training runs and redoes the rest.
# Usage: scripts/wikitables-cross-validation.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/wikitables-cv}
BIN=${BIN:-"cargo run -q -p colswarm-cli --"}
# Changes of the recipe (recipes/colswarm-small.toml), e.g. version 6's reading without word
# vectors: TRAIN_ARGS="--set model.word_vectors= --set model.table_topic=false".
TRAIN_ARGS=${TRAIN_ARGS:-}
SEED=${SEED:-12}
D=datasets
W=$D/wikitables-turl-subset
G=$D/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
mkdir -p "$OUT/predictions"

# Fold files: $OUT/data/foldK/{train,dev}.csv beside the label and hierarchy files, and the
# same without the hierarchy file (the baseline without the closure).
python3 - "$W" "$OUT/data" <<'PY'
import csv, gzip, shutil, sys
from pathlib import Path
csv.field_size_limit(1 << 30)
src, out = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, "scripts/knowledge")
from common import fnv1a64  # the fold hash scripts/knowledge/ceiling.py uses too
train = list(csv.reader(gzip.open(src / "train_wikitables_subset_20.csv.gz", "rt", newline="")))
dev = list(csv.reader(gzip.open(src / "dev_wikitables_subset_2.csv.gz", "rt", newline="")))
assert train[0] == dev[0], "the two splits' headers differ"
for k in range(5):
    for closure in (True, False):
        d = out / (f"fold{k}" if closure else f"fold{k}-flat")
        d.mkdir(parents=True, exist_ok=True)
        held = [r for r in dev[1:] if fnv1a64(r[0]) % 5 == k]
        kept = [r for r in dev[1:] if fnv1a64(r[0]) % 5 != k]
        for name, rows in (("train.csv", train[1:] + kept), ("dev.csv", held)):
            with open(d / name, "w", newline="") as f:
                csv.writer(f).writerows([train[0]] + rows)
        files = ["wikitables-2_all_labels.txt", "labels_to_text_wikitables-2-cta.json"]
        files += ["wikitables-hierarchy-v2.json"] if closure else []
        for name in files:
            shutil.copy(src / name, d / name)
PY

fold() {
  local k=$1 F="$OUT/data/fold$1"
  # shellcheck disable=SC2086
  $BIN --threads 1 train --recipe recipes/colswarm-small.toml --set model.hierarchy_closure=true \
    --train "wikitables=turl-csv:$F/train.csv" \
    --train gittables=sato-cv:${G}0.csv.gz,${G}1.csv.gz,${G}2.csv.gz --train "t2d=t2d:$D/t2d-webtables/t2d.tar.gz#train" \
    --dev "wikitables=turl-csv:$F/dev.csv" \
    --seed "$SEED" --quiet $TRAIN_ARGS --out "$OUT/fold$k" > "$OUT/fold$k-train.json"
  # The mean of the last six epochs (the recipe's averaging).
  rm -rf "$OUT/fold$k-avg"
  mv "$OUT/fold$k/averaged" "$OUT/fold$k-avg"
  rm -rf "$OUT/fold$k-avg-flat" && cp -r "$OUT/fold$k-avg" "$OUT/fold$k-avg-flat"
  python3 -c "
import json, sys
path = sys.argv[1]
labels = json.load(open(path))
for namespace in labels['cta']:
    namespace['ancestors'] = []
json.dump(labels, open(path, 'w'))" \
    "$OUT/fold$k-avg-flat/labels.json"
  for v in "" -flat; do
    $BIN eval --model "$OUT/fold$k-avg$v" --format turl-csv --input "$F/dev.csv" --no-specialists \
      --json --predictions "$OUT/predictions/model$v-fold$k.jsonl" > "$OUT/model$v-fold$k.json"
    $BIN baseline --kind char-ngram --train "wikitables=turl-csv:$OUT/data/fold$k$v/train.csv" \
      --eval "wikitables=turl-csv:$OUT/data/fold$k$v/dev.csv" --json \
      --predictions "$OUT/predictions/baseline$v-fold$k.jsonl" > "$OUT/baseline$v-fold$k.json"
  done
}

for pair in "0 1" "2 3" "4"; do
  pids=()
  for k in $pair; do fold "$k" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done   # a failed fold stops the script
done
for v in model model-flat baseline baseline-flat; do
  cat "$OUT"/predictions/$v-fold?.jsonl > "$OUT/predictions/$v-all.jsonl"
done
for k in 0 1 2 3 4; do
  python3 -c "import json,sys; m,mf,b,bf=(json.load(open(f))['micro_f1'] for f in sys.argv[1:]); print(f'fold $k: model {m:.3f} (flat {mf:.3f}), baseline {b:.3f} (flat {bf:.3f})')" \
    "$OUT/model-fold$k.json" "$OUT/model-flat-fold$k.json" "$OUT/baseline-fold$k.json" "$OUT/baseline-flat-fold$k.json"
done
P=$OUT/predictions
for pair in "model baseline" "model-flat baseline-flat" "model-flat model" "baseline-flat baseline"; do
  set -- $pair
  echo "== $1 against $2"
  $BIN compare "$P/$1-all.jsonl" "$P/$2-all.jsonl" --json > "$OUT/compare-$1-vs-$2.json"
  $BIN compare "$P/$1-all.jsonl" "$P/$2-all.jsonl"
done
