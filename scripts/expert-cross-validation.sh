#!/bin/bash
# What domain experts add to the recipe's models (docs/TRAINING.md, "Domain experts"): for each
# fold model of scripts/wikitables-cross-validation.sh (WCV) and scripts/t2d-cross-validation.sh
# (TCV), the same recipe is trained on that fold's training tables of one benchmark alone (no
# specialists: recipes/expert.toml; seed $EXPERT_SEED, default 11; shape $EXPERT_SHAPE, `--set`
# changes of the recipe, default none, or per benchmark $WIKITABLES_SHAPE, $GITTABLES_SHAPE and
# $T2D_SHAPE; any other change of the expert, such as --set model.neighbour_ngrams=true, goes
# there too), joined to the fold model with `add-specialist`, and scored where the fold model was:
#   - WikiTables: each held-out dev fold (the no-closure models, as shipped), a WikiTables expert;
#   - GitTables cv_3: every WikiTables fold model, with a GitTables expert trained on cv_0–2;
#   - T2D: each held-out fold, CPA and CTA, a T2D expert trained on the other four folds.
# Each set is scored with every expert open (`--all-specialists`) and with the experts opening
# where the primary is unsure (`--open-below` each of $OPEN_BELOW), against the fold models
# alone (`--no-specialists`: the swarm's specialists change no answer); `colswarm compare` on the
# pooled predictions. Two runs at a time, one thread each: 5.5 minutes with version 13's shapes
# and one OPEN_BELOW on the 2-core machine of docs/TRAINING.md. Writes $OUT (default runs/expert-cv).
# Usage, after both cross-validations of the shipped recipe:
#   scripts/wikitables-cross-validation.sh
#   scripts/t2d-cross-validation.sh
#   WCV=runs/wikitables-cv TCV=runs/t2d-cv scripts/expert-cross-validation.sh
# Version 13's experts (version 12's read 20 cells in the GitTables expert):
#   N="--set model.d_model=32"; M="--set model.neighbour_ngrams=true"
#   WIKITABLES_SHAPE="$N $M" T2D_SHAPE="$N" OPEN_BELOW="0.9 0.95" \
#     GITTABLES_SHAPE="--set model.n_layers=1 $M --set model.ngram_cells=100" \
#     OUT=runs/expert-cv-v13 scripts/expert-cross-validation.sh
# Versions 14 and 15: the same with T2D_EXTRA=t2d-silver=models/colswarm-small/experts/t2d-silver
# and OPEN_BELOW=0.95; then `scripts/routing-report.py $OUT` prints how the cascade routes.
# Rerunning it keeps the experts already trained and the scores already written.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/expert-cv}
WCV=${WCV:-runs/wikitables-cv}
TCV=${TCV:-runs/t2d-cv}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
EXPERT_SEED=${EXPERT_SEED:-11}
# The experts' shape (the recipe's by default; another shape reads tables the same way).
EXPERT_SHAPE=${EXPERT_SHAPE:-}
WIKITABLES_SHAPE=${WIKITABLES_SHAPE:-$EXPERT_SHAPE}
GITTABLES_SHAPE=${GITTABLES_SHAPE:-$EXPERT_SHAPE}
T2D_SHAPE=${T2D_SHAPE:-$EXPERT_SHAPE}
# NAME=DIR of a trained expert joined beside each fold's T2D expert in the T2D scores, e.g.
# version 14's silver expert (trained on no T2D table): T2D_EXTRA=t2d-silver=models/colswarm-small/experts/t2d-silver
T2D_EXTRA=${T2D_EXTRA:-}
OPEN_BELOW=${OPEN_BELOW:-"0.5 0.7 0.8 0.9 0.95 0.99"}
D=datasets
G=$D/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
P=$OUT/predictions
mkdir -p "$P"
for k in 0 1 2 3 4; do
  for dir in "$WCV/fold$k-avg-flat" "$TCV/fold$k-avg"; do
    [ -d "$dir" ] || { echo "missing $dir: run the cross-validation scripts first" >&2; exit 1; }
  done
done

# recipes/expert.toml: the shipped recipe without specialists, so that an expert reads tables as
# the primary does; it averages the last six epochs into OUT_DIR/averaged.
expert() {  # OUT_DIR SHAPE TRAIN_SPEC...
  local out=$1 shape=$2
  shift 2
  [ -d "$out-avg" ] && return
  # shellcheck disable=SC2086
  $BIN --threads 1 train --recipe recipes/expert.toml $shape \
    --seed "$EXPERT_SEED" --quiet "$@" --out "$out" > "$out.json"
  mv "$out/averaged" "$out-avg"
}

