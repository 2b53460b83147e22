#!/bin/bash
# The seed spread of version 6's recipe trained on WikiTables alone, against the char n-gram
# baseline's: how large a WikiTables difference must be before one run's score says anything
# (docs/EXPERIMENTS.md, the rows on the seed spread and on one training set against three).
#
# For each seed in $SEEDS a primary is trained on the WikiTables training subset alone (version
# 6's flags, no specialists, 10 epochs), its last six epochs are averaged as version 6's were,
# and the average is scored on the dev split; then the baseline is trained with SGD orders 0–4.
# $TRAIN_EXTRA goes to `train` (e.g. TRAIN_EXTRA="--set optimizer.lr_decay=linear"), and $TOKENS sets the
# table read's length (default 128, version 6's).
# One thread per run, two runs at a time: about one minute per pair of seeds on the 2-core
# machine of docs/TRAINING.md. Writes $OUT (default runs/wikitables-seeds) and prints one line
# per run and the means.
# Usage: [SEEDS="11 12 13 14 15"] [TRAIN_EXTRA=--set\ optimizer.lr_decay=linear] [TOKENS=128] scripts/wikitables-seed-spread.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/wikitables-seeds}
BIN=${BIN:-"cargo run -q -p colswarm-cli --"}
SEEDS=${SEEDS:-"11 12 13 14 15"}
TRAIN_EXTRA=${TRAIN_EXTRA:-}
TOKENS=${TOKENS:-128}
W=datasets/wikitables-turl-subset
TRAIN_SET="wikitables=turl-csv:$W/train_wikitables_subset_20.csv.gz"
DEV_SET="wikitables=turl-csv:$W/dev_wikitables_subset_2.csv.gz"
mkdir -p "$OUT"

micro_f1() { python3 -c 'import json, sys; print("%.3f" % json.load(sys.stdin)["micro_f1"])'; }

run() {
  local seed=$1 dir="$OUT/seed$1"
  # shellcheck disable=SC2086
  # Version 6: the shipped recipe without specialists and word vectors, closing its predictions.
  $BIN --threads 1 train --recipe recipes/colswarm-small.toml --set 'model.specialists=[]' \
    --set model.word_vectors= --set model.table_topic=false --set model.hierarchy_closure=true \
    --set data.serialize.max_table_tokens="$TOKENS" --set run.keep_last=6 --set averaging.last_epochs=0 \
    --seed "$seed" --quiet $TRAIN_EXTRA \
    --train "$TRAIN_SET" --dev "$DEV_SET" --out "$dir" > "$dir.train.json"
  # shellcheck disable=SC2046
  $BIN average $(ls -d "$dir"/checkpoints/step-*/model) --out "$dir-avg" > /dev/null
  $BIN --threads 1 eval --model "$dir-avg" --format turl-csv --input "$W/dev_wikitables_subset_2.csv.gz" \
    --no-specialists --json > "$dir-avg.eval.json"
  echo "model seed $seed: $(micro_f1 < "$dir-avg.eval.json")"
}

# shellcheck disable=SC2206
seeds=($SEEDS)
for ((i = 0; i < ${#seeds[@]}; i += 2)); do
  run "${seeds[i]}" &
  if ((i + 1 < ${#seeds[@]})); then run "${seeds[i + 1]}"; fi
  wait
done
for order in 0 1 2 3 4; do
  # shellcheck disable=SC2086
  $BIN baseline --kind char-ngram --seed "$order" --train "$TRAIN_SET" --eval "$DEV_SET" \
    --json > "$OUT/baseline-order$order.json"
  echo "baseline SGD order $order: $(micro_f1 < "$OUT/baseline-order$order.json")"
done
python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
for kind, pattern in (("model", "seed*-avg.eval.json"), ("baseline", "baseline-order*.json")):
    scores = [json.load(open(p))["micro_f1"] for p in glob.glob(f"{sys.argv[1]}/{pattern}")]
    print(f"{kind}: mean {statistics.mean(scores):.3f}, range {min(scores):.3f}–{max(scores):.3f}"
          f" over {len(scores)} runs")
PY
