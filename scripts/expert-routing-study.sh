#!/usr/bin/env bash
# Does a trained router and logit mix beat the confidence rule and the plain average? On
# GitTables' four folds, with the models of scripts/gittables-cross-validation.sh (fold K's
# model and GitTables expert were trained on the other three folds, so neither saw fold K):
# fold K's tables are cut in two by the hash split (parts 0,1 and parts 2,3,4); the routing is
# trained on one half with `train-router --experts` (a fixed number of steps, no dev set: no
# setting is chosen on scored tables) and scores the other, and the other way round. Every
# table is scored once per arm; the predictions of the eight halves are pooled and compared
# table by table (`colswarm compare`) with the rule (the expert opens where the primary's least
# confident column is below 0.95, its logits averaged in) and the primary alone.
# Arms, each trained with seeds 1, 2, 3 (SEEDS, e.g. "4 5 6", for others):
#   trained  the router and the mix from the rule and the average;
#   from-0   the router from the rule, the mix from the identity (θ = 0);
#   mix-0    the rule kept as the router, the mix alone trained from the identity;
# NESTED=1 then scores each fold with the median mix weights the other folds' mix-0 runs
# learned (what a shipped model stores; see the end of this script).
# BENCH=t2d runs the same on T2D CTA's five folds instead: fold K's model is the T2D
# cross-validation's (scripts/t2d-cross-validation.sh, TCV default runs/t2d-cv) with
# `t2d-silver` beside it (trained on open-data columns, no T2D table: an expert that knows
# something the primary was not trained on), opening below 0.95 as shipped; the halves are
# `folds=K/half=0` and `/half=1`.
# BENCH=wikitables runs it on WikiTables' five folds: fold K's model and WikiTables expert are
# the nested protocol's (scripts/evaluate-recipe.sh; CV default runs/evaluate-recipe/wikitables,
# the model in foldK/final, trained without fold K), fold K's held-out tables
# (CV/data/foldK/test.csv, hash fold K) cut in two as T2D's are. FOLDS_RUN overrides
# the folds run (to split the work between processes).
# FOLD_MODEL names fold K's model instead, with {k} for K (e.g. the nested protocol's
# `runs/evaluate-recipe/t2d/fold{k}/final`, which holds the T2D expert and `t2d-silver`);
# TASK_ARGS replaces the scored task's flags (e.g. "--task cpa").
# Usage: scripts/expert-routing-study.sh   (CV default runs/gittables-cv, OUT runs/expert-routing;
# STEPS default 300; ARMS, default all three; TRAIN_ARGS adds flags to train-router, e.g.
# "--lr 1e-3"; BIN as in the other
# scripts). About two minutes on the 2-core machine; rerunning keeps what exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-gittables}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
STEPS=${STEPS:-300}
SEEDS=${SEEDS:-"1 2 3"}
ARMS=${ARMS:-"trained from-0 mix-0"}
G=datasets/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
T=datasets/t2d-webtables/t2d.tar.gz
case $BENCH in
  gittables)
    CV=${CV:-runs/gittables-cv}
    OUT=${OUT:-runs/expert-routing}
    FOLDS="0 1 2 3"
    HALVES=("0,1|2,3,4" "2,3,4|0,1")
    TASK=()
    ;;
  t2d)
    CV=${CV:-runs/t2d-silver-cv}
    OUT=${OUT:-runs/expert-routing-t2d}
    FOLDS="0 1 2 3 4"
    HALVES=("0|1" "1|0")
    TASK=(--task cta)
    TCV=${TCV:-runs/t2d-cv}
    for k in $FOLDS; do
      [ -n "${FOLD_MODEL:-}" ] || [ -d "$CV/swarm$k" ] && continue
      $BIN add-specialist --model "$TCV/fold$k-avg" --out "$CV/swarm$k" --open-below 0.95 \
        --specialist t2d-silver=models/colswarm-small/experts/t2d-silver >/dev/null
    done
    ;;
  wikitables)
    CV=${CV:-runs/evaluate-recipe/wikitables}
    OUT=${OUT:-runs/expert-routing-wikitables}
    FOLDS="0 1 2 3 4"
    HALVES=("0|1" "1|0")
    TASK=(--task cta)
    ;;
  *) echo "BENCH is gittables, t2d or wikitables" >&2; exit 2 ;;
esac
FOLDS=${FOLDS_RUN:-$FOLDS}
[ -n "${TASK_ARGS:-}" ] && read -r -a TASK <<< "$TASK_ARGS"
mkdir -p "$OUT"

# The protocol's fold models store the mix they learned: the study starts from copies whose
# mix is the plain average again (OUT/base/foldK), so that "the rule" is the rule and the
# average.
[ "$BENCH" = wikitables ] && FOLD_MODEL=${FOLD_MODEL:-"$CV/fold{k}/final"}
if [ -n "${FOLD_MODEL:-}" ]; then
  mkdir -p "$OUT/base"
  python3 scripts/mix_weights.py --average "$OUT/base" --fold-model "$FOLD_MODEL" \
    --folds "$(echo $FOLDS | tr ' ' ',')" --bin "$BIN"
fi

# model K: fold K's model with its expert.
model() {
  if [ -n "${FOLD_MODEL:-}" ]; then
    echo "$OUT/base/fold$1"
  else
    echo "$CV/swarm$1"
  fi
}

