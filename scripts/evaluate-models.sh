#!/bin/bash
# Scores a model trained on the training splits (the recipe of docs/TRAINING.md before its
# final fit on all the data: the shipped model has seen the dev splits), the primary alone,
# the specialists and the baselines on the dev splits, writing one JSON file per run into $OUT
# (default evals/), and
# compares the model with the char n-gram baseline target by target (a paired bootstrap over
# tables: compare-swarm-vs-char-ngram-*.json; the predictions go to $OUT/predictions/).
# Usage: scripts/evaluate-models.sh MODEL_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?usage: scripts/evaluate-models.sh MODEL_DIR (a model trained on the training splits)}
OUT=${OUT:-evals}
BIN=${BIN:-"cargo run -q -p colswarm-cli --"}
D=datasets
G=$D/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
mkdir -p "$OUT/predictions"
# name | format | dev input | dev split | training spec (for the baselines)
SETS=(
  "wikitables|turl-csv|$D/wikitables-turl-subset/dev_wikitables_subset_2.csv.gz|all|wikitables=turl-csv:$D/wikitables-turl-subset/train_wikitables_subset_20.csv.gz"
  "gittables|sato-cv|${G}3.csv.gz|all|gittables=sato-cv:${G}0.csv.gz,${G}1.csv.gz,${G}2.csv.gz"
  "t2d|t2d|$D/t2d-webtables/t2d.tar.gz|dev|t2d=t2d:$D/t2d-webtables/t2d.tar.gz#train"
)
for set in "${SETS[@]}"; do
  IFS='|' read -r name format input split train <<< "$set"
  $BIN eval --model "$MODEL" --format "$format" --input "$input" --split "$split" --json \
    --predictions "$OUT/predictions/swarm-$name.jsonl" > "$OUT/swarm-$name.json"
  $BIN eval --model "$MODEL" --format "$format" --input "$input" --split "$split" --no-specialists --json > "$OUT/primary-alone-$name.json"
  eval_spec="$name=$format:$input"
  [ "$split" != all ] && eval_spec="$eval_spec#$split"
  for kind in majority char-ngram; do
    $BIN baseline --kind "$kind" --train "$train" --eval "$eval_spec" --json \
      --predictions "$OUT/predictions/baseline-$kind-$name.jsonl" > "$OUT/baseline-$kind-$name.json"
  done
  $BIN compare "$OUT/predictions/swarm-$name.jsonl" "$OUT/predictions/baseline-char-ngram-$name.jsonl" \
    --json > "$OUT/compare-swarm-vs-char-ngram-$name.json"
done
if [ -n "${SPECIALISTS:-}" ]; then
  for set in "${SETS[@]}"; do
    IFS='|' read -r name format input split train <<< "$set"
    $BIN eval --model "$SPECIALISTS/$name" --format "$format" --input "$input" --split "$split" --json > "$OUT/specialist-$name.json"
  done
fi
python3 - "$OUT" <<'PY'
import json, sys, glob, os
rows = []
comparisons = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(path))
    if "p_a_not_better" in r:
        comparisons.append((os.path.basename(path)[:-5], r))
        continue
    rows.append((os.path.basename(path)[:-5], r.get("task"), r.get("n_columns"), r["micro_f1"], r["macro_f1"], r.get("labels_unknown"), r.get("activation_rate")))
print(f"{'run':<34} {'task':<4} {'n':>5} {'micro':>6} {'macro':>6} {'unk':>4} {'active':>6}")
for run, task, n, mi, ma, unk, act in rows:
    print(f"{run:<34} {task:<4} {n:>5} {mi:>6.3f} {ma:>6.3f} {unk:>4} {'' if act is None else f'{act:.2f}':>6}")
for run, c in comparisons:
    print(f"{run}: A - B {c['difference']:+.3f} (95% {c['ci_low']:+.3f} to {c['ci_high']:+.3f}), A not above B in {100 * c['p_a_not_better']:.1f}% of resamples")
PY
