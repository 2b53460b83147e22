#!/usr/bin/env bash
# The whole test suite built with the `wgpu` feature: it adds the parity tests of the CubeCL
# WKV-7 and state-fusion kernels, run on wgpu's default adapter (without a GPU: Mesa's
# lavapipe, software Vulkan). Not part of .ci/run, for build time: see README, "GPU kernels".
# The first run builds burn a second time with its CubeCL backend (~60 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends mesa-vulkan-drivers libvulkan1
  else
    echo "no Vulkan driver: install Debian's mesa-vulkan-drivers and libvulkan1 (lavapipe)" >&2
    exit 1
  fi
fi
# The Vulkan loader complains on every start when this is unset; it does no harm.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
exec cargo test --workspace --features wgpu "$@"