# data K PART: the data spec of fold K's PART (a list of hash folds of GitTables' cv_K file, or
# a half of T2D's fold K), as FORMAT:PATH#SPLIT.
data() {
  case $BENCH in
    gittables) echo "sato-cv:${G}$1.csv.gz#folds=$2" ;;
    t2d) echo "t2d:$T#folds=$1/half=$2" ;;
    wikitables) echo "turl-csv:$CV/data/fold$1/test.csv#folds=$1/half=$2" ;;
  esac
}

# score NAME MODEL K PART [FLAGS]: predictions of MODEL on fold K's PART.
score() {
  local name=$1 model=$2 k=$3 part=$4
  shift 4
  local file="$OUT/$name-fold$k-$part.jsonl" spec
  [ -s "$file" ] && [ -s "$file.json" ] && return
  spec=$(data "$k" "$part")
  $BIN --threads 1 eval --model "$model" --format "${spec%%:*}" --input "$(echo "${spec#*:}" | cut -d'#' -f1)" \
    --split "${spec##*#}" "${TASK[@]}" --json --predictions "$file.partial" "$@" >"$file.json.partial"
  mv "$file.json.partial" "$file.json"
  mv "$file.partial" "$file"
}

# reads NAME: the share of (table, expert) pairs the experts read in NAME's pooled reports.
reads() {
  python3 - "$OUT" "$1" <<'PY'
import glob, json, sys
out, name = sys.argv[1:]
opened = pairs = 0
for path in glob.glob(f"{out}/{name}-fold*.jsonl.json"):
    for s in json.load(open(path))["routing"]["specialists"]:
        if "-expert" in s["name"] or s["name"].endswith(("-silver", "-branch")):
            opened += s["overall"]["opened"]
            pairs += s["overall"]["tables"]
print(f"{opened / pairs:.0%} of {pairs} (table, expert) pairs" if pairs else "no expert")
PY
}

for k in $FOLDS; do
  for half in "${HALVES[@]}"; do
    IFS='|' read -r fit scored <<< "$half"
    score alone "$(model "$k")" "$k" "$scored" --no-specialists
    score rule "$(model "$k")" "$k" "$scored"
    score all "$(model "$k")" "$k" "$scored" --all-specialists
    for seed in $SEEDS; do
      for arm in $ARMS; do
        run="$OUT/runs/$arm-seed$seed-fold$k-$fit"
        extra=()
        [ "$arm" = from-0 ] && extra=(--mix-start 0)
        [ "$arm" = mix-0 ] && extra=(--mix-start 0 --mix-only)
        if [ ! -d "$run/model" ]; then
          $BIN --threads 1 train-router --experts --quiet --model "$(model "$k")" \
            --train "$BENCH=$(data "$k" "$fit")" --steps "$STEPS" \
            --eval-every 0 --seed "$seed" "${extra[@]}" ${TRAIN_ARGS:-} --out "$run" >/dev/null
        fi
        score "$arm-seed$seed" "$run/model" "$k" "$scored"
      done
    done
  done
done

pool() { cat "$OUT"/$1-fold?-*.jsonl >"$OUT/$1-all.jsonl"; }
pool alone
pool rule
pool all
for seed in $SEEDS; do
  for arm in $ARMS; do pool "$arm-seed$seed"; done
done
for seed in $SEEDS; do
  for arm in $ARMS; do
    echo "$arm seed $seed against the rule: $($BIN compare "$OUT/$arm-seed$seed-all.jsonl" "$OUT/rule-all.jsonl" | head -1)"
  done
done
echo "rule against the primary alone: $($BIN compare "$OUT/rule-all.jsonl" "$OUT/alone-all.jsonl" | head -1)"
echo "every expert on every table against the rule: $($BIN compare "$OUT/all-all.jsonl" "$OUT/rule-all.jsonl" | head -1)"
echo "reads: the rule $(reads rule); every table $(reads all)"
for arm in $ARMS; do
  for seed in $SEEDS; do echo "reads: $arm seed $seed $(reads "$arm-seed$seed")"; done
done

# NESTED=1: the mix-0 arm's weights as a shipped model would store them. Fold K's model gets,
# for each (expert, namespace), the median θ the runs of the other folds learned
# (scripts/mix_weights.py), and scores both halves of fold K.
if [ "${NESTED:-0}" = 1 ]; then
  python3 scripts/mix_weights.py --nested "$OUT/nested" --fold-model "$(model '{k}')" \
    --bin "$BIN" "$OUT" >/dev/null
  for k in $FOLDS; do
    for half in "${HALVES[@]}"; do
      IFS='|' read -r fit scored <<< "$half"
      score nested "$OUT/nested/fold$k" "$k" "$scored"
      score nested-open "$OUT/nested/fold$k" "$k" "$scored" --all-specialists
    done
  done
  pool nested
  pool nested-open
  echo "nested medians, every expert on every table, against the same with the rule: $($BIN compare "$OUT/nested-open-all.jsonl" "$OUT/nested-all.jsonl" | head -1)"
  echo "nested medians against the rule: $($BIN compare "$OUT/nested-all.jsonl" "$OUT/rule-all.jsonl" | head -1)"
  echo "nested medians against the primary alone: $($BIN compare "$OUT/nested-all.jsonl" "$OUT/alone-all.jsonl" | head -1)"
fi
