#!/bin/sh
# Stopping sweep and explore (issue 12, item 7): SIGTERM or SIGINT to the
# parent stops its workers at once and removes its temporary folders, the
# exit status is the signal's; a parent killed with SIGKILL takes its workers
# with it (PR_SET_PDEATHSIG), and the folders it could not remove are removed
# by the next sweep. Temporary folders go to a private TMPDIR and
# KSIM_RUN_TMPDIR, so that the test sees exactly what ksim leaves.
set -u
ksim=${KSIM:-bin/ksim}
[ -x "$ksim" ] || { echo "signals: $ksim is not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
count=0
fail() {
    echo "signals: FAIL $*"
    failures=$((failures + 1))
}

q=scenarios/quickstart.ini
mkdir "$tmp/t" "$tmp/shm"
export TMPDIR="$tmp/t" KSIM_RUN_TMPDIR="$tmp/shm"

# The worker processes of PID (its children).
workers() {
    ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' '
}
# Waits until PID has N children or 20 s pass.
wait_workers() {
    i=0
    while [ "$(workers "$1" | wc -l)" -lt "$2" ] && [ $i -lt 200 ]; do
        sleep 0.1; i=$((i + 1))
    done
}
# Waits until none of the given pids is alive or 10 s pass; true if all are gone.
all_gone() {
    i=0
    while [ $i -lt 100 ]; do
        alive=0
        for p in "$@"; do
            # A zombie (state Z) is gone for this purpose: it runs nothing.
            state=$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)
            [ -n "$state" ] && [ "$state" != Z ] && alive=1
        done
        [ $alive -eq 0 ] && return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
leftovers() {
    ls -A "$tmp/t" "$tmp/shm" | grep -c 'ksim-'
}

# Runs "$@" with SIGINT at its default action (a shell starts background
# jobs with SIGINT ignored, and ksim keeps an ignored signal ignored). Both
# the shell and python exec, so that $! of `with_sigint ... &` is ksim's pid.
with_sigint() {
    exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

for sig in TERM INT; do
    for command in sweep explore; do
        rm -f "$tmp/$command.db"
        if [ "$command" = sweep ]; then
            with_sigint "$ksim" sweep "$q" --vary producer.p1.acks=1,all --seeds 1-40 --jobs 2 \
                --db "$tmp/$command.db" >"$tmp/out" 2>"$tmp/err" &
        else
            with_sigint "$ksim" explore "$q" --seeds 1-40 --jobs 2 --db "$tmp/$command.db" \
                --out "$tmp/repro" >"$tmp/out" 2>"$tmp/err" &
        fi
        pid=$!
        wait_workers "$pid" 2
        kids=$(workers "$pid")
        [ -n "$kids" ] || fail "$command: no workers started"
        [ "$(leftovers)" -ge 1 ] || fail "$command: no temporary folder while running"
        kill -s "$sig" "$pid"
        wait "$pid" 2>/dev/null; code=$?
        count=$((count + 1))
        # shellcheck disable=SC2086
        all_gone $kids || fail "$command: SIG$sig left workers running ($kids)"
        case $sig in
            TERM) [ "$code" -eq 143 ] || fail "$command: SIGTERM exit $code, expected 143" ;;
            INT) [ "$code" -eq 130 ] || fail "$command: SIGINT exit $code, expected 130" ;;
        esac
        [ "$(leftovers)" -eq 0 ] || fail "$command: SIG$sig left temporary folders: $(ls -A "$tmp/t" "$tmp/shm")"
        grep -q "stopped by signal" "$tmp/err" || fail "$command: SIG$sig: no message ($(tail -2 "$tmp/err"))"
        sleep 1
        n=$(ls "$tmp/repro" 2>/dev/null | wc -l)
        sleep 1
        [ "$(ls "$tmp/repro" 2>/dev/null | wc -l)" -eq "$n" ] || fail "$command: reproducers still being written"
    done
done

# SIGKILL: the parent cannot clean up, but its workers die with it, and the
# next sweep removes the folders it left (their lock died with it).
"$ksim" sweep "$q" --vary producer.p1.acks=1,all --seeds 1-40 --jobs 2 --db "$tmp/kill.db" \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_workers "$pid" 2
kids=$(workers "$pid")
[ -n "$kids" ] || fail "kill -9: no workers started"
kill -9 "$pid"
wait "$pid" 2>/dev/null
count=$((count + 1))
# shellcheck disable=SC2086
all_gone $kids || fail "kill -9 of the parent left its workers running ($kids)"
[ "$(leftovers)" -ge 1 ] || fail "kill -9: expected the parent's folders to be left (else this test tests nothing)"
"$ksim" sweep "$q" --vary producer.p1.acks=all --seeds 1 --db "$tmp/next.db" >/dev/null 2>&1 ||
    fail "a sweep after kill -9"
[ "$(leftovers)" -eq 0 ] || fail "the next sweep did not remove the folders of the killed one: $(ls -A "$tmp/t" "$tmp/shm")"

echo "signals: $count checks, $failures failed"
[ "$failures" -eq 0 ]
