#!/usr/bin/env bash
# The fine-tuning learning curve on a label space the shipped model has never seen: GitTables'
# schema.org property labels (sp_semi1_cv_*). For k = 5, 20, 100 labelled columns per type and
# all of them, sampled from folds cv_0..cv_2 with seeds 0, 1, 2, three systems are trained on
# the same labelled columns and scored on every labelled column of cv_3:
#   fine-tuned   colswarm fine-tune on the shipped model (a new namespace on the frozen model)
#   scratch      colswarm train, the shipped recipe's reading settings, from random weights
#   char-ngram   colswarm baseline --kind char-ngram
# Each pair is compared with `colswarm compare` (paired bootstrap over tables), on all of cv_3
# and on its tables that the shipped model never read (318 of its 574 tables are also in the
# DBpedia folds the shipped model was trained on, with other labels).
#
# Usage: scripts/fine-tune-curve.sh   (OUT default runs/fine-tune-curve; BIN as below)
# Writes $OUT/curve.tsv and prints it; about 15 minutes on the 2-core machine (most of it the
# scratch models). Rerunning keeps what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/fine-tune-curve}
BIN=${BIN:-target/release/colswarm}
[ -x "$BIN" ] || cargo build -q --release -p colswarm-cli
MODEL=${MODEL:-models/colswarm-small}
F=datasets/gittables-semtab22/gt-semtab22-schema-property-all/sp_semi1_cv_
G=datasets/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
mkdir -p "$OUT"
T=$OUT/tables

# Test labels: every labelled column of cv_3, and those of its tables outside the DBpedia folds.
[ -f "$OUT/test-all.csv" ] ||
  scripts/sato-cv-to-labels.py --tables "$T" --labels "$OUT/test-all.csv" "${F}3.csv.gz"
[ -f "$OUT/test-unseen.csv" ] || python3 - "$OUT" "$G" <<'PY'
import csv, gzip, sys
out, g = sys.argv[1], sys.argv[2]
seen = set()
for i in range(4):
    with gzip.open(f"{g}{i}.csv.gz", "rt", encoding="utf-8", newline="") as f:
        csv.field_size_limit(sys.maxsize)
        seen.update(r["table_id"] + ".csv" for r in csv.DictReader(f))
rows = list(csv.reader(open(f"{out}/test-all.csv", encoding="utf-8", newline="")))
with open(f"{out}/test-unseen.csv", "w", encoding="utf-8", newline="") as f:
    w = csv.writer(f)
    w.writerow(rows[0])
    w.writerows(r for r in rows[1:] if r[0] not in seen)
PY

arm() { # NAME K SEED: predictions for both test sets
  local name=$1 k=$2 seed=$3 train=$OUT/train-k$2-s$3.csv run=$OUT/$1-k$2-s$3
  [ -f "$run.unseen.jsonl" ] && return
  case $name in
    fine-tuned)
      rm -rf "$run"
      $BIN fine-tune --model "$MODEL" --tables "$T" --labels "$train" --namespace sp --seed "$seed" \
        --out "$run" --quiet >"$run.txt" 2>&1
      model=$run ;;
    scratch)
      rm -rf "$run" "$run-avg"
      $BIN --threads 1 train --recipe recipes/expert.toml --set run.keep_last=6 \
        --seed $((12 + seed)) --quiet --train "sp=labels:$T,$train" --out "$run" >"$run.txt"
      mv "$run/averaged" "$run-avg"
      model=$run-avg ;;
    char-ngram)
      for test in all unseen; do
        $BIN baseline --kind char-ngram --seed "$seed" --train "sp=labels:$T,$train" \
          --eval "sp=labels:$T,$OUT/test-$test.csv" --predictions "$run.$test.jsonl" >/dev/null
      done
      return ;;
  esac
  for test in all unseen; do
    $BIN eval --model "$model" --format labels --input "$T" --input "$OUT/test-$test.csv" \
      --namespace sp --predictions "$run.$test.jsonl" >/dev/null 2>&1
  done
}

