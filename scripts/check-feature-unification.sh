#!/usr/bin/env bash
# Checks that building any one workspace crate (`cargo build -p X`, `cargo test -p X`) resolves
# every third-party dependency with the same features as `cargo test --workspace`, so that no
# `-p` build compiles a second variant of burn or of anything else. Prints each dependency whose
# features differ, and exits 1 if there is one: add it, with the missing features, to
# crates/colswarm-workspace-hack/Cargo.toml. Uses `cargo tree` only (seconds, no build).
set -euo pipefail
cd "$(dirname "$0")/.."

features() {
  # "package version|features" per third-party package of the selection (host and target alike)
  cargo tree "$@" --format '{p}|{f}' --prefix none --quiet |
    sed 's/ (\*)//; s/ (proc-macro)//' | grep -v '^colswarm' | sort -u
}

workspace=$(mktemp)
trap 'rm -f "$workspace" "$workspace.one"' EXIT
features --workspace --edges normal,build,dev >"$workspace"
members=$(cargo metadata --no-deps --format-version 1 --quiet |
  python3 -c 'import json,sys; print("\n".join(p["name"] for p in json.load(sys.stdin)["packages"]))')
status=0
for member in $members; do
  for edges in normal,build normal,build,dev; do
    features --package "$member" --edges "$edges" >"$workspace.one"
    differ=$(join -t'|' "$workspace" "$workspace.one" | awk -F'|' '$2 != $3 {print "  " $1 ": workspace [" $2 "], alone [" $3 "]"}')
    if [ -n "$differ" ]; then
      status=1
      echo "$member (edges $edges) resolves other features than the workspace:"
      echo "$differ"
    fi
  done
done
[ "$status" = 0 ] && echo "every workspace crate resolves its dependencies' features as the workspace does"
exit "$status"
