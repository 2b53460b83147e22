#!/usr/bin/env bash
# Every peer of the model, scored by the folds of the recipe's cross-validation, and written as
# markdown tables: majority, header-rule (no training), header-memory, char-ngram, and char-ngram
# with the label-name prior at the shipped model's stored weight for that namespace; types are
# closed under a label hierarchy only where the shipped model closes them.
#   WikiTables CTA: five folds over dev (hash of the table id mod 5); each fold's peers train on
#     the train file and dev's other four folds (the layout scripts/wikitables-cross-validation.sh
#     trains the model on).
#   GitTables CTA (DBpedia): four folds, cv_0..cv_3 each scored once by peers trained on the other
#     three.
#   T2D CTA and CPA: five folds (`#folds=K`), peers trained on the other four.
# Each benchmark's five (four) folds are pooled; every peer is compared with the best one by
# `colswarm compare` (paired bootstrap over tables, 95% interval). The gold key column gives T2D
# CPA's subject column here, as the set defines its pairs; header peers read only the object
# column's header, so the subject does not change their answers.
# Usage: scripts/evaluate-peers.sh [OUT]   (OUT default runs/peers; the tables go to
# OUT/peers.md and to stdout). BIN overrides the command (default: cargo run --release).
# Takes about 5 minutes on the 2-core machine, most of it the n-gram peers.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/peers}
BIN=${BIN:-"cargo run -q --release -p colswarm-cli --"}
D=${DATASETS:-datasets}
W=$D/wikitables-turl-subset
G=$D/gittables-semtab22/gt-semtab22-dbpedia-all/db_semi1_cv_
T=$D/t2d-webtables/t2d.tar.gz
MODEL=${MODEL:-models/colswarm-small}
mkdir -p "$OUT/data" "$OUT/predictions"
stage() { echo "== [$((SECONDS / 60)) min $((SECONDS % 60)) s] $*" >&2; }

# The shipped model's label-name prior weight for a namespace of a task ("" when it has none).
weight() {
  python3 -c '
import json, sys
labels = json.load(open(sys.argv[1] + "/labels.json"))
weight = [n.get("label_name_weight") for n in labels[sys.argv[2]] if n["name"] == sys.argv[3]]
print(weight[0] if weight and weight[0] is not None else "")' "$MODEL" "$1" "$2"
}

