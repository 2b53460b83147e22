#!/usr/bin/env bash
# Which composition pays? The specialist × routing part of the decisive experiment
# (docs/EXPERIMENTS.md, "Which composition pays"), on the nested protocol's fold models
# (scripts/evaluate-recipe.sh; fold K's model and expert were trained without fold K). For
# each fold, swarms that differ only in the specialist beside the fold's primary:
#   gold     the benchmark's domain expert, trained on the same gold tables as the primary;
#   other    a specialist trained on other data: T2D's `t2d-silver` (open-data columns, no T2D
#            table), or for WikiTables the expert OTHER names (e.g. one trained on the
#            `wikipedia` silver corpus, docs/CORPORA.md), named `wikitables-silver`;
#   gold-other the fold's own experts with that specialist beside them (WikiTables, GitTables);
#   control  an expert of the domain expert's shape and label list "trained" for one epoch at
#            a learning rate of 1e-12: the recipe's random initial weights.
# Each opens where the fold's domain expert opens (its chosen rule) and is named so that
# scripts/expert-routing-study.sh runs unchanged on it (FOLD_MODEL): the primary alone,
# the confidence rule with the plain average, every specialist on every table, and the trained
# arms (ARMS, default "trained mix-0": the PARL router with the mix, and the mix alone), each
# trained on one half of the held-out fold and scored on the other.
# Usage: BENCH=wikitables|t2d|gittables scripts/composition-study.sh   (CV default
# runs/evaluate-recipe/BENCH, OUT default runs/composition-study/BENCH; OTHER as above;
# VARIANTS default all of the benchmark's; FOLDS_RUN, e.g. "0 1", only those folds; BIN as in
# the other scripts). A few minutes a variant on the 2-core machine (GitTables about four times
# that); rerunning keeps what exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-wikitables}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
CV=${CV:-runs/evaluate-recipe/$BENCH}
OUT=${OUT:-runs/composition-study/$BENCH}
ARMS=${ARMS:-"trained mix-0"}
T=datasets/t2d-webtables/t2d.tar.gz
G=datasets/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
case $BENCH in
  wikitables)
    FOLDS="0 1 2 3 4"; VARIANTS=${VARIANTS:-"gold control${OTHER:+ other gold-other}"}
    SHAPE=(--set model.d_model=32 --set model.neighbour_ngrams=true --set model.hierarchy_closure=false)
    OTHER_NAME=wikitables-silver
    ;;
  t2d)
    FOLDS="0 1 2 3 4"; VARIANTS=${VARIANTS:-"gold other control"}
    SHAPE=(--set model.d_model=32)
    OTHER_NAME=t2d-silver
    ;;
  gittables)
    FOLDS="0 1 2 3"; VARIANTS=${VARIANTS:-"gold control"}
    SHAPE=(--set model.n_layers=1 --set model.neighbour_ngrams=true --set model.ngram_cells=100)
    OTHER_NAME=gittables-silver
    ;;
  *) echo "BENCH is wikitables, t2d or gittables" >&2; exit 2 ;;
esac
EXPERT="$BENCH-expert"
for variant in $VARIANTS; do
  case $variant in
    gold | control) ;;
    other | gold-other)
      # T2D's fold models carry `t2d-silver` already: their `gold-other` is the fold's own model.
      if [ "$BENCH" = t2d ] && [ "$variant" = gold-other ]; then
        echo "gold-other on t2d is the fold's own model (it carries t2d-silver): score it with expert-routing-study.sh" >&2
        exit 2
      fi
      if [ "$BENCH" != t2d ] && [ -z "${OTHER:-}" ]; then
        echo "the $variant variant on $BENCH needs OTHER, the specialist trained on other data" >&2; exit 2
      fi
      ;;
    *) echo "unknown variant $variant (gold, other, gold-other, control)" >&2; exit 2 ;;
  esac
