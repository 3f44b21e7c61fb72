#!/bin/sh
# Refactor safety net: writes, for every scenario in scenarios/ (or the files
# given), its `--json` summary and its `--explain` output into OUTDIR, one
# file each. Take a snapshot before a change that should not change behaviour
# and one after, then compare them:
#
#   sh tests/snapshot.sh /tmp/before        # on the old build
#   sh tests/snapshot.sh /tmp/after         # on the new build
#   diff -r /tmp/before /tmp/after && echo identical
#
# The JSON carries trace_hash, so equal files mean the same events in the same
# order and the same metrics; the --explain text catches narration drift.
# wall_ms is the one field that differs run to run; it is removed.
set -eu
out=${1:?usage: sh tests/snapshot.sh OUTDIR [SCENARIO...]}
shift
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 0 ]; then
    set -- scenarios/*.ini
fi
for f in "$@"; do
    name=$(basename "$f" .ini)
    rm -rf "$tmp"/*
    bin/ksim run "$f" --json --db "$tmp/s.db" --dir "$tmp/run" 2>/dev/null \
        | sed 's/"wall_ms" *: *[0-9.e+-]*,\{0,1\}//' > "$out/$name.json" || true
    rm -rf "$tmp"/*
    bin/ksim run "$f" --explain --db "$tmp/s.db" --dir "$tmp/run" > "$out/$name.txt" 2>&1 || true
done
echo "snapshot: $# scenarios in $out"
