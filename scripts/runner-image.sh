#!/usr/bin/env bash
# Makes the runner rootfs and the Docker runner image from it, with no registry: builds
# the rootfs with debootstrap into a cached folder (default /var/cache/skrip/runner-rootfs-13,
# or $1) unless a tree of the current recipe is already there, then imports it as
# skrip-runner:<version> (or $2) unless the engine has that image from the same recipe
# (its skrip.rootfs.recipe label). Quiet on success; the last line printed is the rootfs
# path, which also serves SKRIP_BWRAP_ROOTFS. Run it from anywhere in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

rootfs=${1:-/var/cache/skrip/runner-rootfs-13}
log=$(mktemp)
bindir=$(mktemp -d)
trap 'rm -rf "$log" "$bindir"' EXIT
fail() {
  cat "$log" >&2
  echo "runner-image.sh: $*" >&2
  exit 1
}

as_root bash deploy/runner/build-rootfs.sh "$rootfs" >>"$log" 2>&1 || fail "building the rootfs in $rootfs failed"

docker version >/dev/null 2>&1 || fail "the Docker Engine does not answer (is it running?)"
go build -o "$bindir/skrip" ./cmd/skrip >>"$log" 2>&1 || fail "go build ./cmd/skrip failed"
tag=()
if [ -n "${2:-}" ]; then
  tag=(--tag "$2")
fi
# Imports only when the image is missing or was made from another recipe.
"$bindir/skrip" runner-image build --rootfs "$rootfs" "${tag[@]}" >>"$log" 2>&1 \
  || fail "importing $rootfs as the runner image failed"
echo "$rootfs"
