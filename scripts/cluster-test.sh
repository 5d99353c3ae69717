#!/usr/bin/env bash
# Runs the cluster tests (internal/clustertest): hosts in network namespaces on a bridge,
# a 3-node NATS cluster and a PostgreSQL server of their own, with nodes killed and cut
# off. They need root (sudo is used otherwise), iproute2, iptables and PostgreSQL's
# server programs, installed here when missing. scripts/test.sh calls it; SKRIP_TEST_REQUIRE
# gains "cluster", so a skip fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

apt_install iproute2 iptables postgresql

export SKRIP_TEST_CLUSTER=1
export SKRIP_TEST_REQUIRE="${SKRIP_TEST_REQUIRE:+$SKRIP_TEST_REQUIRE,}cluster"
cmd=(go test -race -count=1 -timeout 15m ./internal/clustertest/...)
if [ "$(id -u)" -ne 0 ]; then
  cmd=(sudo --preserve-env env "PATH=$PATH" "${cmd[@]}")
fi
"${cmd[@]}"
