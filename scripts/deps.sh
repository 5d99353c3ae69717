#!/usr/bin/env bash
# Installs what `skrip serve` uses on this machine (Debian packages). Idempotent.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v go >/dev/null || { echo "Go 1.26 or newer is needed: https://go.dev/dl/" >&2; exit 1; }
apt_install bubblewrap python3 weasyprint fonts-dejavu-core