printf 'k\tseed\ttest\tcolumns\tfine-tuned\tscratch\tchar-ngram\tft-scratch\tft-scratch 95%%\tft-ngram\tft-ngram 95%%\n' >"$OUT/curve.tsv"
for k in 5 20 100 0; do
  for seed in 0 1 2; do
    train=$OUT/train-k$k-s$seed.csv
    [ -f "$train" ] || scripts/sato-cv-to-labels.py --tables "$T" --labels "$train" \
      --per-label "$k" --seed "$seed" "${F}0.csv.gz" "${F}1.csv.gz" "${F}2.csv.gz" 2>/dev/null
    for name in fine-tuned char-ngram scratch; do arm "$name" "$k" "$seed"; done
    columns=$(($(wc -l <"$train") - 1))
    for test in all unseen; do
      p() { echo "$OUT/$1-k$k-s$seed.$test.jsonl"; }
      a=$($BIN compare "$(p fine-tuned)" "$(p scratch)" | grep 'micro-F1 A')
      b=$($BIN compare "$(p fine-tuned)" "$(p char-ngram)" | grep 'micro-F1 A')
      python3 - "$k" "$seed" "$test" "$columns" "$a" "$b" >>"$OUT/curve.tsv" <<'PY'
import re, sys
k, seed, test, columns, a, b = sys.argv[1:]
num = r"([+−-]?[0-9.]+)"
def parse(line):
    m = re.search(rf"A {num}\s+B {num}\s+A − B {num}\s+\(95% interval {num} to {num}", line)
    return [float(x.replace("−", "-")) for x in m.groups()]
fa, fb = parse(a), parse(b)
print("\t".join([("all" if k == "0" else k), seed, test, columns, f"{fa[0]:.3f}", f"{fa[1]:.3f}",
                 f"{fb[1]:.3f}", f"{fa[2]:+.3f}", f"{fa[3]:+.3f}..{fa[4]:+.3f}", f"{fb[2]:+.3f}",
                 f"{fb[3]:+.3f}..{fb[4]:+.3f}"]))
PY
    done
  done
done
# Pooled over the three samples: each (sample, table) a unit of the paired bootstrap.
printf 'k\ttest\tfine-tuned\tscratch\tchar-ngram\tft-scratch (95%%)\tft-ngram (95%%)\n' >"$OUT/pooled.tsv"
for k in 5 20 100 0; do
  for test in all unseen; do
    for name in fine-tuned scratch char-ngram; do
      for seed in 0 1 2; do
        sed "s/\"table\":\"/\"table\":\"$seed\//" "$OUT/$name-k$k-s$seed.$test.jsonl"
      done >"$OUT/pooled-$name-k$k.$test.jsonl"
    done
    p() { echo "$OUT/pooled-$1-k$k.$test.jsonl"; }
    a=$($BIN compare "$(p fine-tuned)" "$(p scratch)" | grep 'micro-F1 A')
    b=$($BIN compare "$(p fine-tuned)" "$(p char-ngram)" | grep 'micro-F1 A')
    python3 - "$k" "$test" "$a" "$b" >>"$OUT/pooled.tsv" <<'PY'
import re, sys
k, test, a, b = sys.argv[1:]
num = r"([+−-]?[0-9.]+)"
def parse(line):
    m = re.search(rf"A {num}\s+B {num}\s+A − B {num}\s+\(95% interval {num} to {num}", line)
    return [float(x.replace("−", "-")) for x in m.groups()]
fa, fb = parse(a), parse(b)
print("\t".join([("all" if k == "0" else k), test, f"{fa[0]:.3f}", f"{fa[1]:.3f}", f"{fb[1]:.3f}",
                 f"{fa[2]:+.3f} ({fa[3]:+.3f} to {fa[4]:+.3f})",
                 f"{fb[2]:+.3f} ({fb[3]:+.3f} to {fb[4]:+.3f})"]))
PY
  done
done
column -t -s $'\t' "$OUT/curve.tsv"
echo
column -t -s $'\t' "$OUT/pooled.tsv"
