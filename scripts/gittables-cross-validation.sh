#!/usr/bin/env bash
# Four-fold cross-validation of GitTables CTA (DBpedia) for the shipped recipe: each of cv_0..cv_3
# is scored once, by a model trained as the shipped one (docs/TRAINING.md, "The shipped model's
# recipe": WikiTables train and dev, all of T2D, and the other three GitTables folds; seed 12,
# the mean of the last six of ten epochs; the PARL stage left out) with a GitTables expert
# trained on the same three folds alone (the shipped expert's shape, seed 11), opening below
# 0.95. Writes the pooled predictions of the model alone and with its expert to
# $OUT/predictions-{alone,expert}-all.jsonl, for `colswarm compare` (the nested protocol,
# scripts/evaluate-recipe.sh, scores the peers). Two folds at a time, one thread
# each: about 35 minutes on the 2-core machine. Rerunning keeps what is already trained.
# Usage: scripts/gittables-cross-validation.sh   (OUT default runs/gittables-cv; BIN as in the
# other scripts)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gittables-cv}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
D=datasets
W=$D/wikitables-turl-subset
G=$D/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
mkdir -p "$OUT"

# Trains OUT_DIR with the given recipe and flags unless its average exists; the recipe averages
# the last six epochs.
train() {
  local out=$1
  shift
  [ -d "$out-avg" ] && return
  $BIN --threads 1 train --quiet "$@" --out "$out" >"$out.json"
  mv "$out/averaged" "$out-avg"
}

fold() {
  local k=$1 others
  others=$(python3 -c "print(','.join(f'${G}{i}.csv.gz' for i in range(4) if i != $k))")
  train "$OUT/model$k" --recipe recipes/colswarm-small.toml \
    --train "wikitables=turl-csv:$W/train_wikitables_subset_20.csv.gz,$W/dev_wikitables_subset_2.csv.gz" \
    --train "gittables=sato-cv:$others" --train "t2d=t2d:$D/t2d-webtables/t2d.tar.gz"
  train "$OUT/expert$k" --recipe recipes/expert.toml --set model.n_layers=1 \
    --set model.neighbour_ngrams=true --set model.ngram_cells=100 --train "gittables=sato-cv:$others"
  rm -rf "$OUT/swarm$k"
  $BIN add-specialist --model "$OUT/model$k-avg" --specialist "gittables-expert=$OUT/expert$k-avg" \
    --open-below 0.95 --out "$OUT/swarm$k" >/dev/null
  $BIN --threads 1 eval --model "$OUT/model$k-avg" --format sato-cv --input "${G}$k.csv.gz" \
    --no-specialists --json --predictions "$OUT/predictions-alone-fold$k.jsonl" >"$OUT/alone-fold$k.json"
  $BIN --threads 1 eval --model "$OUT/swarm$k" --format sato-cv --input "${G}$k.csv.gz" \
    --json --predictions "$OUT/predictions-expert-fold$k.jsonl" >"$OUT/expert-fold$k.json"
}

for pair in "0 1" "2 3"; do
  pids=()
  for k in $pair; do fold "$k" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done   # a failed fold stops the script
done
for v in alone expert; do
  cat "$OUT"/predictions-$v-fold?.jsonl >"$OUT/predictions-$v-all.jsonl"
done
for k in 0 1 2 3; do
  python3 -c "import json,sys; a,e=(json.load(open(f))['micro_f1'] for f in sys.argv[1:]); print(f'cv_$k: alone {a:.3f}, with its expert {e:.3f}')" \
    "$OUT/alone-fold$k.json" "$OUT/expert-fold$k.json"
done
$BIN compare "$OUT/predictions-expert-all.jsonl" "$OUT/predictions-alone-all.jsonl" | head -1
