#!/usr/bin/env bash
# Installs what `skrip serve` uses on this machine (Debian packages). Idempotent.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v go >/dev/null || { echo "Go 1.26 or newer is needed: https://go.dev/dl/" >&2; exit 1; }
apt_install bubblewrap python3 weasyprint fonts-dejavu-core libjs-codemirror

# The runner's runtime (docs/spec.md §5b): a Debian 13 rootfs with Python 3.13, WeasyPrint, pandoc,
# python-docx, openpyxl, pandas, pypdf, Jinja2, rsvg-convert and fonts, built once with
# debootstrap (a few minutes, ~650 MB) and rebuilt only when its recipe changes. The bwrap
# runner finds it there by itself; where a Docker Engine answers, it becomes the Docker
# runner's image too.
rootfs=/var/cache/skrip/runner-rootfs-13
recipe=$(sha256sum "$(dirname "$0")/../deploy/runner/build-rootfs.sh" | cut -d' ' -f1)
if ! grep -qx "recipe=$recipe" "$rootfs/.skrip-rootfs-complete" 2>/dev/null; then
  echo "preparing the tools' runtime in $rootfs (Debian 13 with debootstrap; a few minutes, once)…" >&2
fi
if docker version >/dev/null 2>&1; then
  bash "$(dirname "$0")/runner-image.sh" "$rootfs" >/dev/null
else
  as_root bash "$(dirname "$0")/../deploy/runner/build-rootfs.sh" "$rootfs"
fi
