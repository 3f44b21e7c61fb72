#!/bin/sh
# Seeds that matter (docs/model.md, "Timing noise"): a sweep of seeds 1-10
# over scenarios/acks1-leader-crash.ini (a leader crash at a fixed time,
# acks=1) must give different numbers for different seeds, because network
# jitter, the clients' start offsets and the brokers' task phases are drawn
# per seed; one seed must still give one trace_hash, in the sweep and in two
# plain runs; and with the three knobs at their exact values
# (network.jitter = 0s, broker.task.phase = aligned, start.jitter = 0s) the
# spread must be gone, so the noise comes from them and a scenario can turn
# it off. The sweep table must show the spread as min < max.
set -u
ksim=${KSIM:-bin/ksim}
[ -x "$ksim" ] || { echo "seeds: $ksim is not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
f=scenarios/acks1-leader-crash.ini
status=0
fail() {
    echo "seeds: FAIL $*"
    status=1
}

# A sweep exits 1 when an expectation fails; any other non-zero code is an error.
sweep() {
    db=$1; shift
    "$ksim" sweep "$f" --vary producer.p1.acks=1 --seeds 1-10 --jobs 2 --db "$db" "$@" \
        >"$tmp/table" 2>"$tmp/err" || [ $? -eq 1 ] ||
        { fail "ksim sweep $*: $(cat "$tmp/err")"; exit 1; }
}
# distinct DB METRIC: how many different values METRIC takes over the runs.
distinct() {
    sqlite3 "$1" "SELECT count(DISTINCT value) FROM summary WHERE metric = '$2'"
}

sweep "$tmp/noise.db"
for metric in acked_lost:2 unavailable_ms:5 produce_p99_ms:5; do
    name=${metric%:*}
    want=${metric#*:}
    got=$(distinct "$tmp/noise.db" "$name")
    if [ "$got" -lt "$want" ]; then
        fail "$name takes $got value(s) over seeds 1-10, expected at least $want"
    else
        echo "seeds: ok $name takes $got values over seeds 1-10"
    fi
done
# The table's unavailable_ms line: min <= mean <= max, and min < max.
awk '$0 ~ /unavailable_ms/ {
        n = NF; if (!($(n-2) < $n && $(n-2) <= $(n-1) && $(n-1) <= $n)) exit 1; found = 1 }
     END { exit found ? 0 : 1 }' "$tmp/table" ||
    fail "the sweep table does not show the spread of unavailable_ms: $(cat "$tmp/table")"

# Determinism: seed 4 twice through run, and as the sweep recorded it.
a=$("$ksim" run "$f" --seed 4 --json --db "$tmp/a.db" --dir "$tmp/run-a" |
    sed -n 's/.*"trace_hash" *: *"\([0-9a-f]*\)".*/\1/p')
b=$("$ksim" run "$f" --seed 4 --json --db "$tmp/b.db" --dir "$tmp/run-b" |
    sed -n 's/.*"trace_hash" *: *"\([0-9a-f]*\)".*/\1/p')
c=$(sqlite3 "$tmp/noise.db" "SELECT trace_hash FROM runs WHERE seed = 4")
if [ -z "$a" ] || [ "$a" != "$b" ] || [ "$a" != "$c" ]; then
    fail "seed 4 gives trace_hash '$a', '$b' and '$c' in the sweep"
else
    echo "seeds: ok seed 4 gives trace_hash $a every time"
fi

# The exact knobs remove the spread (the workload's keys still differ per seed).
sweep "$tmp/exact.db" --set cluster.network.jitter=0s --set cluster.broker.task.phase=aligned \
    --set producer.p1.start.jitter=0s
for name in acked_lost unavailable_ms; do
    got=$(distinct "$tmp/exact.db" "$name")
    if [ "$got" -ne 1 ]; then
        fail "with exact timing $name takes $got values over seeds 1-10, expected 1"
    else
        echo "seeds: ok with exact timing $name takes one value"
    fi
done
exit $status
