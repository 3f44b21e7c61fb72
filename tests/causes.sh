#!/bin/sh
# Every lossy scenario names the right cause for each lost range: the event
# that removed the records' offsets from the replica that would have kept
# them (sim/cause.h), by its kind, broker, time and (for a power loss) the
# fault's name, read from the events table's typed columns. The table below
# is the answer, worked out from each scenario's story:
#   - kip101-scenario1-hw: follower 2's truncation to its stale HW at 7.55 s,
#     before it was elected; not broker 1's own truncation at 22.55 s;
#   - kip101-scenario2-*: follower 2's power loss at 10 s (it restarted
#     empty and was elected), not broker 1's truncation at 30 s;
#   - kip279-high-watermark: broker 1's HW truncation (9.26 s) of epoch-0
#     records, then its unclean election (11.77 s) for epoch-1 records it
#     never had (the earlier truncation removed other records at those
#     offsets);
#   - acks=0/1, the zombie leader and acks=1 rolling restarts: the records
#     were only on the old leader, whose truncation removed them (in
#     rolling-restart-acks1, broker 2, stopped at 22.08 s, truncates on its
#     restart at 34.14 s what it acknowledged after its leadership moved);
#   - unclean elections: the new leader never had them;
#   - mirror-source-lost, mirror-failover, mirror-failover-producer: the
#     source cluster's crash for good (several clusters), its fault line (in
#     mirror-failover-producer east's records only: every record the
#     producer's standby wrote to west is present).
# Also: every scenario of scenarios/ that loses acknowledged records is in
# the table (a new lossy scenario needs its answer here), and each cause is
# consistent with the event's structured columns (a truncation's range
# covers the lost offsets; an unclean election's leader is not the broker
# that acknowledged them; a power loss is a fault event naming a crash
# fault with mode = power).
set -u
ksim=${KSIM:-bin/ksim}
[ -x "$ksim" ] || { echo "causes: $ksim is not built"; exit 1; }
command -v sqlite3 >/dev/null || { echo "causes: sqlite3 is missing (make deps)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0
fail() {
    echo "causes: FAIL $*"
    failures=$((failures + 1))
}

# scenario | first seq of the lost range | cause | event kind | broker | ms | fault
cat >"$tmp/expected" <<'EOF'
acks0-leader-crash|15599|truncation|truncation|1|20004|
acks1-leader-crash|15599|truncation|truncation|1|20004|
all-replicas-power-loss|0|power_loss|fault|1|10000|power-1
jepsen-2013-isr-partition|2456|unclean_election|unclean_election|2|30912|
kip101-scenario1-hw|1168|truncation|truncation|2|7550|
kip101-scenario1-kafka-0.10|1169|truncation|truncation|2|7550|
kip101-scenario2-epoch|0|power_loss|fault|2|10000|follower-power
kip101-scenario2-hw|0|power_loss|fault|2|10000|follower-power
kip279-high-watermark|731|truncation|truncation|1|9257|
kip279-high-watermark|2233|unclean_election|unclean_election|1|11773|
kip279-leader-epoch|2435|unclean_election|unclean_election|1|11773|
kip320-consumer-truncation|2483|unclean_election|unclean_election|2|28877|
kip966-last-replica-standing|0|power_loss|fault|3|29730|t2-power-loss
mirror-failover|0|cluster_lost|fault||12000|east-lost
mirror-failover-producer|0|cluster_lost|fault||12000|east-lost
mirror-source-lost|0|cluster_lost|fault||8000|data-center-lost
power-loss-no-writeback|0|power_loss|fault|1|60000|power-1
power-loss-writeback|16481|power_loss|fault|1|60000|power-1
rolling-restart-acks1|22070|truncation|truncation|2|34139|
rolling-restart-acks1|22072|truncation|truncation|2|34139|
rolling-restart-acks1|22073|truncation|truncation|2|34139|
unclean-election-loss|2483|unclean_election|unclean_election|2|28877|
zk-acks1-leader-crash|15599|truncation|truncation|1|20007|
zombie-leader-acks1|2475|truncation|truncation|1|24610|
EOF

db=$tmp/causes.db
for f in scenarios/*.ini; do
    "$ksim" run "$f" --quiet --db "$db" --dir "$tmp/run" >/dev/null 2>"$tmp/err"
    code=$?
    [ "$code" -le 1 ] || { fail "ksim run $f: exit $code"; sed 's/^/    /' "$tmp/err" | head -5; }
done

sqlite3 -separator '|' "$db" "
    SELECT r.scenario, a.first_seq, coalesce(a.cause, ''), coalesce(e.kind, ''),
           coalesce(e.broker, ''), coalesce(e.t_ns / 1000000, ''), coalesce(e.fault, '')
    FROM anomalies a JOIN runs r ON r.run_id = a.run_id
    LEFT JOIN events e ON e.run_id = a.run_id AND e.event_id = a.cause_event_id
    WHERE a.kind = 'lost'
    ORDER BY r.scenario, a.first_seq" >"$tmp/actual"

checks=$((checks + 1))
if ! diff -u "$tmp/expected" "$tmp/actual" >"$tmp/diff"; then
    fail "the lost ranges' causes differ from the expected ones (- expected, + found):"
    sed 's/^/    /' "$tmp/diff"
fi

check() { # check DESCRIPTION QUERY: the query must return 0 rows' count
    checks=$((checks + 1))
    n=$(sqlite3 "$db" "$2")
    [ "$n" = "0" ] || fail "$1: $n row(s)"
}
check "every scenario that loses acked records is in the table" "
    SELECT count(*) FROM runs r JOIN summary s ON s.run_id = r.run_id
    WHERE s.metric = 'acked_lost' AND s.value > 0
      AND (SELECT count(*) FROM anomalies a WHERE a.run_id = r.run_id AND a.kind = 'lost'
           AND a.cause IS NOT NULL) = 0"
check "a truncation named as a cause covers the lost offsets (when known)" "
    SELECT count(*) FROM anomalies a JOIN events e ON e.run_id = a.run_id
      AND e.event_id = a.cause_event_id
    WHERE a.kind = 'lost' AND a.cause = 'truncation' AND a.first_offset IS NOT NULL
      AND NOT (e.offset_from <= a.first_offset AND a.last_offset < e.offset_to)"
check "an unclean election named as a cause chose another broker than the acknowledging one" "
    SELECT count(*) FROM anomalies a JOIN events e ON e.run_id = a.run_id
      AND e.event_id = a.cause_event_id
    WHERE a.kind = 'lost' AND a.cause = 'unclean_election'
      AND (e.leader IS NULL OR e.leader = a.acked_broker)"
check "a power loss named as a cause is a fault event of a power crash, named in its fault column" "
    SELECT count(*) FROM anomalies a JOIN runs r ON r.run_id = a.run_id
    JOIN events e ON e.run_id = a.run_id AND e.event_id = a.cause_event_id
    WHERE a.kind = 'lost' AND a.cause = 'power_loss'
      AND (e.kind != 'fault' OR e.fault IS NULL OR NOT EXISTS (
           SELECT 1 FROM json_each(json_extract(r.params, '\$.faults')) f
           WHERE json_extract(f.value, '\$.name') = e.fault
             AND json_extract(f.value, '\$.action') = 'crash'
             AND json_extract(f.value, '\$.mode') = 'power'))"

echo "causes: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
