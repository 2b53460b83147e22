#!/usr/bin/env bash
# Checks that building a leaf of the workspace alone (`cargo run -p colswarm-cli`, `maturin develop`
# for python/, the tests and examples of colswarm-arrow and of the root facade) resolves every
# third-party dependency with the same features as `cargo test --workspace`, so that it compiles
# no second variant of burn or of anything else. The leaves are the members that depend on
# colswarm-workspace-hack: as a normal dependency (both the build and the tests are checked) or
# as a dev-dependency (the tests only). The library crates do not depend on it and are not checked:
# they build with only the features they need. Prints each dependency whose features differ, and
# exits 1 if there is one: add it, with the missing features, to
# crates/colswarm-workspace-hack/Cargo.toml. Then checks that colswarm-model, colswarm-eval and
# colswarm-tables without default features pull in no Arrow, Parquet or tokio, as README says.
# Uses `cargo tree` only (seconds, no build).
set -euo pipefail
cd "$(dirname "$0")/.."

features() {
  # "package version|features" per third-party package of the selection (host and target alike)
  cargo tree "$@" --format '{p}|{f}' --prefix none --quiet |
    sed 's/ (\*)//; s/ (proc-macro)//' | grep -v '^colswarm' | sort -u
}

differ() {
  # Packages that the member ($2) builds in other feature variants than the workspace ($1). A
  # package may build twice (for the host and for the target), so compare per package the sets
  # of feature lists: the member must build each package in the variants the workspace does.
  python3 - "$1" "$2" <<'PY'
import collections, sys
def variants(path):
    found = collections.defaultdict(set)
    for line in open(path):
        package, _, features = line.rstrip("\n").partition("|")
        found[package].add(features)
    return found
workspace, member = (variants(p) for p in sys.argv[1:])
for package in sorted(member):
    if member[package] != workspace[package]:
        print(f"  {package}: workspace {sorted(workspace[package])}, alone {sorted(member[package])}")
PY
}

workspace=$(mktemp)
trap 'rm -f "$workspace" "$workspace.one"' EXIT
features --workspace --edges normal,build,dev >"$workspace"
# "member edges…" per leaf: which dependency graphs of it must match the workspace's
leaves=$(cargo metadata --no-deps --format-version 1 --quiet | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    kinds = {d["kind"] for d in package["dependencies"] if d["name"] == "colswarm-workspace-hack"}
    if None in kinds:
        print(package["name"], "normal,build", "normal,build,dev")
    elif "dev" in kinds:
        print(package["name"], "normal,build,dev")
')
[ -n "$leaves" ] || { echo "no workspace member depends on colswarm-workspace-hack" >&2; exit 1; }
status=0
while read -r member edge_sets; do
  for edges in $edge_sets; do
    features --package "$member" --edges "$edges" >"$workspace.one"
    different=$(differ "$workspace" "$workspace.one")
    if [ -n "$different" ]; then
      status=1
      echo "$member (edges $edges) resolves other features than the workspace:"
      echo "$different"
    fi
  done
done <<<"$leaves"
# scripts/test.sh builds the workspace with `wgpu` and then the CLI and the Python extension with
# it too (scripts/python-test.sh): they must reuse that build's dependencies as well.
features --workspace --features wgpu --edges normal,build,dev >"$workspace"
for member in colswarm-cli colswarm-python; do
  features --package "$member" --features wgpu --edges normal,build >"$workspace.one"
  different=$(differ "$workspace" "$workspace.one")
  if [ -n "$different" ]; then
    status=1
    echo "colswarm-workspace-hack misses features: $member --features wgpu builds these packages in other feature variants than the workspace's wgpu build:"
    echo "$different"
  fi
done
# And the libraries stay lean: what README promises a crate built alone does not pull in.
for lean in "colswarm-model" "colswarm-eval" "colswarm-tables --no-default-features"; do
  # shellcheck disable=SC2086 # the feature flag splits on purpose
  heavy=$(cargo tree -p $lean --prefix none --quiet | grep -oE '^(arrow[a-z-]*|parquet|tokio|object_store) ' | sort -u | tr -d ' ' | paste -sd' ' || true)
  if [ -n "$heavy" ]; then
    status=1
    echo "cargo tree -p $lean pulls in $heavy: a library crate must not depend on colswarm-workspace-hack or on the Arrow stack by default"
  fi
done
[ "$status" = 0 ] && echo "every leaf ($(cut -d' ' -f1 <<<"$leaves" | paste -sd' ')) resolves its dependencies' features as the workspace does (colswarm-cli and colswarm-python with wgpu too); colswarm-model, colswarm-eval and colswarm-tables (no default features) build no Arrow, Parquet or tokio"
exit "$status"
