#!/usr/bin/env bash
# Runs every `go test -fuzz` target of the module for a few seconds each (FUZZTIME,
# default 4s), one target at a time as `go test -fuzz` requires. New targets are found by
# name, so nothing here lists them. Quiet on success; a failing target prints its output
# (the input that broke it is saved under the package's testdata/fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-4s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  ok=
  for _ in 1 2 3; do
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
      ok=1
      break
    fi
    # Go's fuzzing engine sometimes ends a run at -fuzztime with "context deadline
    # exceeded" and no failing input: that is the engine, not the target, so try again.
    # A real failure writes its input under testdata/fuzz and is reported at once.
    grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log" || break
  done
  if [ -z "$ok" ]; then
    cat "$log" >&2
    echo "fuzz: $name in $pkg failed" >&2
    exit 1
  fi
  n=$((n + 1))
done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' internal cmd | sed -e 's/func //' | sort)
echo "fuzz: $n passed, 0 failed"
