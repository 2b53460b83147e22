#!/usr/bin/env bash
# Fails when the repository's tracked files add up to more than 45 MB (COLSWARM_CHECKOUT_LIMIT_MB
# overrides it): a machine with a GPU is reached with a copy of the checkout that must fit in
# 64 MiB together with the binaries it runs (scripts/gpu-check.sh), and a clone should not hold
# more than a user needs. On failure it names the largest tracked files.
set -euo pipefail
cd "$(dirname "$0")/.."
limit_mb=${COLSWARM_CHECKOUT_LIMIT_MB:-45}
sizes=$(git ls-files -z | { xargs -0 stat -c '%s %n' 2>/dev/null || true; })
total=$(awk '{ s += $1 } END { printf "%d", s }' <<<"$sizes")
awk -v t="$total" -v l="$limit_mb" 'BEGIN { printf "tracked files: %.2f MB (limit %d MB)\n", t / 1e6, l }'
if [ "$total" -gt $((limit_mb * 1000000)) ]; then
  echo "error: the tracked files pass ${limit_mb} MB; the largest:" >&2
  sort -rn <<<"$sizes" | head -n 10 | awk '{ printf "  %8.2f MB  %s\n", $1 / 1e6, $2 }' >&2
  echo "compress data (readers take .csv.gz and .tar.gz), or keep large files out of the tree" >&2
  exit 1
fi
