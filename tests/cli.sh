#!/bin/sh
# CLI tests of the built bin/ksim (SPEC section 1): exit codes 0/1/2, the
# FILE:LINE message of bad input with nothing written, --json as one JSON
# object, --quiet as one line, check's PASS/FAIL lines and final count,
# describe's kafka-topics.sh layout, and determinism across two runs.
# Everything is written under a temporary folder.
set -u
ksim=${KSIM:-bin/ksim}
[ -x "$ksim" ] || { echo "cli: $ksim is not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
count=0

fail() {
    echo "cli: FAIL $*"
    failures=$((failures + 1))
}
ok() {
    count=$((count + 1))
}
# expect_code WANT DESCRIPTION COMMAND...
expect_code() {
    want=$1; what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$what: exit $got, expected $want"; sed 's/^/    /' "$tmp/err" | head -5
    else
        ok
    fi
}

q=scenarios/quickstart.ini
db=$tmp/runs.db
# For commands run from another folder.
case $ksim in /*) ksim_abs=$ksim ;; *) ksim_abs=$PWD/$ksim ;; esac
q_abs=$PWD/$q

# ---- help and bad options -----------------------------------------------------------
expect_code 0 "--help" "$ksim" --help
grep -q "usage: ksim" "$tmp/out" || fail "--help prints the usage"
expect_code 0 "run --help" "$ksim" run --help
grep -q "Examples" "$tmp/out" || fail "run --help shows examples"
expect_code 2 "unknown command" "$ksim" frobnicate
expect_code 0 "--version" "$ksim" --version
grep -q "^ksim [0-9][0-9.]* .*Kafka 4\.0" "$tmp/out" || fail "--version names ksim's and Kafka's versions"
grep -q "kafka.version: 0.10, .*, 4.1)" "$tmp/out" || fail "--version lists the kafka.version lines"
# kafka.version: an unknown line is bad input naming the known ones, writing nothing; a
# release maps to its line, which the header prints and runs.params records.
expect_code 2 "unknown kafka.version" "$ksim" run "$q" --set scenario.kafka.version=3.10 \
    --db "$tmp/kv.db" --dir "$tmp/kv"
grep -q "^--set scenario.kafka.version=3.10: kafka.version = 3.10: not a Kafka version ksim knows; give one of 0.10, " "$tmp/err" ||
    fail "an unknown kafka.version says which ones exist ($(cat "$tmp/err"))"
[ -e "$tmp/kv.db" ] || [ -e "$tmp/kv" ] && fail "a bad kafka.version wrote something"
expect_code 0 "kafka.version 2.8.1" "$ksim" run "$q" --set scenario.kafka.version=2.8.1 \
    --set scenario.duration=12s --db "$tmp/kv.db" --dir "$tmp/kv"
grep -q "^kafka.version: 2.8$" "$tmp/out" || fail "run prints the effective kafka.version"
[ "$(sqlite3 "$tmp/kv.db" "select json_extract(params, '\$.scenario.\"kafka.version\"') from runs")" = 2.8 ] ||
    fail "runs.params records the kafka.version line"
[ "$(sqlite3 "$tmp/kv.db" "select json_extract(params, '\$.consumers[0].\"session.timeout.ms\"') from runs")" = 10000 ] ||
    fail "kafka.version 2.8 gives the consumer session.timeout.ms 10000"
expect_code 2 "help of an unknown command" "$ksim" help frobnicate

# ---- the command table: every command answers --help on stdout with exit 0, `ksim help
# CMD` prints the same, and SPEC section 1's command list (copied in README.md) names
# exactly the commands of the table, less those specified for later ----------------------
commands=$("$ksim" --help | sed -n '/^commands:$/,/^$/p' | grep '^  [a-z]' | awk '{print $1}' | tr '\n' ' ')
[ -n "$commands" ] || fail "ksim --help lists the commands"
for c in $commands; do
    expect_code 0 "$c --help" "$ksim" "$c" --help
    grep -qi "usage" "$tmp/out" || fail "$c --help prints its usage on stdout"
    [ -s "$tmp/err" ] && fail "$c --help writes to stderr"
    cp "$tmp/out" "$tmp/help1"
    expect_code 0 "help $c" "$ksim" help "$c"
    cmp -s "$tmp/out" "$tmp/help1" || fail "ksim help $c differs from ksim $c --help"
done
planned=""   # SPEC 1 commands that later issues add
spec=$(sed -n '/^## Commands$/,/^## /p' README.md | sed -n '/^```$/,/^```$/p' |
       grep '^ksim ' | awk '{print $2}' | tr '\n' ' ')
[ -n "$spec" ] || fail "README.md has SPEC 1's command block"
for c in $spec; do
    case " $commands " in *" $c "*) continue ;; esac
    case " $planned " in *" $c "*) continue ;; esac
    fail "SPEC 1 names '$c', the command table does not"
done
for c in $commands; do
    case " $spec " in *" $c "*) ;; *) fail "the command table has '$c', SPEC 1 does not" ;; esac
done
expect_code 2 "unknown option" "$ksim" run "$q" --no-such-option --db "$db" --dir "$tmp/r0"
[ -e "$db" ] && fail "an unknown option wrote the database"
[ -e "$tmp/r0" ] && fail "an unknown option made the run folder"
expect_code 2 "bad --seed" "$ksim" run "$q" --seed abc --db "$db"
expect_code 2 "--seed above INT64_MAX" "$ksim" run "$q" --seed 9223372036854775808 --db "$db" --dir "$tmp/r0"
[ -e "$db" ] && fail "a --seed above INT64_MAX wrote the database"
expect_code 2 "check --seeds above INT64_MAX" "$ksim" check "$q" --seeds 9223372036854775807-9223372036854775808

# ---- bad scenario: FILE:LINE, nothing written -------------------------------------------
printf '[scenario]\nname = bad\nduration = 5s\nno.such.key = 1\n[cluster]\nbrokers = 3\n' >"$tmp/bad.ini"
expect_code 2 "bad scenario" "$ksim" run "$tmp/bad.ini" --db "$db" --dir "$tmp/r1"
grep -q "bad.ini:4:" "$tmp/err" || fail "bad scenario message is FILE:LINE: ($(cat "$tmp/err"))"
[ -e "$db" ] && fail "a bad scenario wrote the database"
[ -e "$tmp/r1" ] && fail "a bad scenario made the run folder"
expect_code 2 "bad --set" "$ksim" run "$q" --set cluster.no.such=1 --db "$db" --dir "$tmp/r1"
[ -e "$db" ] && fail "a bad --set wrote the database"

# ---- a foreign database is refused and left unchanged ------------------------------------
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()" "$tmp/foreign.db"
cp "$tmp/foreign.db" "$tmp/foreign.copy"
expect_code 2 "foreign database" "$ksim" run "$q" --db "$tmp/foreign.db" --dir "$tmp/r2"
cmp -s "$tmp/foreign.db" "$tmp/foreign.copy" || fail "the foreign database was modified"
[ -e "$tmp/r2" ] && fail "a foreign database left a run folder"

# ---- bad input writes nothing and removes nothing ksim did not make -----------------------
# --trace FILE with a later input error: the user's file, a symlink's target and a
# device node stay as they were.
printf 'keep me\n' >"$tmp/user.txt"
ln -s "$tmp/user.txt" "$tmp/link.txt"
expect_code 2 "--trace with a bad --db" "$ksim" run "$q" --trace "$tmp/user.txt" --db "$tmp/no/such/x.db" --dir "$tmp/r3"
[ "$(cat "$tmp/user.txt" 2>/dev/null)" = "keep me" ] || fail "a bad --db removed or changed the --trace file"
expect_code 2 "--trace (a symlink) with a bad --db" "$ksim" run "$q" --trace "$tmp/link.txt" --db "$tmp/no/such/x.db" --dir "$tmp/r3"
[ -L "$tmp/link.txt" ] && [ "$(cat "$tmp/user.txt" 2>/dev/null)" = "keep me" ] || fail "a bad --db truncated a symlink's target"
mkdir "$tmp/userdir"; printf 'x\n' >"$tmp/userdir/file"
expect_code 2 "--trace with a bad --dir" "$ksim" run "$q" --trace "$tmp/user.txt" --db "$db" --dir "$tmp/userdir"
[ "$(cat "$tmp/user.txt" 2>/dev/null)" = "keep me" ] || fail "a bad --dir removed or changed the --trace file"
[ -e "$db" ] && fail "a bad --dir created the database"
if [ "$(id -u)" = 0 ] && mknod "$tmp/null" c 1 3 2>/dev/null; then
    expect_code 2 "--trace (a device) with a bad --db" "$ksim" run "$q" --trace "$tmp/null" --db "$tmp/no/x.db" --dir "$tmp/r3"
    [ -c "$tmp/null" ] || fail "a bad --db removed the --trace device node"
else
    echo "cli: note: not root, the device-node case of --trace is skipped"
fi
expect_code 2 "--trace into the database" "$ksim" run "$q" --trace "$tmp/same.db" --db "$tmp/same.db" --dir "$tmp/r3"
[ -e "$tmp/same.db" ] && fail "--trace naming the database wrote it"
[ -e "$tmp/r3" ] && fail "bad input left a run folder"
# Empty names: no temporary database, no run into it, nothing created.
expect_code 2 "--dir ''" "$ksim" run "$q" --dir "" --db "$db"
[ -e "$db" ] && fail "--dir '' created the database"
(cd "$tmp" && "$ksim_abs" run "$q_abs" --db "" --trace t.txt >out 2>err); got=$?
[ "$got" -eq 2 ] || fail "--db '': exit $got, expected 2"
[ -e "$tmp/runs" ] || [ -e "$tmp/t.txt" ] && fail "--db '' left a run folder or a trace file"
expect_code 2 "check --db ''" "$ksim" check "$q" --db ""
expect_code 2 "check --dir ''" "$ksim" check "$q" --dir ""
# A database that cannot be written is refused before SQLite opens it: no -wal, -shm.
mkdir -p "$tmp/ro"; "$ksim" run "$q" --quiet --db "$tmp/ro/r.db" --dir "$tmp/ro/run" >/dev/null 2>&1
chmod 444 "$tmp/ro/r.db"; chmod 777 "$tmp/ro"; chmod 711 "$tmp"
as_user=""
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && as_user="setpriv --reuid=nobody --regid=nogroup --clear-groups"
if [ "$(id -u)" != 0 ] || [ -n "$as_user" ]; then
    $as_user "$ksim" run "$q" --quiet --db "$tmp/ro/r.db" --dir "$tmp/ro/run2" >"$tmp/out" 2>"$tmp/err"; got=$?
    [ "$got" -eq 2 ] || fail "a read-only database: exit $got, expected 2"
    grep -q "read-only" "$tmp/err" || fail "a read-only database is named as such ($(cat "$tmp/err"))"
    [ -e "$tmp/ro/r.db-wal" ] || [ -e "$tmp/ro/r.db-shm" ] && fail "a read-only database got -wal/-shm files"
    [ -e "$tmp/ro/run2" ] && fail "a read-only database left a run folder"
    $as_user "$ksim" describe "$tmp/ro/r.db" >"$tmp/out" 2>"$tmp/err" || fail "describe of a read-only database"
    [ -e "$tmp/ro/r.db-wal" ] || [ -e "$tmp/ro/r.db-shm" ] && fail "describe left -wal/-shm files"
else
    echo "cli: note: root without setpriv, the read-only database case is skipped"
fi
chmod 644 "$tmp/ro/r.db"; chmod 700 "$tmp"

# ---- run folders: one per effective configuration, locked, recorded -------------------
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$ksim_abs" run "$q_abs" --quiet --db k.db >/dev/null 2>&1 &&
 "$ksim_abs" run "$q_abs" --quiet --db k.db --set producer.p1.linger.ms=10 >/dev/null 2>&1) ||
    fail "two runs with default run folders"
n=$(ls "$tmp/cwd/runs" | grep -c '^quickstart-s1-[0-9a-f]\{8\}$')
[ "$n" -eq 2 ] || fail "two --set values got $n run folders runs/quickstart-s1-<hash>, expected 2"
dirs=$(sqlite3 "$tmp/cwd/k.db" "select count(distinct run_dir) from runs where run_dir like '$tmp/cwd/runs/quickstart-s1-%'")
[ "$dirs" = 2 ] || fail "runs.run_dir records each run's folder ($dirs)"
first=$(sqlite3 "$tmp/cwd/k.db" "select run_dir from runs where run_id = 1")
[ -d "$first/broker-1" ] || fail "runs.run_dir names the folder of run 1 ($first)"
(cd "$tmp/cwd" && "$ksim_abs" run "$q_abs" --quiet --db k.db >/dev/null 2>&1) || fail "the same run again"
[ "$(ls "$tmp/cwd/runs" | wc -l)" -eq 2 ] || fail "the same settings reuse their folder"
# While a run holds its folder, a second run of the same settings fails at once.
flock "$first/.ksim-run" sleep 3 &
sleep 0.3
(cd "$tmp/cwd" && "$ksim_abs" run "$q_abs" --quiet --db k.db >"$tmp/out" 2>"$tmp/err"); got=$?
[ "$got" -eq 2 ] || fail "a run into a locked folder: exit $got, expected 2"
grep -q "in use by another ksim run" "$tmp/err" || fail "the locked folder message ($(cat "$tmp/err"))"
[ -d "$first/broker-1" ] || fail "a refused run emptied the locked folder"
wait
[ "$(sqlite3 "$tmp/cwd/k.db" "select count(*) from runs")" = 3 ] || fail "a refused run was recorded"

# ---- dump-log: bounded memory, regular files only, the run folder from the database ------
mkdir "$tmp/big"
truncate -s 8G "$tmp/big/00000000000000000000.log"
(ulimit -v 262144; exec "$ksim" dump-log "$tmp/big/00000000000000000000.log") >"$tmp/out" 2>"$tmp/err"; got=$?
[ "$got" -eq 1 ] || fail "dump-log of an 8 GB sparse segment in 256 MiB: exit $got, expected 1 ($(head -c 200 "$tmp/err"))"
grep -q "Found 8589934592 invalid bytes" "$tmp/out" || fail "dump-log of an 8 GB segment names its invalid bytes"
rm -rf "$tmp/big"
ln -s /dev/zero "$tmp/00000000000000000000.log"
(ulimit -v 262144; exec timeout 20 "$ksim" dump-log "$tmp/00000000000000000000.log") >"$tmp/out" 2>"$tmp/err"; got=$?
[ "$got" -eq 2 ] || fail "dump-log of a symlink to /dev/zero: exit $got, expected 2"
grep -q "not a regular file" "$tmp/err" || fail "dump-log names a device as not a regular file"
rm -f "$tmp/00000000000000000000.log"
(cd "$tmp/cwd" && "$ksim_abs" dump-log --db k.db) >"$tmp/out" 2>"$tmp/err" || fail "dump-log --db lists the latest run's folder"
grep -q "^  broker-1/orders-0$" "$tmp/out" || fail "dump-log --db lists broker-1/orders-0 ($(head -3 "$tmp/out"))"
(cd "$tmp" && "$ksim_abs" dump-log --db cwd/k.db --run 1 broker-1/orders-0) >"$tmp/out" 2>"$tmp/err" ||
    fail "dump-log --db --run 1 PATH reads the run's folder from another folder"
grep -q "^Dumping $first/broker-1/orders-0/00000000000000000000.log$" "$tmp/out" || fail "dump-log --db dumps run 1's segment"
expect_code 2 "dump-log --db of a run without a folder" "$ksim" dump-log --db "$tmp/cwd/k.db" --run 99
expect_code 0 "a check run" "$ksim" check "$q" --db "$tmp/check.db"
expect_code 2 "dump-log --db of a check run" "$ksim" dump-log --db "$tmp/check.db"
grep -q "kept no run folder" "$tmp/err" || fail "dump-log says a check run kept no folder"

# ---- a passing run: text, quiet, json ------------------------------------------------------
expect_code 0 "quickstart" "$ksim" run "$q" --db "$db" --dir "$tmp/run" --trace "$tmp/trace.txt"
tail -n 1 "$tmp/out" | grep -q "^verdict: PASS" || fail "the last line is the verdict"
grep -q "^reproduce: ksim run $q --seed 1" "$tmp/out" || fail "the reproduce line"
grep -q "^\[ *[0-9]*\.[0-9][0-9][0-9]s\] fault kill-leader: crash broker" "$tmp/out" ||
    fail "the timeline shows the crash"
grep -q "^  acked_lost  *0$" "$tmp/out" || fail "the summary table shows acked_lost"
grep -q "^PASS acked_lost = 0 (actual 0)$" "$tmp/out" || fail "each expectation reads PASS expr (actual X)"
[ -s "$tmp/trace.txt" ] || fail "--trace wrote nothing"
[ -d "$tmp/run/broker-1" ] || fail "the run folder has broker-1/"

expect_code 0 "quickstart --quiet" "$ksim" run "$q" --quiet --db "$db" --dir "$tmp/run"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "--quiet prints one line"

expect_code 0 "quickstart --json" "$ksim" run "$q" --json --db "$db" --dir "$tmp/run"
cp "$tmp/out" "$tmp/a.json"
python3 - "$tmp/a.json" <<'EOF' || fail "--json is one JSON object with every metric"
import json, sys
d = json.load(open(sys.argv[1]))
names = """records_sent records_acked records_failed records_unknown acked_lost duplicates
reordered divergent_partitions consumed_lost consumed_unseen consumed_duplicates
leader_elections unclean_elections isr_shrinks isr_expands unavailable_ms
produce_unavailable_ms produce_p50_ms produce_p99_ms throughput_rps events trace_hash
scenario seed run_id verdict expectations anomalies""".split()
missing = [n for n in names if n not in d]
assert not missing, missing
assert isinstance(d["trace_hash"], str) and len(d["trace_hash"]) == 16
assert d["verdict"] == "PASS"
EOF

# ---- determinism: the same trace hash twice --------------------------------------------------
expect_code 0 "quickstart again" "$ksim" run "$q" --json --db "$tmp/other.db" --dir "$tmp/run2"
h1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["trace_hash"])' "$tmp/a.json" 2>/dev/null)
h2=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_hash"])' <"$tmp/out" 2>/dev/null)
[ -n "$h1" ] && [ "$h1" = "$h2" ] || fail "trace_hash differs between two runs ($h1 vs $h2)"

# ---- a failing expectation exits 1 ------------------------------------------------------------
expect_code 1 "failing expectation" "$ksim" run "$q" --set expect.records_acked=0 --quiet --db "$db" --dir "$tmp/run"
grep -q "^verdict: FAIL" "$tmp/out" || fail "the verdict says FAIL"

# ---- describe ----------------------------------------------------------------------------------
expect_code 0 "describe" "$ksim" describe "$db"
grep -q "^Topic: orders	PartitionCount: 3	ReplicationFactor: 3" "$tmp/out" || fail "describe topic line"
grep -q "^	Topic: orders	Partition: 0	Leader: [0-9]	Replicas: [0-9,]*	Isr: [0-9,]*	Elr: 	LastKnownElr: 	LEO: [0-9]*	HW: [0-9]*$" "$tmp/out" ||
    fail "describe partition line"
expect_code 0 "describe --at" "$ksim" describe "$db" --run 1 --at 5s
grep -q "^Run: 1	Scenario: quickstart	Seed: 1	Time: 5\.[0-9]*s	RunDir: $tmp/run$" "$tmp/out" ||
    fail "describe names the run, the sample time and the run folder ($(head -1 "$tmp/out"))"
for at in nan inf 0x10s 1e3 -1s 99999999999999999999s 9999999999999h ""; do
    expect_code 2 "describe --at '$at'" "$ksim" describe "$db" --at "$at"
done
expect_code 0 "describe --at a bare number of seconds" "$ksim" describe "$db" --at 12.5
grep -q "^Sample: 12\.[0-9]*s answers --at 12\.500s (the last sample at or before it; the next is at [0-9.]*s)$" "$tmp/out" ||
    fail "describe --at names the sample that answers ($(sed -n 2p "$tmp/out"))"
expect_code 0 "describe --at the crash" "$ksim" describe "$db" --run 1 --at 12s
grep -q "^	Topic: orders	Partition: 0	Leader: 2	Replicas: [0-9,]*	Isr: [0-9,]*	Elr: [0-9,]*	LastKnownElr: [0-9,]*	LEO: -	HW: -	Offline: 2$" "$tmp/out" ||
    fail "describe --at says the leader's broker is down ($(grep 'Partition: 0' "$tmp/out"))"
expect_code 2 "describe missing db" "$ksim" describe "$tmp/none.db"
[ -e "$tmp/none.db" ] && fail "describe created a database"

# ---- merge and plot refuse what they cannot use -------------------------------------------
expect_code 2 "merge with one input twice" "$ksim" merge "$tmp/m.db" "$db" "$db"
ln -s "$db" "$tmp/same-as-db.db"
expect_code 2 "merge with one input under two names" "$ksim" merge "$tmp/m.db" "$db" "$tmp/same-as-db.db"
[ -e "$tmp/m.db" ] && fail "a refused merge wrote its output"
cp "$db" "$tmp/noevents.db"
sqlite3 "$tmp/noevents.db" "drop table events" || fail "dropping events from a copy"
expect_code 2 "plot of a database without events" "$ksim" plot "$tmp/noevents.db" --kind throughput -o "$tmp/p.png"
[ -e "$tmp/p.png" ] && fail "plot of a database without events wrote a PNG"

# ---- plot: zoom, one partition, titles with --set ------------------------------------------------
expect_code 0 "plot --from --to" "$ksim" plot "$db" --run 1 --kind hw --from 9s --to 21s -o "$tmp/z.svg"
grep -q "LEO and HW of orders-0" "$tmp/z.svg" || fail "plot --kind hw --from/--to draws orders-0"
expect_code 0 "plot throughput of one partition" "$ksim" plot "$db" --run 1 --kind throughput \
    --partition orders-1 --from 5 --to 25 -o "$tmp/t.svg"
expect_code 2 "plot --from after --to" "$ksim" plot "$db" --kind hw --from 20s --to 10s -o "$tmp/e.svg"
expect_code 2 "plot --from with a sweep kind" "$ksim" plot "$db" --kind loss --from 1s -o "$tmp/e.svg"
expect_code 2 "plot --to that is no time" "$ksim" plot "$db" --kind hw --to soon -o "$tmp/e.svg"
[ -e "$tmp/e.svg" ] && fail "a refused plot wrote its output"
"$ksim" run "$q" --quiet --db "$tmp/set.db" --dir "$tmp/set-run" --set producer.p1.linger.ms=7 >/dev/null 2>&1
expect_code 0 "plot of a run with --set" "$ksim" plot "$tmp/set.db" --kind throughput -o "$tmp/s.svg"
grep -q "producer.p1.linger.ms=7" "$tmp/s.svg" || fail "the plot's title names the run's --set"

# ---- check ----------------------------------------------------------------------------------------
mkdir "$tmp/suite"
cp "$q" "$tmp/suite/a.ini"
sed 's/^records_acked = > 0$/records_acked = 0/' "$q" | sed 's/^name = quickstart$/name = quickstart-fails/' >"$tmp/suite/b.ini"
expect_code 1 "check with a failing scenario" "$ksim" check "$tmp/suite"
[ "$(tail -n 1 "$tmp/out")" = "1 passed, 1 failed" ] || fail "check's final line ($(tail -n 1 "$tmp/out"))"
grep -q "^PASS quickstart$" "$tmp/out" || fail "check prints PASS name"
grep -q "^FAIL quickstart-fails: records_acked = 0 (actual [0-9]*)$" "$tmp/out" || fail "check prints FAIL name: expr (actual X)"
expect_code 0 "check --seeds" "$ksim" check "$q" --seeds 1-2
[ "$(tail -n 1 "$tmp/out")" = "2 passed, 0 failed" ] || fail "check --seeds runs each seed"
expect_code 2 "check with a bad file" "$ksim" check "$q" "$tmp/bad.ini"

echo "cli: $count checks, $failures failed"
[ "$failures" -eq 0 ]
