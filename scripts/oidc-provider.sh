#!/usr/bin/env bash
# Builds the OpenID provider that the sign-on tests sign in through: the example server
# of github.com/zitadel/oidc/v3 (an OpenID-certified library), from the Go module proxy,
# in a scratch module of its own so that skrip's go.mod never requires it. Cached: the
# binary (default /var/cache/skrip/oidc-provider-<version>, or $1) is built only when
# missing. Quiet on success; the last line printed is the binary's path, for
# SKRIP_TEST_OIDC_PROVIDER. Run it from anywhere.
set -euo pipefail

version=v3.52.0
out=${1:-/var/cache/skrip/oidc-provider-$version}
if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi
work=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$work" "$log"' EXIT
fail() {
  cat "$log" >&2
  echo "oidc-provider.sh: $*" >&2
  exit 1
}
mkdir -p "$(dirname "$out")"
(
  cd "$work"
  go mod init skrip.test/oidc-provider
  go get "github.com/zitadel/oidc/v3@$version"
  # The example's own imports (chi, …) come with the module's go.mod; resolve them.
  go mod download all
  go build -trimpath -o "$out.tmp" github.com/zitadel/oidc/v3/example/server
) >>"$log" 2>&1 || fail "building github.com/zitadel/oidc/v3/example/server@$version failed"
mv "$out.tmp" "$out"
echo "$out"
