#!/usr/bin/env bash
# Makes the runner rootfs and the Docker runner image from it, with no registry: builds
# the rootfs with debootstrap into a cached folder (default /var/cache/skrip/runner-rootfs,
# or $1) unless it is already there, then imports it as skrip-runner:<version> unless
# `docker image inspect` finds that image. Quiet on success; the last line printed is the
# rootfs path, which also serves SKRIP_BWRAP_ROOTFS. Run it from anywhere in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

rootfs=${1:-/var/cache/skrip/runner-rootfs}
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
version=$("$bindir/skrip" version | awk '{print $2}')
# The tag skrip uses by default (docker.DefaultImage): characters a tag cannot hold become _.
tag=$(printf '%s' "$version" | sed -e 's/[^A-Za-z0-9_.-]/_/g' -e 's/^[.-]/_/' | cut -c1-128)
ref="skrip-runner:$tag"
# The tag does not change when the image's recipe does: re-import whenever the recipe's
# hash differs from the one recorded at the last import.
stamp="$rootfs.imported"
want="$ref $(sha256sum deploy/runner/build-rootfs.sh | cut -d' ' -f1)"
if ! docker image inspect "$ref" >/dev/null 2>&1 || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$bindir/skrip" runner-image build --rootfs "$rootfs" --tag "$ref" --force >>"$log" 2>&1 \
    || fail "importing $rootfs as $ref failed"
  echo "$want" | as_root tee "$stamp" >/dev/null
fi
echo "$rootfs"
