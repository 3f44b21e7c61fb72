#!/bin/sh
# Independent decoding of ksim's segment files (make test): runs scenarios that
# exercise every on-disk path (plain appends, leader changes and truncation,
# power loss and recovery, retention, compaction, __consumer_offsets,
# transaction markers, .txnindex and __transaction_state, every
# compression codec and the leader's recompression) and reads
# each run directory with tests/decode_segments.py, a decoder written from
# Kafka's format that shares no code with ksim.
set -eu
# The codec and CRC modules are Debian packages (python3-lz4, python3-snappy,
# python3-zstandard, python3-crcmod): use a python3 that has them (a python3
# earlier on PATH, such as a pyenv one, may not).
py=python3
$py -c 'import lz4.frame, snappy, zstandard, crcmod' 2>/dev/null || py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for name in quickstart kip101-scenario1-hw all-replicas-power-loss retention-late-consumer \
            compaction-late-consumer consumer-offsets-unclean \
            quorum-controller-crash-during-election txn-read-committed txn-coordinator-crash \
            eos-processor-crash; do
    f=scenarios/$name.ini
    [ -e "$f" ] || { echo "decode: $f is missing"; status=1; continue; }
    bin/ksim run "$f" --quiet --db "$tmp/d.db" --dir "$tmp/$name" >/dev/null || true
    $py tests/decode_segments.py "$tmp/$name" || status=1
done
# Compressed segments: every codec as the producer writes it, and a topic that
# recompresses (gzip producer, zstd topic) on every broker, after a failover.
for codec in gzip snappy lz4 zstd; do
    bin/ksim run scenarios/compression-throughput.ini --quiet --db "$tmp/d.db" \
        --set producer.p1.compression.type=$codec --set scenario.duration=2s \
        --dir "$tmp/compress-$codec" >/dev/null || true
    $py tests/decode_segments.py "$tmp/compress-$codec" --codec events=$codec || status=1
done
bin/ksim run scenarios/compression-recompress.ini --quiet --db "$tmp/d.db" --dir "$tmp/recompress" \
    >/dev/null || true
$py tests/decode_segments.py "$tmp/recompress" --codec events=zstd || status=1
exit $status
