#!/usr/bin/env bash
# Runs every test against real components: installs them from Debian when missing,
# starts PostgreSQL with a test database, tells the tests which components must not be
# skipped (SKRIP_TEST_REQUIRE), then runs `go test -race ./...`, the cluster tests
# (scripts/cluster-test.sh) and a few seconds of every fuzz target. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

apt_install postgresql bubblewrap python3 weasyprint poppler-utils fonts-dejavu-core chromium libjs-codemirror

# Start the first PostgreSQL cluster (Debian makes one when the package is installed).
read -r pgver pgcluster pgport pgstatus _ < <(pg_lsclusters -h | head -n 1)
if [ -z "${pgver:-}" ]; then
  pgver=$(ls /usr/lib/postgresql | sort -n | tail -n 1)
  as_root pg_createcluster "$pgver" main >/dev/null
  read -r pgver pgcluster pgport pgstatus _ < <(pg_lsclusters -h | head -n 1)
fi
if [ "$pgstatus" != "online" ]; then
  as_root pg_ctlcluster "$pgver" "$pgcluster" start
fi
psql_admin() { as_root su postgres -c "psql -p $pgport -qtAX $*"; }
for _ in $(seq 50); do psql_admin "-c 'SELECT 1'" >/dev/null 2>&1 && break; sleep 0.2; done
psql_admin "-c \"DO \\\$\\\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'skrip') THEN CREATE ROLE skrip LOGIN PASSWORD 'skrip'; END IF; END\\\$\\\$\""
[ "$(psql_admin "-c \"SELECT 1 FROM pg_database WHERE datname = 'skrip_test'\"")" = 1 ] \
  || psql_admin "-c 'CREATE DATABASE skrip_test OWNER skrip'"

export SKRIP_TEST_DATABASE_URL="postgres://skrip:skrip@127.0.0.1:$pgport/skrip_test"
# The Docker runner's image, built from a debootstrap rootfs (cached); the same rootfs
# serves bubblewrap in TestConformanceOnRootfs.
SKRIP_TEST_RUNNER_ROOTFS=$(bash scripts/runner-image.sh | tail -n 1)
export SKRIP_TEST_RUNNER_ROOTFS
# The OpenID provider the sign-on tests sign in through, built from its module (cached).
SKRIP_TEST_OIDC_PROVIDER=$(bash scripts/oidc-provider.sh | tail -n 1)
export SKRIP_TEST_OIDC_PROVIDER
export SKRIP_TEST_REQUIRE="postgres,bwrap,weasyprint,docker,chromium,oidc"

# Packages that drive both runners take minutes each on 2 cores; the default 10 min per
# package binary leaves too little room on a busy machine.
go test -race -count=1 -timeout 30m ./...
# A client generated from the OpenAPI document (its own module, so ./... above skips it):
# it is current, and it drives a real `skrip serve` through a smoke flow (docs/api.md).
(cd test/genclient && go test -race -count=1 ./...)
# The cluster tests: namespaces, a NATS cluster, nodes killed (skipped by the run above).
bash scripts/cluster-test.sh
# A short run of every fuzz target (scripts/fuzz.sh finds them by name).
bash scripts/fuzz.sh
