#!/bin/sh
# Independent decoding of ksim's segment files (make test): runs scenarios that
# exercise every on-disk path (plain appends, leader changes and truncation,
# power loss and recovery, retention, compaction, __consumer_offsets) and reads
# each run directory with tests/decode_segments.py, a decoder written from
# Kafka's format that shares no code with ksim.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for name in quickstart kip101-scenario1-hw all-replicas-power-loss retention-late-consumer \
            compaction-late-consumer consumer-offsets-unclean; do
    f=scenarios/$name.ini
    [ -e "$f" ] || { echo "decode: $f is missing"; status=1; continue; }
    bin/ksim run "$f" --quiet --db "$tmp/d.db" --dir "$tmp/$name" >/dev/null || true
    python3 tests/decode_segments.py "$tmp/$name" || status=1
done
exit $status
