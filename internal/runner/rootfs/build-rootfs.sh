#!/usr/bin/env bash
# Builds the skrip runner's root filesystem into DIR: Debian 13 (trixie) from debootstrap,
# with Python 3.13 and what tools use (WeasyPrint, pandoc and pypandoc, python-docx,
# openpyxl, pandas, pypdf, Jinja2, rsvg-convert, fonts), the security updates, and the
# mount points both runners use. The same folder serves `docker import`
# (skrip-runner:<version>) and SKRIP_BWRAP_ROOTFS, so both runners offer the very same
# environment.
#
# Usage: build-rootfs.sh DIR    (as root; `skrip runner-image build` runs an embedded copy)
# Idempotent: DIR/.skrip-rootfs-complete holds the sha256 of the script that built the
# tree (recipe=...); when it is this script's, the run exits at once. A tree built by any
# other recipe (an older Debian, other packages, or no recipe line at all) is rebuilt
# beside it and swapped in whole. Quiet on success apart from a one-line summary; the full
# log is printed on failure.
# SKRIP_DEBIAN_MIRROR and SKRIP_DEBIAN_SECURITY_MIRROR override the mirrors.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=${1%/}
marker="$dir/.skrip-rootfs-complete"
recipe=$(sha256sum "$0" | cut -d' ' -f1)
if [ -f "$marker" ] && grep -qx "recipe=$recipe" "$marker"; then
  exit 0
fi

