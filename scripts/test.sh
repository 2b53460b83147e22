#!/usr/bin/env bash
# The test suite, as CI runs it: every crate, built once with the `wgpu` feature so that the
# CubeCL WKV-7 and state-fusion kernels' parity tests run too, on wgpu's default adapter. On a
# machine without a GPU that is Mesa's lavapipe (software Vulkan), installed here from Debian's
# packages when missing. Extra arguments go to `cargo test` (e.g. a test-name filter).
# A cold build takes about 50 minutes on 2 cores; `cargo test --workspace` (CPU only) about 27.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing Mesa's lavapipe (mesa-vulkan-drivers, libvulkan1) for the wgpu tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      mesa-vulkan-drivers libvulkan1 >/dev/null
  else
    echo "no Vulkan driver: install Debian's mesa-vulkan-drivers and libvulkan1 (lavapipe)," >&2
    echo "or run the CPU-only suite with: cargo test --workspace" >&2
    exit 1
  fi
fi
# The Vulkan loader complains on every start when this is unset; it does no harm.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
exec cargo test --workspace --features wgpu "$@"
