#!/bin/sh
# Determinism check (SPEC section 6): every scenario in scenarios/ runs twice
# with its own seed, each time in a fresh database and run folder; the
# trace_hash must be identical both times.
#
#   sh tests/determinism.sh A.db B.db   compare the runs two `ksim check scenarios`
#                                       recorded (make test: the release build's
#                                       and the KS_DEBUG build's, so the invariant
#                                       checks are also shown not to change the run)
#   sh tests/determinism.sh             run every scenario twice itself
#
# This script does not use --jobs: tests/shards.sh (sweep) and tests/explore.sh
# (explore) compare --jobs 1 against --jobs 2.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
count=0
hash_of() { # DB SCENARIO-NAME: that scenario's trace_hash (one run expected)
    sqlite3 "$1" "SELECT group_concat(trace_hash) FROM runs WHERE scenario = '$2'"
}
if [ $# -eq 2 ]; then
    for db in "$1" "$2"; do
        [ -s "$db" ] || { echo "determinism: FAIL no database $db (run ksim check first)"; exit 1; }
    done
    for f in scenarios/*.ini; do
        [ -e "$f" ] || continue
        count=$((count + 1))
        name=$(sed -n 's/^name *= *\([^ #]*\).*/\1/p' "$f" | head -1)
        a=$(hash_of "$1" "$name")
        b=$(hash_of "$2" "$name")
        if [ -z "$a" ] || [ "$a" != "$b" ] || [ "${a#*,}" != "$a" ]; then
            echo "determinism: FAIL $f ($a vs $b)"
            status=1
        else
            echo "determinism: ok $f $a"
        fi
    done
    runs=$(sqlite3 "$1" "SELECT count(*) FROM runs")
    [ "$runs" -eq "$count" ] || { echo "determinism: FAIL $1 holds $runs runs for $count scenarios"; status=1; }
else
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
fi
echo "determinism: $count scenarios checked"
exit $status
