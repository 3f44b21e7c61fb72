#!/bin/sh
# Golden timelines (STYLE 3.10, SimGrid .tesh style): each tests/golden/NAME.txt
# is the expected `ksim run scenarios/NAME.ini --explain` output. A behaviour
# change shows as a diff. Regenerate deliberately with: sh tests/golden.sh --update
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for g in tests/golden/*.txt; do
    [ -e "$g" ] || continue
    name=$(basename "$g" .txt)
    bin/ksim run "scenarios/$name.ini" --explain --db "$tmp/g.db" --dir "$tmp/run" > "$tmp/out.txt" || true
    if [ "${1:-}" = "--update" ]; then
        cp "$tmp/out.txt" "$g"
        echo "golden: updated $g"
    elif ! diff -u "$g" "$tmp/out.txt"; then
        echo "golden: FAIL $name"
        status=1
    else
        echo "golden: ok $name"
    fi
done
exit $status
