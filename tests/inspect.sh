#!/bin/sh
# `ksim list` and `ksim compare` as a user runs them (SPEC section 1): list
# prints a header and one line per run (with the sweep setting when there is
# one); compare names the settings that differ by their --set names, puts
# every metric side by side with the change, and counts anomalies per kind;
# bad input (no database, a foreign one, an unknown run, wrong arguments)
# exits 2 and creates or changes nothing. Everything under a temporary folder.
set -u
ksim=${KSIM:-bin/ksim}
[ -x "$ksim" ] || { echo "inspect: $ksim is not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
count=0
fail() {
    echo "inspect: FAIL $*"
    failures=$((failures + 1))
}
check() { # check DESCRIPTION COMMAND...: the command must succeed
    what=$1; shift
    count=$((count + 1))
    "$@" || fail "$what"
}
expect_code() {
    want=$1; what=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    count=$((count + 1))
    [ "$got" -eq "$want" ] || { fail "$what: exit $got, expected $want"; sed 's/^/    /' "$tmp/err" | head -5; }
}

lossy=tests/lossy.ini # acks=1, slow followers, the leader crashes: records are lost
db=$tmp/ab.db
expect_code 0 "run A" "$ksim" run "$lossy" --quiet --db "$db" --dir "$tmp/run"
expect_code 0 "run B" "$ksim" run "$lossy" --quiet --set producer.p1.acks=all --set cluster.min.insync.replicas=2 --db "$db" --dir "$tmp/run"

# ---- list ----------------------------------------------------------------------------
expect_code 0 "list" "$ksim" list "$db"
check "list header" grep -q "^run  *scenario  *seed  *verdict  *acked_lost  *duplicates  *consumed_lost  *unavailable_ms  *produce_unavailable_ms$" "$tmp/out"
check "list has two runs" [ "$(wc -l <"$tmp/out")" -eq 3 ]
check "list line of run 1" grep -q "^1  *lossy  *5  *PASS  *[1-9][0-9]* " "$tmp/out"
check "list line of run 2" grep -q "^2  *lossy  *5  *PASS  *0 " "$tmp/out"
expect_code 0 "list --help" "$ksim" list --help
check "list --help has examples" grep -q "Examples" "$tmp/out"

# ---- compare -------------------------------------------------------------------------
expect_code 0 "compare" "$ksim" compare "$db" 1 2
check "compare heads" grep -q "^run A: 1 (lossy, seed 5, PASS)$" "$tmp/out"
check "compare names acks as --set does" grep -q "^  producer.p1.acks  *1  *all$" "$tmp/out"
check "compare names the cluster setting" grep -q "^  cluster.min.insync.replicas  *1  *2$" "$tmp/out"
check "compare has no equal setting" sh -c "! grep -q '^  cluster.brokers ' '$tmp/out'"
check "compare shows acked_lost with its change" grep -q "^  acked_lost  *[1-9][0-9]*  *0  *-[1-9][0-9]*$" "$tmp/out"
check "compare shows every metric" [ "$(sed -n '/^metrics:/,/^$/p' "$tmp/out" | grep -c '^  [a-z]')" -ge 23 ]
check "compare counts lost records" grep -q "^  lost  *[1-9][0-9]*  *0  *-[1-9][0-9]*$" "$tmp/out"
lost=$(sqlite3 "$db" "select value from summary where run_id = 1 and metric = 'acked_lost'")
check "compare's lost count is acked_lost" grep -q "^  lost  *$lost " "$tmp/out"
expect_code 0 "compare a run with itself" "$ksim" compare "$db" 2 2
check "same run: no differing setting" grep -q "(none: same settings and seed)" "$tmp/out"
expect_code 0 "compare --help" "$ksim" compare --help

# ---- describe: the availability lines --------------------------------------------------
expect_code 0 "describe" "$ksim" describe "$db" --run 1
unavailable=$(sqlite3 "$db" "select value from summary where run_id = 1 and metric = 'unavailable_ms'")
produce=$(sqlite3 "$db" "select value from summary where run_id = 1 and metric = 'produce_unavailable_ms'")
check "describe sums both views as the summary does" grep -q "^Availability up to [0-9.]*s: unavailable_ms $unavailable (the cluster's view.*produce_unavailable_ms $produce (the clients' view" "$tmp/out"
check "describe has a line per partition" grep -q "^	Partition: orders-0	UnavailableMs: $unavailable	ProduceUnavailableMs: $produce	At: available$" "$tmp/out"
expect_code 0 "describe --at the crash" "$ksim" describe "$db" --run 1 --at 1500ms
check "describe --at says why orders-0 is unavailable" grep -q "^	Partition: orders-0	UnavailableMs: [1-9][0-9]*	ProduceUnavailableMs: [0-9]*	At: unavailable (leader_[a-z_]*)" "$tmp/out"

# ---- bad input -------------------------------------------------------------------------
expect_code 2 "list: no database" "$ksim" list "$tmp/none.db"
check "list created no database" [ ! -e "$tmp/none.db" ]
expect_code 2 "list: two arguments" "$ksim" list "$db" extra
expect_code 2 "compare: unknown run" "$ksim" compare "$db" 1 7
check "compare names the missing run" grep -q "no run with id 7" "$tmp/err"
expect_code 2 "compare: not a run id" "$ksim" compare "$db" 1 x
expect_code 2 "compare: too few arguments" "$ksim" compare "$db" 1
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()" "$tmp/foreign.db"
cp "$tmp/foreign.db" "$tmp/foreign.copy"
expect_code 2 "list: foreign database" "$ksim" list "$tmp/foreign.db"
check "foreign database unchanged" cmp -s "$tmp/foreign.db" "$tmp/foreign.copy"

# ---- a sweep shows its setting --------------------------------------------------------
expect_code 0 "sweep" "$ksim" sweep "$lossy" --vary producer.p1.acks=1,all --seeds 1-1 --db "$tmp/sweep.db"
expect_code 0 "list a sweep" "$ksim" list "$tmp/sweep.db"
check "sweep list has a setting column" grep -q "  setting$" "$tmp/out"
check "sweep list names the setting" grep -q "producer.p1.acks=all" "$tmp/out"

echo "inspect: $count checks, $failures failed"
[ "$failures" -eq 0 ]
