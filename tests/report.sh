#!/bin/sh
# `ksim report` and `ksim run --report` write one self-contained page, and a
# real browser shows what it should: Debian's Chromium, headless, opens the
# page of KIP-101 scenario 1 (high-watermark truncation) as
# FILE.html#selftest, where the page's own script clicks Next, Previous and a
# timeline line's "logs" button and writes what it saw into the page;
# --dump-dom returns it. Checked: the drawing and its replica rows exist, the
# epoch segments and HW marks are drawn, Next and Previous move the step and
# the timeline follows, a timeline button opens its step, the truncation is
# drawn, the lost records are highlighted, the plots are embedded, and
# neither the script nor the console reported an error. A screenshot is
# rendered too (its size is checked; look at it with REPORT_SHOT=FILE.png).
# Bad input (a bad -o, no such run, not a database) is exit 2 and writes
# nothing; the page loads nothing from elsewhere.
set -u
ksim=${KSIM:-bin/ksim}
[ -x "$ksim" ] || { echo "report: $ksim is not built"; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "report: chromium is missing (make deps installs it)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0
fail() {
    echo "report: FAIL $*"
    failures=$((failures + 1))
}
check() { # check DESCRIPTION COMMAND...
    what=$1
    shift
    checks=$((checks + 1))
    "$@" >/dev/null 2>&1 || fail "$what"
}
expect_code() { # expect_code CODE DESCRIPTION COMMAND...
    want=$1
    what=$2
    shift 2
    checks=$((checks + 1))
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$want" ] || { fail "$what: exit $got, expected $want"; sed 's/^/    /' "$tmp/err" | head -5; }
}
chrome() { # chrome ARGS...: headless, offline, a fresh profile each time
    rm -rf "$tmp/profile"
    mkdir "$tmp/profile"
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$tmp/profile" "$@"
}

db=$tmp/r.db
page=$tmp/kip101.html
expect_code 0 "ksim run --report" "$ksim" run scenarios/kip101-scenario1-hw.ini --quiet \
    --db "$db" --dir "$tmp/run" --report "$page"
check "run --report wrote the page" test -s "$page"
expect_code 0 "ksim report" "$ksim" report "$db" --run 1 -o "$tmp/again.html"
check "ksim report writes the page run --report wrote" cmp "$page" "$tmp/again.html"

# ---- bad input writes nothing -----------------------------------------------------------------
expect_code 2 "report -o without .html" "$ksim" report "$db" -o "$tmp/page.txt"
check "nothing written for a bad -o" test ! -e "$tmp/page.txt"
expect_code 2 "report into a missing folder" "$ksim" report "$db" -o "$tmp/none/page.html"
expect_code 2 "report of a missing run" "$ksim" report "$db" --run 9 -o "$tmp/nine.html"
check "nothing written for a missing run" test ! -e "$tmp/nine.html"
echo "not a database" >"$tmp/junk.db"
expect_code 2 "report of a file that is not a database" "$ksim" report "$tmp/junk.db" \
    -o "$tmp/junk.html"
check "nothing written for a foreign file" test ! -e "$tmp/junk.html"
expect_code 2 "report without -o" "$ksim" report "$db"
runs_before=$(sqlite3 "$db" "SELECT count(*) FROM runs")
expect_code 2 "run --report into a missing folder" "$ksim" run scenarios/quickstart.ini --quiet \
    --db "$db" --dir "$tmp/run2" --report "$tmp/none/q.html"
check "run --report with a bad page records no run" \
    test "$(sqlite3 "$db" "SELECT count(*) FROM runs")" = "$runs_before"
check "run --report with a bad page made no run folder" test ! -e "$tmp/run2"

# ---- self-contained ----------------------------------------------------------------------------
check "no external script, style or image" sh -c "! grep -Eiq '<script[^>]+src=|<link |@import|(src|href)=\"(https?:)?//' '$page'"
check "the drawing's data is in the page" grep -q 'id="ksim-data"' "$page"
check "the plots are embedded" grep -q 'src="data:image/svg+xml;base64,' "$page"

# ---- in a browser ------------------------------------------------------------------------------
chrome --enable-logging=stderr --v=0 --virtual-time-budget=10000 \
    --dump-dom "file://$page#selftest" >"$tmp/dom.html" 2>"$tmp/chrome.err"
sed -n '/<pre id="selftest"/,/<\/pre>/p' "$tmp/dom.html" | sed 's/<[^>]*>//g' >"$tmp/selftest"
value() { sed -n "s/^$1=//p" "$tmp/selftest" | head -n 1; }
at_least() { # at_least NAME MIN
    checks=$((checks + 1))
    v=$(value "$1")
    case "$v" in
        '' | *[!0-9]*) fail "the page reports $1='$v'" ;;
        *) [ "$v" -ge "$2" ] || fail "the page reports $1=$v, expected at least $2" ;;
    esac
}
equals() { # equals NAME VALUE
    checks=$((checks + 1))
    [ "$(value "$1")" = "$2" ] || fail "the page reports $1='$(value "$1")', expected $2"
}
if [ ! -s "$tmp/selftest" ]; then
    fail "the browser's page has no self-test output"
    sed 's/^/    /' "$tmp/chrome.err" | grep -v dbus | head -10
fi
at_least drawings 1
at_least replica_rows 2
at_least segments 1
at_least hw_marks 1
equals next ok
equals prev ok
equals timeline_marked ok
at_least timeline_links 5
equals timeline_click ok
at_least dropped_drawn 1
at_least lost_bands 1
at_least plots 3
equals errors 0
checks=$((checks + 1))
if grep 'CONSOLE' "$tmp/chrome.err" >"$tmp/console"; then
    fail "the browser's console reported:"
    sed 's/^/    /' "$tmp/console" | head -5
fi

# A screenshot of the step where broker 2 truncates to its high watermark.
step=$(sqlite3 "$db" "SELECT min(event_id) FROM events WHERE run_id = 1 AND kind = 'truncation'")
shot=${REPORT_SHOT:-$tmp/shot.png}
chrome --hide-scrollbars --window-size=1280,1500 --screenshot="$shot" "file://$page#show-$step" \
    >/dev/null 2>&1
checks=$((checks + 1))
bytes=$(wc -c <"$shot" 2>/dev/null || echo 0)
[ "$bytes" -gt 50000 ] || fail "the screenshot is $bytes bytes (a blank page?)"

echo "report: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
