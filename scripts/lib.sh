# Shared by scripts/*.sh: run as root (directly or through sudo), and install Debian
# packages only when one is missing, so repeated runs are fast and quiet.

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install PKG...: installs the packages that are not installed yet; output goes to a
# log that is printed only when apt fails.
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local log
  log=$(mktemp)
  if ! { as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q \
      && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "apt-get could not install: ${missing[*]}" >&2
    return 1
  fi
  rm -f "$log"
}
