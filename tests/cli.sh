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

# ---- help and bad options -----------------------------------------------------------
expect_code 0 "--help" "$ksim" --help
grep -q "usage: ksim" "$tmp/out" || fail "--help prints the usage"
expect_code 0 "run --help" "$ksim" run --help
grep -q "Examples" "$tmp/out" || fail "run --help shows examples"
expect_code 2 "unknown command" "$ksim" frobnicate
expect_code 0 "--version" "$ksim" --version
grep -q "^ksim [0-9][0-9.]* .*Kafka 4\.0" "$tmp/out" || fail "--version names ksim's and Kafka's versions"
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
planned="list compare report"   # SPEC 1 commands that later issues add
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
reordered divergent_partitions consumed_lost consumed_duplicates leader_elections
unclean_elections isr_shrinks isr_expands unavailable_ms produce_p50_ms produce_p99_ms
throughput_rps events trace_hash scenario seed run_id verdict expectations""".split()
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
grep -q "^	Topic: orders	Partition: 0	Leader: [0-9]	Replicas: [0-9,]*	Isr: [0-9,]*	LEO: [0-9]*	HW: [0-9]*$" "$tmp/out" ||
    fail "describe partition line"
expect_code 0 "describe --at" "$ksim" describe "$db" --run 1 --at 5s
expect_code 2 "describe missing db" "$ksim" describe "$tmp/none.db"
[ -e "$tmp/none.db" ] && fail "describe created a database"

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
