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
#   branch   the fold's own primary, continued from its weights on other data (BRANCH_DATA,
#            for BRANCH_EPOCHS epochs): WikiTables the `wikipedia` silver corpus (103k labelled
#            columns, one epoch), GitTables the `opendata` one (14k, three epochs; CORPORA.md),
#            T2D that corpus renamed into T2D's properties (one epoch; `t2d-silver`'s data);
#   branch-replay the same, its data BRANCH_DATA and the fold's own gold training tables (so
#            that it keeps what the primary knows);
#   gold-branch, gold-branch-replay the fold's own experts with that branch beside them;
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
case $BENCH in
  wikitables)
    FOLDS="0 1 2 3 4"; VARIANTS=${VARIANTS:-"gold control${OTHER:+ other gold-other}"}
    OTHER_NAME=wikitables-silver
    BRANCH_DATA=${BRANCH_DATA:-"wikitables=turl-csv:.corpora/wikipedia-turl/silver-all.csv"}
    ;;
  t2d)
    FOLDS="0 1 2 3 4"; VARIANTS=${VARIANTS:-"gold other control"}
    OTHER_NAME=t2d-silver
    BRANCH_DATA=${BRANCH_DATA:-"t2d=sato-cv:.corpora/opendata/silver-t2d.csv"}
    ;;
  gittables)
    FOLDS="0 1 2 3"; VARIANTS=${VARIANTS:-"gold control"}
    OTHER_NAME=gittables-silver
    BRANCH_DATA=${BRANCH_DATA:-"gittables=sato-cv:.corpora/opendata/silver-dbpedia.csv"}
    BRANCH_EPOCHS=${BRANCH_EPOCHS:-3}
    ;;
  *) echo "BENCH is wikitables, t2d or gittables" >&2; exit 2 ;;
esac
EXPERT="$BENCH-expert"
for variant in $VARIANTS; do
  case $variant in
    gold | control) ;;
    branch | gold-branch | branch-replay | gold-branch-replay)
      if [ -z "${BRANCH_DATA:-}" ]; then
        echo "the $variant variant on $BENCH needs BRANCH_DATA, the data spec the branch continues on" >&2; exit 2
      fi
      ;;
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
    *) echo "unknown variant $variant (gold, other, gold-other, branch[-replay], gold-branch[-replay], control)" >&2
       exit 2 ;;
  esac
done
# FOLDS_RUN: only these folds (to start on the folds whose models exist; the study pools
# whatever folds have been scored).
RUN_FOLDS=${FOLDS_RUN:-$FOLDS}
mkdir -p "$OUT"

# fold K FIELD: fold K's expert training data (`own`) or shape flags (`shape`), as the protocol
# gives them (scripts/recipe_folds.py).
fold() {
  python3 - "$BENCH" "$1" "$2" "$(dirname "$CV")" <<'PY'
import sys
from pathlib import Path
from types import SimpleNamespace
sys.path.insert(0, "scripts")
from recipe_folds import FOLDS, Fold
bench, k, field, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
fold = Fold(bench, k, FOLDS[bench], SimpleNamespace(out=out))
print(fold.own[0] if field == "own" else " ".join(fold.expert_shape))
PY
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

# specialists MODEL [KIND]: the names of MODEL's specialists, only those that contribute KIND
# (`answers`: its experts; `state`) if given.
specialists() {
  python3 - "$1/swarm.json" "${2:-}" <<'PY'
import json, sys
print(" ".join(s["name"] for s in json.load(open(sys.argv[1]))["specialists"]
               if sys.argv[2] in ("", s["contributes"])))
PY
}

# branch K [replay]: fold K's primary, its state specialists taken out (they change no answer),
# continued from its own weights (`model.init_from`; the heads keep the labels the data has) on
# BRANCH_DATA (data specs, space-separated) and, with `replay`, the fold's own gold training data.
branch() {
  local dir="$OUT/branch${2:+-$2}-experts/fold$1" parent="$OUT/branch-experts/fold$1.parent"
  local states=() data=() own="" merged=""
  if [ -n "${2:-}" ]; then own=$(fold "$1" own); fi
  for spec in $BRANCH_DATA; do
    # Data of the fold's own format joins its set (paths first, the own set's split, if any,
    # applying to the whole set); data of another format is a second set of the namespace.
    if [ -n "$own" ] && [ "${spec%%:*}" = "${own%%:*}" ]; then
      spec="${own%%:*}:${spec#*:},${own#*:}"
      merged=1
    fi
    data+=(--train "$spec")
  done
  if [ -n "$own" ] && [ -z "$merged" ]; then data+=(--train "$own"); fi
  if [ ! -d "$dir/averaged" ]; then
    if [ ! -d "$parent" ]; then
      for name in $(specialists "$CV/fold$1/model-avg" state); do states+=(--specialist "$name"); done
      $BIN remove-specialist --model "$CV/fold$1/model-avg" "${states[@]}" --out "$parent" >/dev/null
    fi
    $BIN --threads 1 train --recipe recipes/colswarm-small.toml --quiet --out "$dir" \
      --set 'model.specialists=[]' --set "model.init_from=$parent" \
      --set averaging.last_epochs=1 --epochs "${BRANCH_EPOCHS:-1}" "${data[@]}" >/dev/null
  fi
  echo "$dir/averaged"
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
    branch | gold-branch | branch-replay | gold-branch-replay)
      case $variant in *-replay) source=$(branch "$k" replay) ;; *) source=$(branch "$k") ;; esac
      name=$BENCH-branch
      ;;
    control)
      source="$OUT/control-experts/fold$k/averaged"
      if [ ! -d "$source" ]; then
        # shellcheck disable=SC2046
        $BIN --threads 1 train --recipe recipes/expert.toml --quiet --out "$OUT/control-experts/fold$k" \
          $(fold "$k" shape) --set optimizer.learning_rate=1e-12 --set averaging.last_epochs=1 \
          --epochs 1 --train "$(fold "$k" own)" >/dev/null
      fi
      ;;
  esac
  if [ "${variant#gold-}" != "$variant" ]; then
    cp -r "$CV/fold$k/final" "$bare"
  else
    for expert in $(specialists "$CV/fold$k/final" answers); do experts+=(--specialist "$expert"); done
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