release=13
suite=trixie
mirror=${SKRIP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${SKRIP_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# debootstrap makes the base; apt, inside it, adds the rest without recommends. apt (and
# debootstrap) take the first of a dependency's alternatives when none is installed, which
# for python3-fonttools means scipy, pythran, g++ and boost (1.2 GB in all); naming the
# light ones (munkres, unicodedata2, ufolib2) makes apt take those instead. In Debian 13
# fonts-liberation is Liberation 2 (fonts-liberation2 is a dummy package for it), and
# fontconfig brings fc-list and the font cache WeasyPrint reads. PyYAML, pydantic and
# structlog are what the original hub's author guide also lists as installed, so its
# tools that import them run unchanged. pyflakes is the editor's linter (checks as you
# type run it in the sandbox, never the host's).
base=python3,coreutils
packages="weasyprint python3-munkres python3-unicodedata2 python3-ufolib2
  pandoc python3-pypandoc python3-docx python3-openpyxl python3-pandas python3-pypdf
  python3-jinja2 librsvg2-bin fontconfig python3-yaml python3-pydantic python3-structlog
  python3-pyflakes
  fonts-liberation fonts-dejavu-core fonts-freefont-ttf fonts-noto-core"
# Heavy packages that must not come in through a dependency's first alternative.
unwanted="python3-scipy g++ gcc cpp libboost-dev texlive-base"

if [ "$(id -u)" -ne 0 ]; then
  echo "build-rootfs.sh must run as root (debootstrap creates device nodes and chowns files)" >&2
  exit 1
fi
# An empty DIR (a cache folder made ahead of time) is fine, and so is a finished tree from
# another recipe (it is replaced at the end); anything else is not ours.
if [ -d "$dir" ] && [ -z "$(ls -A "$dir")" ]; then
  rmdir "$dir"
fi
if [ -e "$dir" ] && [ ! -f "$marker" ]; then
  echo "$dir exists but is not a finished rootfs (no $marker); remove it and run again" >&2
  exit 1
fi

start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() {
  cat "$log" >&2
  echo "build-rootfs.sh: $*" >&2
  exit 1
}

# debootstrap itself, from apt; the package lists are refreshed only when apt knows no
# candidate for it.
if ! command -v debootstrap >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-cache policy debootstrap 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt-get update -q >>"$log" 2>&1 || fail "apt-get update failed"
  fi
  apt-get install -y -q --no-install-recommends debootstrap >>"$log" 2>&1 \
    || fail "could not install debootstrap"
fi

tmp="$dir.tmp"
# A half-built tree from an interrupted run is thrown away: debootstrap cannot resume it;
# so is an old tree an interrupted swap left.
rm -rf "$tmp" "$dir.old"
mkdir -p "$(dirname "$dir")"
debootstrap --variant=minbase --include="$base" "$suite" "$tmp" "$mirror" >>"$log" 2>&1 \
  || fail "debootstrap $suite into $tmp failed"

cat >"$tmp/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
SOURCES
in_root() {
  chroot "$tmp" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@" >>"$log" 2>&1
}
apt_opts=(-q -o Acquire::Languages=none -o APT::Install-Recommends=false)
in_root apt-get "${apt_opts[@]}" update || fail "apt-get update inside $tmp failed"
in_root apt-get "${apt_opts[@]}" -y upgrade || fail "apt-get upgrade inside $tmp failed"
# shellcheck disable=SC2086 # a list of package names
in_root apt-get "${apt_opts[@]}" -y install $packages || fail "apt-get install $packages inside $tmp failed"
in_root apt-get clean
for p in $unwanted; do
  if chroot "$tmp" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    fail "$p came in with the packages; name the light alternative that avoids it"
  fi
done

# Keep it small: no package lists or caches (nothing installs into it later), no manuals
# or translations. The copyright files stay.
rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/* "$tmp"/var/log/* \
  "$tmp"/var/cache/debconf/*-old "$tmp"/var/lib/dpkg/*-old \
  "$tmp"/usr/share/man/* "$tmp"/usr/share/info/* "$tmp"/usr/share/locale/*
find "$tmp"/usr/share/doc -mindepth 2 ! -name copyright ! -type d -delete
find "$tmp"/usr/share/doc -mindepth 1 -type d -empty -delete
# The Python packages' own test suites (pandas', sympy's, numpy's: 85 MB) are never
# imported by a tool.
find "$tmp"/usr/lib/python3/dist-packages -type d -name tests -prune -exec rm -rf {} +
# Under bwrap the sandbox user owns what root owns here, so nothing private may be left:
# root's home is empty (its shell dotfiles are of no use) and no backups of the account files.
find "$tmp/root" -mindepth 1 -delete
rm -f "$tmp"/etc/passwd- "$tmp"/etc/group- "$tmp"/etc/shadow- "$tmp"/etc/gshadow-
# The host's name and resolver are none of the sandbox's business (and it has no network).
echo skrip >"$tmp/etc/hostname"
: >"$tmp/etc/resolv.conf"

# The mount points the runners put the run's files on, and /workspace, where an agent
# sandbox's workspace goes. bwrap mounts over a read-only root, so each must already
# exist: directories for dirs, empty files for files.
mkdir -p "$tmp"/work/input "$tmp"/work/output "$tmp"/skrip "$tmp"/tmp/home "$tmp"/workspace
chmod 0755 "$tmp"/work "$tmp"/work/input "$tmp"/skrip "$tmp"/workspace
chmod 1777 "$tmp"/work/output
chmod 1777 "$tmp"/tmp
chmod 0777 "$tmp"/tmp/home
: >"$tmp"/work/script.py
: >"$tmp"/work/result.json
: >"$tmp"/work/memory.json
chmod 0644 "$tmp"/work/script.py "$tmp"/work/result.json "$tmp"/work/memory.json

# The sandbox user: base-passwd ships nobody (65534) and nogroup (65534).
grep -q '^nobody:x:65534:' "$tmp"/etc/passwd || fail "no user nobody (65534) in $tmp/etc/passwd"
grep -q '^nogroup:x:65534:' "$tmp"/etc/group || fail "no group nogroup (65534) in $tmp/etc/group"

# A last check that the environment works, run inside the tree as the sandbox user.
check='import sys
assert sys.version_info[:2] == (3, 13), sys.version
import weasyprint, docx, openpyxl, pandas, pypdf, jinja2, pypandoc, yaml, pydantic, structlog, pyflakes
from weasyprint import DEFAULT_OPTIONS
pypandoc.get_pandoc_version()'
in_root setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp/home python3 -c "$check" \
  || fail "the modules tools use do not import inside $tmp"
in_root pandoc --version || fail "pandoc --version fails inside $tmp"
in_root rsvg-convert --version || fail "rsvg-convert --version fails inside $tmp"
# The editor's completions: the importable top-level modules (public names only) of the
# runtime's Python, as a JSON list the server reads from the tree it runs tools on.
mkdir -p "$tmp/usr/share/skrip"
modules='import json, pkgutil, sys
names = {m.name for m in pkgutil.iter_modules()} | set(sys.builtin_module_names)
json.dump(sorted(n for n in names if n.isidentifier() and not n.startswith("_")), sys.stdout)'
chroot "$tmp" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/tmp/home \
  python3 -I -c "$modules" >"$tmp/usr/share/skrip/modules.json" 2>>"$log" \
  || fail "could not list the Python modules inside $tmp"
chmod 0644 "$tmp/usr/share/skrip/modules.json"
# The self-check leaves nothing behind in the scratch folders.
find "$tmp/tmp/home" -mindepth 1 -delete
find "$tmp/tmp" -mindepth 1 -maxdepth 1 ! -name home -exec rm -rf {} +

# The marker goes in first, so the tree appears complete or not at all. It records the
# recipe (this script's sha256), which skrip compares with the copy it embeds.
printf 'recipe=%s\ndebian=%s\nsuite=%s\n' "$recipe" "$release" "$suite" >"$tmp/.skrip-rootfs-complete"
if [ -e "$dir" ]; then
  # A tree from another recipe: swap the new one in, then drop the old one (a server
  # running on it keeps its mount of an emptied tree: restart it, as after an upgrade).
  mv -T "$dir" "$dir.old"
  mv -T "$tmp" "$dir"
  rm -rf "$dir.old"
  what=rebuilt
else
  mv -T "$tmp" "$dir"
  what=built
fi
size=$(du -sxh "$dir" 2>/dev/null | cut -f1)
echo "$what $dir (Debian $release $suite, $size) in $(( $(date +%s) - start ))s"
