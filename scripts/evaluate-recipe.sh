#!/usr/bin/env bash
# The shipped recipe's whole evaluation, nested, in one command: WikiTables (five folds over
# dev), GitTables (cv_0..cv_3) and T2D (five folds, CTA and CPA), the recipe against every peer,
# every setting chosen on a selection half that no fold model trains on and no score uses
# (scripts/evaluate_recipe.py says how). Writes the tables into docs/RESULTS.md. Resumable:
# rerun it after an interruption and it redoes only what is missing (work in
# runs/evaluate-recipe). Two folds at a time, one thread each.
# Usage: scripts/evaluate-recipe.sh [--benchmarks t2d,gittables,wikitables] [--jobs 2] [--tiny]
#        [--set KEY=VALUE ... --expert-set KEY=VALUE ... --specialist NAME=DIR ...
#         --out DIR --results FILE]: a variant
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build -q --release -p colswarm-cli
  BIN=target/release/colswarm
fi
exec python3 scripts/evaluate_recipe.py --bin "$BIN" "$@"
