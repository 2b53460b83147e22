#!/usr/bin/env bash
# The test suite, as CI runs it (.ci/run calls this script): every crate, built once with the
# `wgpu` feature so that the CubeCL WKV-7 and state-fusion kernels' parity tests run too, on
# wgpu's default adapter. On a machine without a GPU that is Mesa's lavapipe (software Vulkan),
# installed here from Debian's packages when missing. The benches are compiled, not run.
# Then the Python package's tests (scripts/python-test.sh). Extra arguments go to the cargo test
# run (e.g. a test-name filter).
# From an empty target/: about 22-26 minutes on a 2-core machine, the Python stage included, and
# 8 GB of target/; `cargo test --workspace` (CPU only, no GPU kernel tests) about 13.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo -n)
  installed=false
  if command -v apt-get >/dev/null && "${as_root[@]}" true 2>/dev/null; then
    echo "== installing Mesa's lavapipe (mesa-vulkan-drivers, libvulkan1) for the wgpu tests"
    for attempt in 1 2 3; do
      if "${as_root[@]}" apt-get update -qq &&
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
          --no-install-recommends mesa-vulkan-drivers libvulkan1 >/dev/null; then
        installed=true
        break
      fi
      echo "apt-get failed (attempt $attempt of 3)" >&2
      sleep $((attempt * 10))
    done
  fi
  if [ "$installed" != true ]; then
    echo "no Vulkan driver: install Debian's mesa-vulkan-drivers and libvulkan1 (lavapipe)," >&2
    echo "or run the CPU-only suite with: cargo test --workspace" >&2
    exit 1
  fi
fi
# The Vulkan loader complains on every start when this is unset; it does no harm.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

cargo test --workspace --features wgpu --benches --no-run --quiet
cargo test --workspace --features wgpu "$@"
# On a small disk (CI sets COLSWARM_PRUNE_TEST_BINARIES=1): the test and bench executables that
# have just run hold about 5 GB; delete them before the Python stage needs room. A later run
# relinks them.
if [ "${COLSWARM_PRUNE_TEST_BINARIES:-}" = 1 ]; then
  cargo test --workspace --features wgpu --lib --bins --tests --benches --no-run --quiet \
    --message-format=json |
    python3 -c '
import json, os, sys
freed = 0
for line in sys.stdin:
    message = json.loads(line) if line.startswith("{") else {}
    path = message.get("executable")
    if message.get("reason") == "compiler-artifact" and message["profile"]["test"] and path and os.path.exists(path):
        freed += os.path.getsize(path)
        os.remove(path)
print(f"== deleted the test executables that ran: {freed / 1e9:.1f} GB freed")'
fi
# The Python package (pyo3 + maturin) and its pytest suite, Spark in local mode included, built
# with the same features so that it reuses the dependency builds above.
COLSWARM_FEATURES=wgpu scripts/python-test.sh
# The knowledge and silver-corpus scripts' stdlib tests (building the corpora themselves needs
# the knowledge venv and clones of the source repositories).
python3 -m unittest discover -s scripts/knowledge -p 'test_*.py'
python3 -m unittest discover -s scripts/corpora -p 'test_*.py'
# The protocol studies' own helpers (the studies read a protocol's work directory).
python3 -m unittest discover -s scripts -p 'test_*.py'
