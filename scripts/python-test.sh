#!/usr/bin/env bash
# The Python package's tests (python/tests), from a fresh clone: creates the virtual
# environment .venv (override with COLSWARM_VENV), installs the pinned dev requirements,
# builds the colswarm CLI (the tests compare against it) and the extension (`maturin develop`,
# dev profile: it shares the workspace's dependency builds), then runs pytest. The Spark test
# runs in local mode; it is skipped, saying so, only when no Java is installed.
# COLSWARM_FEATURES (e.g. `wgpu`) builds the CLI and the extension with those cargo features:
# scripts/test.sh sets it to its own, so that they reuse the test build's dependencies instead of
# compiling a second variant of burn (minutes, and gigabytes of target/).
# Extra arguments go to pytest (e.g. -k spark).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${COLSWARM_VENV:-.venv}
features=()
[ -z "${COLSWARM_FEATURES:-}" ] || features=(--features "$COLSWARM_FEATURES")
python=${PYTHON:-python3}
stage() { echo "== [$((SECONDS / 60)) min $((SECONDS % 60)) s] $*"; }

if [ ! -x "$venv/bin/python" ]; then
  stage "creating $venv with $("$python" --version)"
  "$python" -m venv "$venv"
fi
stage "pip install -r python/requirements-dev.txt"
# No pip cache: PySpark comes as a 300 MB source archive, and caching it and the wheel built
# from it would hold ~0.6 GB more on a CI disk that the Rust test build has nearly filled.
"$venv/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check \
  -r python/requirements-dev.txt

stage "cargo build -p colswarm-cli ${features[*]}"
cargo build --quiet -p colswarm-cli "${features[@]}"

stage "maturin develop (dev profile)"
(cd python && VIRTUAL_ENV="$PWD/../$venv" PATH="$PWD/../$venv/bin:$PATH" maturin develop --quiet "${features[@]}")

if ! command -v java >/dev/null && [ -z "${JAVA_HOME:-}" ]; then
  echo "== no Java found: the Spark test will be skipped (install a JDK 17+ to run it)" >&2
fi
stage "pytest python/tests"
"$venv/bin/python" -m pytest python/tests "$@"
stage "done"
