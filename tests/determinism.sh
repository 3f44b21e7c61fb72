#!/bin/sh
# Determinism check (SPEC section 6): every scenario in scenarios/ runs twice
# with its own seed, each time in a fresh database and run folder; the
# trace_hash must be identical both times. This script does not use --jobs:
# tests/shards.sh (sweep) and tests/explore.sh (explore) compare --jobs 1
# against --jobs 2.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
count=0
for f in scenarios/*.ini; do
    [ -e "$f" ] || continue
    count=$((count + 1))
    a=$(bin/ksim run "$f" --json --db "$tmp/a.db" --dir "$tmp/run-a" | sed -n 's/.*"trace_hash" *: *"\{0,1\}\([0-9a-fx]*\)"\{0,1\}.*/\1/p')
    b=$(bin/ksim run "$f" --json --db "$tmp/b.db" --dir "$tmp/run-b" | sed -n 's/.*"trace_hash" *: *"\{0,1\}\([0-9a-fx]*\)"\{0,1\}.*/\1/p')
    if [ -z "$a" ] || [ "$a" != "$b" ]; then
        echo "determinism: FAIL $f ($a vs $b)"
        status=1
    else
        echo "determinism: ok $f $a"
    fi
done
echo "determinism: $count scenarios checked"
exit $status
