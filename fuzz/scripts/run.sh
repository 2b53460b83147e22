#!/bin/sh
# One fuzz run as recorded in docs/RELIABILITY.md: at most 1,000,000 executions or 10 minutes,
# whichever comes first, one process, 2 GiB RSS cap, 10 s per input (a slower input is a hang).
#
#   fuzz/scripts/run.sh fuzz csv            # a table target (fuzz/)
#   fuzz/scripts/run.sh fuzz-models manifest  # a model target (fuzz-models/)
#
# The corpus lives in <dir>/corpus/<target> (ignored by git; fuzz/scripts/seed_corpora.py seeds
# the table targets, the parquet and model targets write their own seeds first). Extra arguments
# go to libFuzzer.
set -eu
dir=$1
target=$2
shift 2
mkdir -p "$dir/corpus/$target"
COLSWARM_FUZZ_SEEDS="$dir/corpus/$target" TMPDIR="${TMPDIR:-/dev/shm}" \
    nice -n 10 cargo +nightly fuzz run --fuzz-dir "$dir" "$target" "$dir/corpus/$target" -- \
    -max_total_time=600 -runs=1000000 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$@"
