#!/usr/bin/env bash
# Builds the skrip runner's root filesystem into DIR: Debian bookworm from debootstrap, with
# python3, WeasyPrint, fonts and the security updates, plus the mount points both runners
# use. The same folder serves `docker import` (skrip-runner:<version>) and
# SKRIP_BWRAP_ROOTFS, so both runners offer the very same environment.
#
# Usage: build-rootfs.sh DIR    (as root; `skrip runner-image build` runs an embedded copy)
# Idempotent: once DIR/.skrip-rootfs-complete exists it exits at once. Quiet on success
# apart from a one-line summary; the full log is printed on failure.
# SKRIP_DEBIAN_MIRROR and SKRIP_DEBIAN_SECURITY_MIRROR override the mirrors.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=${1%/}
marker="$dir/.skrip-rootfs-complete"
# /work/output must be writable by the run's user (65534): the Docker runner mounts a
# tmpfs there, and Docker copies the image directory's mode into it. Applied to trees
# built before this line existed, too.
if [ -e "$marker" ]; then
  chmod 1777 "$dir/work/output"
  exit 0
fi

suite=bookworm
mirror=${SKRIP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${SKRIP_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# debootstrap makes the base; apt, inside it, adds WeasyPrint. debootstrap always takes
# the first of a dependency's alternatives, which for python3-fonttools means scipy,
# pythran, g++ and boost (1.2 GB in all); apt takes the light ones named here instead.
base=python3,fonts-dejavu-core,coreutils
packages="weasyprint python3-munkres python3-unicodedata2 python3-ufolib2"

if [ "$(id -u)" -ne 0 ]; then
  echo "build-rootfs.sh must run as root (debootstrap creates device nodes and chowns files)" >&2
  exit 1
fi
# An empty DIR (a cache folder made ahead of time) is fine; anything else is not ours.
if [ -d "$dir" ] && [ -z "$(ls -A "$dir")" ]; then
  rmdir "$dir"
fi
if [ -e "$dir" ]; then
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
# A half-built tree from an interrupted run is thrown away: debootstrap cannot resume it.
rm -rf "$tmp"
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

# Keep it small: no package lists or caches (nothing installs into it later), no manuals
# or translations. The copyright files stay.
rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/* "$tmp"/var/log/* \
  "$tmp"/var/cache/debconf/*-old "$tmp"/var/lib/dpkg/*-old \
  "$tmp"/usr/share/man/* "$tmp"/usr/share/info/* "$tmp"/usr/share/locale/*
find "$tmp"/usr/share/doc -mindepth 2 ! -name copyright ! -type d -delete
find "$tmp"/usr/share/doc -mindepth 1 -type d -empty -delete
# Under bwrap the sandbox user owns what root owns here, so nothing private may be left:
# root's home is empty (its shell dotfiles are of no use) and no backups of the account files.
find "$tmp/root" -mindepth 1 -delete
rm -f "$tmp"/etc/passwd- "$tmp"/etc/group- "$tmp"/etc/shadow- "$tmp"/etc/gshadow-
# The host's name and resolver are none of the sandbox's business (and it has no network).
echo skrip >"$tmp/etc/hostname"
: >"$tmp/etc/resolv.conf"

# The mount points the runners put the run's files on. bwrap mounts over a read-only
# root, so each must already exist: directories for dirs, empty files for files.
mkdir -p "$tmp"/work/input "$tmp"/work/output "$tmp"/skrip "$tmp"/tmp/home
chmod 0755 "$tmp"/work "$tmp"/work/input "$tmp"/skrip
chmod 1777 "$tmp"/work/output
chmod 1777 "$tmp"/tmp
chmod 0777 "$tmp"/tmp/home
: >"$tmp"/work/script.py
: >"$tmp"/work/result.json
chmod 0644 "$tmp"/work/script.py "$tmp"/work/result.json

# The sandbox user: base-passwd ships nobody (65534) and nogroup (65534).
grep -q '^nobody:x:65534:' "$tmp"/etc/passwd || fail "no user nobody (65534) in $tmp/etc/passwd"
grep -q '^nogroup:x:65534:' "$tmp"/etc/group || fail "no group nogroup (65534) in $tmp/etc/group"

# A last check that the environment works, run inside the tree.
in_root python3 -c 'import weasyprint' || fail "python3 -c 'import weasyprint' fails inside $tmp"

# The marker goes in first, so the tree appears complete or not at all.
touch "$tmp/.skrip-rootfs-complete"
mv -T "$tmp" "$dir"
size=$(du -sxh "$dir" 2>/dev/null | cut -f1)
echo "built $dir ($size) in $(( $(date +%s) - start ))s"
