#!/bin/sh
# Sharded sweeps (SPEC 1, docs/scale-out.md): a sweep split into shards run
# by GNU parallel and combined with `ksim merge` must hold the same runs and
# summaries as the same sweep run in one piece; and one sweep run with
# --jobs 1 and with --jobs 2 must give the same database, run ids included.
#
# Method: a small scenario written here (3 brokers, a leader crash, 3 s of
# simulated time) is swept over seeds 1-SEEDS, and with fewer than 100
# seeds also over acks=1,all. The databases are compared through sqlite3
# dumps of their runs, summary and sweep_runs rows, ordered by content;
# wall-clock columns (started_at, wall_ms) are left out because they are the
# only ones allowed to differ.
#
# Two sizes: the default (SEEDS 6, 12 runs in 4 shards, a few seconds; make
# test's `shards`) also compares --jobs 1 with --jobs 2; SEEDS 1000 (acks=all
# only: 1,000 runs in 10 shards, `make shards-1000`, part of `make bench`,
# about two minutes on 2 cores) compares the 10 merged shards with the sweep
# run in one piece by --jobs 2, and skips the --jobs 1 run.
#
# Needs: bin/ksim, GNU parallel, the sqlite3 command-line shell.
# Usage: sh tests/shards.sh [KSIM [SEEDS]]
set -eu
ksim=${1:-bin/ksim}
seeds=${2:-6}
case $ksim in /*) ;; *) ksim=$(pwd)/$ksim ;; esac
case $seeds in
    '' | *[!0-9]*) echo "shards: SEEDS must be a number of seeds, not '$seeds'"; exit 2 ;;
esac
if [ "$seeds" -lt 4 ]; then
    echo "shards: SEEDS must be at least 4"; exit 2
fi
shards=4
acks=1,all
runs_expected=$((2 * seeds))
if [ "$seeds" -ge 100 ]; then
    shards=10
    acks=all
    runs_expected=$seeds
fi
for tool in parallel sqlite3; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "shards: $tool is not installed (Debian: apt-get install $tool)"; exit 2
    fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

cat > shards.ini <<'INI'
[scenario]
name = shards
duration = 3s
final.drain = 10s

[cluster]
brokers = 3

[topic orders]
partitions = 2
replication.factor = 3
min.insync.replicas = 2

[producer p1]
topic = orders
acks = all
rate = 300/s
keys = 50

[fault kill-leader]
at = 1s
action = crash
target = leader(orders-0)
restart.after = 1s

[expect]
acked_lost = 0
INI

sweep() {
    # A sweep exits 1 when an expectation fails (acks=1 may lose records).
    "$ksim" sweep shards.ini --vary producer.p1.acks=$acks --seeds 1-"$seeds" "$@" >/dev/null || \
        [ $? -eq 1 ] || { echo "shards: FAIL: ksim sweep $* failed"; exit 1; }
}

# The content of a database without run ids and wall-clock columns.
content() {
    sqlite3 -batch "$1" "
      SELECT 'run', scenario, seed, params, sim_ms, events, trace_hash, verdict
        FROM runs ORDER BY scenario, params, seed;
      SELECT 'summary', r.scenario, r.params, r.seed, s.metric, s.value
        FROM summary s JOIN runs r USING (run_id) ORDER BY 2, 3, 4, 5;
      SELECT 'setting', r.scenario, r.params, r.seed, w.setting
        FROM sweep_runs w JOIN runs r USING (run_id) ORDER BY 2, 3, 4;
      SELECT 'rows', (SELECT count(*) FROM events), (SELECT count(*) FROM records),
             (SELECT count(*) FROM partition_state), (SELECT count(*) FROM expectations);"
}

# The content with run ids, for the --jobs comparison.
content_with_ids() {
    sqlite3 -batch "$1" "
      SELECT run_id, scenario, seed, params, sim_ms, events, trace_hash, verdict
        FROM runs ORDER BY run_id;
      SELECT run_id, metric, value FROM summary ORDER BY 1, 2;
      SELECT run_id, setting FROM sweep_runs ORDER BY 1;
      SELECT run_id, count(*) FROM records GROUP BY 1 ORDER BY 1;"
}

started=$(date +%s)
if [ "$seeds" -lt 100 ]; then
    sweep --jobs 1 --db jobs1.db
    sweep --jobs 2 --db jobs2.db
    content_with_ids jobs1.db > jobs1.txt
    content_with_ids jobs2.db > jobs2.txt
    if ! cmp -s jobs1.txt jobs2.txt; then
        echo "shards: FAIL: --jobs 1 and --jobs 2 differ"; diff jobs1.txt jobs2.txt | head -20; exit 1
    fi
else
    sweep --jobs 2 --db jobs2.db
fi
runs=$(sqlite3 jobs2.db "SELECT count(*) FROM runs")
if [ "$runs" != "$runs_expected" ]; then
    echo "shards: FAIL: expected $runs_expected runs, found $runs"; exit 1
fi
[ "$seeds" -ge 100 ] || echo "shards: ok --jobs 1 and --jobs 2 give the same database ($runs runs)"
whole_s=$(($(date +%s) - started))

started=$(date +%s)
parallel --will-cite -j 2 "'$ksim' sweep shards.ini --vary producer.p1.acks=$acks --seeds 1-$seeds \
    --shard {}/$shards --db shard{}.db >/dev/null || [ \$? -eq 1 ]" ::: $(seq 1 $shards)
# Merged in an order that is not the shards' own.
"$ksim" merge merged.db $(seq 1 $shards | sort -r | sed 's/.*/shard&.db/') 2>/dev/null
sharded_s=$(($(date +%s) - started))
content jobs2.db > whole.txt
content merged.db > merged.txt
if ! cmp -s whole.txt merged.txt; then
    echo "shards: FAIL: $shards merged shards differ from the whole sweep"
    diff whole.txt merged.txt | head -20; exit 1
fi
# Merging in another order gives the same file content, ids included.
"$ksim" merge merged2.db $(seq 1 $shards | sed 's/.*/shard&.db/') 2>/dev/null
content_with_ids merged.db > m1.txt
content_with_ids merged2.db > m2.txt
if ! cmp -s m1.txt m2.txt; then
    echo "shards: FAIL: merge depends on the order of its inputs"; exit 1
fi
echo "shards: ok $shards shards through GNU parallel, merged, equal the unsharded sweep" \
    "($runs runs, $seeds seeds; whole sweep ${whole_s} s, shards and merge ${sharded_s} s)"