done
# FOLDS_RUN: only these folds (to start on the folds whose models exist; the study pools
# whatever folds have been scored).
RUN_FOLDS=${FOLDS_RUN:-$FOLDS}
mkdir -p "$OUT"

# own K: the training data of fold K's expert, as the protocol gives it (scripts/evaluate_recipe.py).
own() {
  local k=$1 n j others
  n=$(echo $FOLDS | wc -w)
  j=$(((k + 1) % n))
  others=$(for i in $FOLDS; do [ "$i" != "$k" ] && [ "$i" != "$j" ] && printf '%s,' "$i"; done)
  others=${others%,}
  case $BENCH in
    wikitables) echo "wikitables=turl-csv:$CV/data/fold$k/train.csv" ;;
    t2d) echo "t2d=t2d:$T#folds=$others+folds=$j/half=1" ;;
    gittables)
      local files
      files=$(for i in $FOLDS; do [ "$i" != "$k" ] && printf '%s%s.csv.gz,' "$G" "$i"; done)
      echo "gittables=sato-cv:${files%,}#folds=1,2,3,4+folds=0/half=1"
      ;;
  esac
}

# rule K: the add-specialist flag of the rule fold K's domain expert opens by (none: every table).
rule() {
  python3 - "$CV/fold$1/final/swarm.json" "$EXPERT" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["specialists"]:
    if s["name"] == sys.argv[2] and "open_below" in s:
        print("--open-below", s["open_below"])
PY
}

# answering K: the names of fold K's specialists that answer (its experts).
answering() {
  python3 - "$CV/fold$1/final/swarm.json" <<'PY'
import json, sys
print(" ".join(s["name"] for s in json.load(open(sys.argv[1]))["specialists"]
               if s["contributes"] == "answers"))
PY
}

# swarm VARIANT K: fold K's primary with VARIANT's specialists, into OUT/VARIANT/foldK.
swarm() {
  local variant=$1 k=$2 dir="$OUT/$1/fold$2" bare="$OUT/$1/fold$2.bare" source name experts=()
  [ -d "$dir" ] && return
  rm -rf "$dir.partial" "$bare"
  mkdir -p "$OUT/$variant"
  name=$EXPERT
  case $variant in
    gold) source="$CV/fold$k/final/experts/$EXPERT" ;;
    other | gold-other)
      source=${OTHER:-"$CV/fold$k/final/experts/t2d-silver"}
      name=$OTHER_NAME
      ;;
    control)
      source="$OUT/control-experts/fold$k/averaged"
      if [ ! -d "$source" ]; then
        $BIN --threads 1 train --recipe recipes/expert.toml --quiet --out "$OUT/control-experts/fold$k" \
          "${SHAPE[@]}" --set optimizer.learning_rate=1e-12 --set averaging.last_epochs=1 \
          --epochs 1 --train "$(own "$k")" >/dev/null
      fi
      ;;
  esac
  if [ "$variant" = gold-other ]; then
    cp -r "$CV/fold$k/final" "$bare"
  else
    for expert in $(answering "$k"); do experts+=(--specialist "$expert"); done
    $BIN remove-specialist --model "$CV/fold$k/final" "${experts[@]}" --out "$bare" >/dev/null
  fi
  # It opens by the fold's rule for its domain expert, word-split into flags on purpose.
  # shellcheck disable=SC2046
  $BIN add-specialist --model "$bare" $(rule "$k") --specialist "$name=$source" \
    --out "$dir.partial" >/dev/null
  rm -rf "$bare"
  mv "$dir.partial" "$dir"
}

for variant in $VARIANTS; do
  for k in $RUN_FOLDS; do swarm "$variant" "$k"; done
  echo "== $BENCH, $variant"
  BENCH=$BENCH BIN="$BIN" FOLDS_RUN="$RUN_FOLDS" ARMS="$ARMS" CV="$CV" FOLD_MODEL="$OUT/$variant/fold{k}" \
    OUT="$OUT/study-$variant" scripts/expert-routing-study.sh
done
