#!/bin/sh
# docs/database.md is true: a database made from real scenarios (lossy ones,
# a consumer that loses records, the same scenario with two settings, a
# sweep) answers every SQL block of the document without an error, and with
# rows unless the block starts with "-- may be empty". On the same database
# the records, anomalies and unavailability tables add up to the summary of
# every run: acked_lost is the acked records the final read misses and the
# records of the lost anomalies, each lost range of the lossy scenarios names
# an event of its run whose kind matches its cause, and the intervals of each
# view sum to unavailable_ms and produce_unavailable_ms.
set -u
ksim=${KSIM:-bin/ksim}
doc=${DOC:-docs/database.md}
[ -x "$ksim" ] || { echo "database: $ksim is not built"; exit 1; }
command -v sqlite3 >/dev/null || { echo "database: sqlite3 is missing (make deps)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/doc.db
failures=0
count=0
fail() {
    echo "database: FAIL $*"
    failures=$((failures + 1))
}
run() { # run SCENARIO [--set ...]: record it in $db
    count=$((count + 1))
    "$ksim" run "$@" --quiet --db "$db" --dir "$tmp/run" >"$tmp/out" 2>"$tmp/err"
    code=$?
    [ "$code" -le 1 ] || { fail "ksim run $*: exit $code"; sed 's/^/    /' "$tmp/err" | head -5; }
}
sql() { # sql QUERY: its output, failing on an error
    sqlite3 -bail "$db" "$1" 2>"$tmp/sqlerr" || { fail "query failed: $1"; cat "$tmp/sqlerr"; }
}
equal() { # equal DESCRIPTION QUERY: the query's one value must be 1 (true)
    count=$((count + 1))
    [ "$(sql "$2")" = "1" ] || fail "$1 ($2)"
}

run scenarios/acks1-leader-crash.ini                           # 1: acks=1 loses records
run scenarios/acks1-leader-crash.ini --set producer.p1.acks=all # 2: the same with acks=all
run scenarios/unclean-election-loss.ini                        # 3: unclean election
run scenarios/all-replicas-power-loss.ini                      # 4: power loss everywhere
run scenarios/consumer-at-most-once.ini                        # 5: a group skips records
count=$((count + 1))
"$ksim" sweep tests/lossy.ini --vary producer.p1.acks=1,all --seeds 1-2 --db "$db" >"$tmp/out" 2>"$tmp/err" ||
    { fail "ksim sweep: exit $?"; sed 's/^/    /' "$tmp/err" | head -5; }

# ---- every block of the document ------------------------------------------------------------
awk -v dir="$tmp" '
    /^```sql$/ { n++; file = sprintf("%s/block%02d.sql", dir, n); inside = 1; next }
    /^```$/ && inside { inside = 0; close(file); next }
    inside { print > file }
' "$doc"
blocks=$(ls "$tmp"/block*.sql 2>/dev/null | wc -l)
[ "$blocks" -ge 10 ] || fail "$doc has only $blocks sql blocks"
for block in "$tmp"/block*.sql; do
    [ -e "$block" ] || continue
    count=$((count + 1))
    if ! sqlite3 -bail "$db" <"$block" >"$tmp/result" 2>"$tmp/sqlerr"; then
        fail "$doc block $(basename "$block"): $(cat "$tmp/sqlerr")"
        sed 's/^/    /' "$block"
    elif [ ! -s "$tmp/result" ] && ! head -n 1 "$block" | grep -q '^-- may be empty'; then
        fail "$doc block $(basename "$block") returned no rows"
        sed 's/^/    /' "$block"
    fi
done

# ---- the tables add up to the summary, in every run -----------------------------------------
runs=$(sql "SELECT count(*) FROM runs")
[ "$runs" -eq 9 ] || fail "expected 9 runs, found $runs"
equal "no record without a final state" "SELECT count(*) = 0 FROM records WHERE final IS NULL"
equal "acked_lost is the acked records the final read misses, in every run" \
    "SELECT count(*) = 0 FROM summary s WHERE s.metric = 'acked_lost' AND s.value !=
       (SELECT count(*) FROM records r WHERE r.run_id = s.run_id AND r.outcome = 'acked'
        AND r.final = 'missing')"
equal "acked_lost is the records of the lost anomalies, in every run" \
    "SELECT count(*) = 0 FROM summary s WHERE s.metric = 'acked_lost' AND s.value !=
       (SELECT coalesce(sum(record_count), 0) FROM anomalies a WHERE a.run_id = s.run_id
        AND a.kind = 'lost')"
equal "duplicates add up" \
    "SELECT count(*) = 0 FROM summary s WHERE s.metric = 'duplicates' AND s.value !=
       (SELECT coalesce(sum(record_count), 0) FROM anomalies a WHERE a.run_id = s.run_id
        AND a.kind = 'duplicate')"
equal "consumed_lost adds up" \
    "SELECT count(*) = 0 FROM summary s WHERE s.metric = 'consumed_lost' AND s.value !=
       (SELECT coalesce(sum(record_count), 0) FROM anomalies a WHERE a.run_id = s.run_id
        AND a.kind = 'consumed_lost')"
equal "the lossy scenarios lose acknowledged records" \
    "SELECT count(*) = 3 FROM summary WHERE run_id IN (1, 3, 4) AND metric = 'acked_lost'
     AND value > 0"
equal "every lost range of the lossy scenarios names its cause and acking broker" \
    "SELECT count(*) = 0 FROM anomalies WHERE run_id IN (1, 3, 4) AND kind = 'lost'
     AND (cause IS NULL OR cause_event_id IS NULL OR acked_broker IS NULL)"
equal "each cause is an event of its run of the matching kind" \
    "SELECT count(*) = 0 FROM anomalies a LEFT JOIN events e ON e.run_id = a.run_id
       AND e.event_id = a.cause_event_id
     WHERE a.cause_event_id IS NOT NULL AND a.kind = 'lost' AND (e.kind IS NULL OR
       e.kind != CASE a.cause WHEN 'power_loss' THEN 'fault' ELSE a.cause END)"
equal "acks1-leader-crash loses to a truncation, the power loss to the power loss" \
    "SELECT (SELECT count(*) FROM anomalies WHERE run_id = 1 AND kind = 'lost'
             AND cause = 'truncation') > 0
        AND (SELECT count(*) FROM anomalies WHERE run_id = 4 AND kind = 'lost'
             AND cause != 'power_loss') = 0"
equal "the group of consumer-at-most-once skipped records, named by its group.id" \
    "SELECT count(*) > 0 FROM anomalies WHERE run_id = 5 AND kind = 'consumed_lost'
     AND group_id = 'g1' AND cause IS NOT NULL"
for view in cluster produce; do
    metric=unavailable_ms
    [ "$view" = produce ] && metric=produce_unavailable_ms
    equal "the $view intervals sum to $metric, in every run" \
        "SELECT count(*) = 0 FROM summary s WHERE s.metric = '$metric' AND s.value !=
           (SELECT coalesce(sum(end_ns - start_ns), 0) / 1000000 FROM unavailability u
            WHERE u.run_id = s.run_id AND u.view = '$view')"
done
equal "event ids number each run's events from 1" \
    "SELECT count(*) = 0 FROM (SELECT run_id, min(event_id) AS lo, max(event_id) AS hi,
       count(*) AS n FROM events GROUP BY run_id) WHERE lo != 1 OR hi != n"

echo "database: $count checks ($blocks queries of $doc), $failures failed"
[ "$failures" -eq 0 ]