# WikiTables fold files: train = the train file + dev's other folds, dev = dev's fold K.
python3 - "$W" "$OUT/data" <<'PY'
import csv, gzip, shutil, sys
from pathlib import Path
csv.field_size_limit(1 << 30)
src, out = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, "scripts/knowledge")
from common import fnv1a64  # the fold hash of the Rust `#folds=` specs
read = lambda name: list(csv.reader(gzip.open(src / name, "rt", newline="", encoding="utf-8")))
train, dev = read("train_wikitables_subset_20.csv.gz"), read("dev_wikitables_subset_2.csv.gz")
for k in range(5):
    d = out / f"wikitables-fold{k}"
    d.mkdir(parents=True, exist_ok=True)
    held = [r for r in dev[1:] if fnv1a64(r[0]) % 5 == k]
    kept = [r for r in dev[1:] if fnv1a64(r[0]) % 5 != k]
    for name, rows in (("train.csv", train[1:] + kept), ("dev.csv", held)):
        with open(d / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([train[0]] + rows)
    for name in ("wikitables-2_all_labels.txt", "labels_to_text_wikitables-2-cta.json",
                 "wikitables-hierarchy-v2.json"):
        shutil.copy(src / name, d / name)
PY

# Whether the shipped model closes a namespace's types under its hierarchy ("yes" or "no"):
# the peers are decoded the same way.
closes() {
  python3 -c '
import json, sys
labels = json.load(open(sys.argv[1] + "/labels.json"))
print("yes" if any(any(n.get("ancestors") or []) for n in labels[sys.argv[2]] if n["name"] == sys.argv[3]) else "no")' "$MODEL" "$1" "$2"
}

# One peer on one fold: KIND TASK TRAIN EVAL FILE [WEIGHT]
peer() {
  local kind=$1 task=$2 train=$3 eval=$4 file=$5 weight=${6:-} extra=()
  [ -z "$weight" ] || extra=(--label-name-prior "$weight")
  [ "$CLOSURE" = yes ] || extra+=(--no-hierarchy-closure)
  $BIN baseline --kind "$kind" "${extra[@]}" --task "$task" --train "$train" --eval "$eval" \
    --predictions "$file" >/dev/null
}

# Pools a benchmark's folds for every peer. Args: BENCH TASK NAMESPACE, then the fold specs as
# "TRAIN|EVAL" lines on stdin.
benchmark() {
  local bench=$1 task=$2 namespace=$3 prior k=0 specs=()
  prior=$(weight "$task" "$namespace")
  CLOSURE=$(closes "$task" "$namespace")
  mapfile -t specs
  for kind in majority header-rule header-memory char-ngram char-ngram-prior; do
    [ "$kind" = char-ngram-prior ] && [ -z "$prior" ] && continue
    stage "$bench $task: $kind (${#specs[@]} folds)"
    : >"$OUT/predictions/$bench-$task-$kind.jsonl"
    k=0
    for spec in "${specs[@]}"; do
      local file="$OUT/predictions/$bench-$task-$kind-fold$k.jsonl"
      if [ "$kind" = char-ngram-prior ]; then
        peer char-ngram "$task" "${spec%%|*}" "${spec##*|}" "$file" "$prior"
      else
        peer "$kind" "$task" "${spec%%|*}" "${spec##*|}" "$file"
      fi
      cat "$file" >>"$OUT/predictions/$bench-$task-$kind.jsonl"
      k=$((k + 1))
    done
  done
  echo "$prior" >"$OUT/$bench-$task.prior"
}

for k in 0 1 2 3 4; do
  echo "wikitables=turl-csv:$OUT/data/wikitables-fold$k/train.csv|wikitables=turl-csv:$OUT/data/wikitables-fold$k/dev.csv"
done | benchmark wikitables cta wikitables
for k in 0 1 2 3; do
  others=$(python3 -c "print(','.join(f'${G}{i}.csv.gz' for i in range(4) if i != $k))")
  echo "gittables=sato-cv:$others|gittables=sato-cv:${G}$k.csv.gz"
done | benchmark gittables cta gittables
for task in cta cpa; do
  for k in 0 1 2 3 4; do
    others=$(python3 -c "print(','.join(str(i) for i in range(5) if i != $k))")
    echo "t2d=t2d:$T#folds=$others|t2d=t2d:$T#folds=$k"
  done | benchmark t2d "$task" t2d
done

stage "comparing every peer with the best of its benchmark"
{
  echo "Made by \`scripts/evaluate-peers.sh\` at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  for set in wikitables-cta gittables-cta t2d-cta t2d-cpa; do
    files=("$OUT"/predictions/"$set"-{majority,header-rule,header-memory,char-ngram,char-ngram-prior}.jsonl)
    python3 - "$set" "$(cat "$OUT/$set.prior")" "$BIN" "${files[@]}" <<'PY'
import json, os, shlex, subprocess, sys
bench, prior, binary, files = sys.argv[1], sys.argv[2], sys.argv[3], [f for f in sys.argv[4:] if os.path.exists(f)]
def compare(a, b):
    out = subprocess.run(shlex.split(binary) + ["compare", a, b, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)
# Micro-F1 as colswarm scores it (the first peer compared with itself costs no resampling).
scores = {f: compare(f, files[0])["micro_f1_a"] for f in files}
best = max(files, key=scores.get)
name = lambda f: os.path.basename(f)[len(bench) + 1:-len(".jsonl")]
targets = sum(1 for _ in open(best))
print(f"\n### {bench.replace('-', ' ')} ({targets} targets)\n")
print("| peer | micro-F1 | − best peer (95% interval) |")
print("|---|---|---|")
for f in files:
    label = name(f) + (f" (weight {prior})" if name(f) == "char-ngram-prior" else "")
    if f == best:
        print(f"| **{label}** | **{scores[f]:.3f}** | best |")
        continue
    c = compare(f, best)
    print(f"| {label} | {scores[f]:.3f} | {c['difference']:+.3f} ({c['ci_low']:+.3f} to {c['ci_high']:+.3f}) |")
PY
  done
} | tee "$OUT/peers.md"
stage "done: $OUT/peers.md"