# Scores MODEL with EXPERT_DIR beside it as NAME, every way: NAME-alone, NAME-all, NAME-below-P.
score() {  # TAG MODEL NAME EXPERT_DIR EVAL_ARGS...
  local tag=$1 model=$2 name=$3 expert_dir=$4 last
  shift 4
  last=$(echo "$OPEN_BELOW" | awk '{print $NF}')
  [ -s "$OUT/$tag-below-$last.json" ] && return   # scored by an earlier run
  $BIN eval --model "$model" "$@" --no-specialists --json \
    --predictions "$P/$tag-alone.jsonl" > "$OUT/$tag-alone.json"
  rm -rf "$OUT/models/$tag" "$OUT/models/$tag-one"
  if [ -n "$T2D_EXTRA" ] && [[ $tag == t2d-* ]]; then
    $BIN add-specialist --model "$model" --specialist "$name=$expert_dir" --out "$OUT/models/$tag-one" > /dev/null
    $BIN add-specialist --model "$OUT/models/$tag-one" --specialist "$T2D_EXTRA" --out "$OUT/models/$tag" > /dev/null
    rm -rf "$OUT/models/$tag-one"
  else
    $BIN add-specialist --model "$model" --specialist "$name=$expert_dir" --out "$OUT/models/$tag" > /dev/null
  fi
  $BIN eval --model "$OUT/models/$tag" "$@" --all-specialists --json \
    --predictions "$P/$tag-all.jsonl" > "$OUT/$tag-all.json"
  for p in $OPEN_BELOW; do
    python3 -c "
import json, sys
path = sys.argv[1] + '/swarm.json'
manifest = json.load(open(path))
for e in manifest['specialists']:
    if e['contributes'] == 'answers':
        e['open_below'] = float(sys.argv[2])
json.dump(manifest, open(path, 'w'), indent=2)" "$OUT/models/$tag" "$p"
    $BIN eval --model "$OUT/models/$tag" "$@" --json \
      --predictions "$P/$tag-below-$p.jsonl" > "$OUT/$tag-below-$p.json"
  done
}

fold() {
  local k=$1 others
  others=$(python3 -c "print(','.join(str(i) for i in range(5) if i != $k))")
  expert "$OUT/wikitables-fold$k" "$WIKITABLES_SHAPE" --train "wikitables=turl-csv:$WCV/data/fold$k/train.csv"
  expert "$OUT/t2d-fold$k" "$T2D_SHAPE" --train "t2d=t2d:$D/t2d-webtables/t2d.tar.gz#folds=$others"
  score "wikitables-fold$k" "$WCV/fold$k-avg-flat" wikitables-expert "$OUT/wikitables-fold$k-avg" \
    --format turl-csv --input "$WCV/data/fold$k/dev.csv"
  score "gittables-fold$k" "$WCV/fold$k-avg-flat" gittables-expert "$OUT/gittables-avg" \
    --format sato-cv --input "${G}3.csv.gz"
  for task in cpa cta; do
    score "t2d-$task-fold$k" "$TCV/fold$k-avg" t2d-expert "$OUT/t2d-fold$k-avg" \
      --format t2d --input $D/t2d-webtables/t2d.tar.gz --split "folds=$k" --task $task
  done
}

expert "$OUT/gittables" "$GITTABLES_SHAPE" --train "gittables=sato-cv:${G}0.csv.gz,${G}1.csv.gz,${G}2.csv.gz"
for pair in "0 1" "2 3" "4"; do
  pids=()
  for k in $pair; do fold "$k" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid"; done
done

# Prints A − B for the pooled folds, or fold by fold for GitTables, whose five fold models are
# all scored on the same cv_3 tables.
compare() {  # SET A B
  local set=$1 a=$2 b=$3
  if [ "$set" = gittables ]; then
    for k in 0 1 2 3 4; do
      echo -n "fold $k: "
      $BIN compare "$P/$set-fold$k-$a.jsonl" "$P/$set-fold$k-$b.jsonl" | head -1
    done
  else
    cat "$P/$set"-fold?-"$a".jsonl > "$P/$set-$a.jsonl"
    cat "$P/$set"-fold?-"$b".jsonl > "$P/$set-$b.jsonl"
    $BIN compare "$P/$set-$a.jsonl" "$P/$set-$b.jsonl" --json > "$OUT/compare-$set-$a-vs-$b.json"
    $BIN compare "$P/$set-$a.jsonl" "$P/$set-$b.jsonl" | head -1
  fi
}

for set in wikitables gittables t2d-cpa t2d-cta; do
  echo "== $set: every expert open against the fold models alone"
  compare $set all alone
  for p in $OPEN_BELOW; do
    opened=$(python3 -c "
import json, sys
rates = [r['routing']['specialists'][-1]['overall']['rate'] for r in map(json.load, map(open, sys.argv[1:]))]
print(f'{sum(rates) / len(rates):.2f}')" "$OUT/$set"-fold?-below-$p.json)
    echo "-- opening below $p (on $opened of the tables, the mean over folds): against the fold models alone, then against every expert open"
    compare $set below-$p alone
    compare $set below-$p all
  done
done
