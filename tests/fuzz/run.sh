#!/bin/sh
# Bounded libFuzzer runs (make fuzz, make fuzz-log, make fuzz-scenario).
#
#   sh tests/fuzz/run.sh [TARGET...]     TARGET: fuzz_log, fuzz_scenario (default: all)
#
# The files of core/ and sim/ that the targets use are compiled once with
# clang -fsanitize=fuzzer-no-link,address,undefined into bin/fuzz/obj/ (again
# only when a source or header changed), and each tests/fuzz/fuzz_*.c is
# linked with them. Which files a target uses is read from the linker: the
# target is linked once against an archive of the release build's objects
# (build/core, build/sim: make builds them first), and the members the
# linker's map says it pulled in are the ones compiled. That is about 40 of
# the library's 57 files (not sim/run.c, the plots, the report): the
# sanitized compile was more than half of make fuzz's CPU time. Without the
# release objects (or with KS_FUZZ_ALL=1) every file is compiled.
# Every target runs for a fixed number of inputs from a fixed seed, so the
# run is bounded and repeatable; the targets run side by side (the machine
# has two cores). A target's seed corpus, tests/fuzz/NAME-corpus/, is read but
# never written; what libFuzzer finds goes to bin/fuzz/NAME-corpus/.
# Inputs per target: KS_FUZZ_RUNS overrides both; fuzz_log 200000 (about 40
# CPU seconds, half of it the kernel's, on tmpfs) and fuzz_scenario 60000
# (about 90) by default.
set -eu
if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz: clang not found; skipped (apt-get install -y clang)"
    exit 0
fi
mkdir -p bin/fuzz/obj
pkgs="glib-2.0 json-glib-1.0 sqlite3 zlib liblz4 libzstd"
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=address,undefined $(pkg-config --cflags $pkgs)"
libs="$(pkg-config --libs $pkgs) -lsnappy -lm"

if [ $# -eq 0 ]; then
    set -- $(ls tests/fuzz/fuzz_*.c | sed 's|.*/||; s|\.c$||')
fi

# The library files the targets use: the archive's members are named
# core_X.o and sim_X.o (core/world.c and sim/world.c share a base name).
sources=$(ls core/*.c sim/*.c | grep -v "^sim/main.c$")
needed=""
if [ -z "${KS_FUZZ_ALL:-}" ]; then
    scratch=$(mktemp -d)
    for src in $sources; do
        obj="build/$(echo "$src" | sed 's/\.c$/.o/')"
        [ -e "$obj" ] && [ ! "$src" -nt "$obj" ] || { needed=""; scratch_bad=1; break; }
        ln -s "$PWD/$obj" "$scratch/$(echo "$src" | tr / _ | sed 's/\.c$/.o/')"
    done
    if [ -z "${scratch_bad:-}" ] && ar rcs "$scratch/lib.a" "$scratch"/*.o; then
        for name in "$@"; do
            clang $flags -fsanitize=fuzzer -o "$scratch/$name" "tests/fuzz/$name.c" "$scratch/lib.a" $libs \
                -Wl,-Map="$scratch/$name.map" >/dev/null 2>&1 || { needed=""; break; }
            needed="$needed $(sed -n 's|.*lib\.a(\([a-z0-9_]*\)\.o).*|\1|p' "$scratch/$name.map")"
        done
    fi
    rm -rf "$scratch"
fi
if [ -n "$needed" ]; then
    sources=$(for n in $needed; do echo "$n"; done | sort -u | sed -e 's#^core_#core/#' -e 's#^sim_#sim/#' -e 's#$#.c#')
fi

# The library, once, two compilers at a time.
newest_header=$(ls -t core/*.h sim/*.h | head -1)
for src in $sources; do
    obj="bin/fuzz/obj/$(echo "$src" | tr / _ | sed 's/\.c$/.o/')"
    if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
        echo "$src $obj"
    fi
done | xargs -r -n 2 -P 2 sh -c \
    "clang $flags -fsanitize=fuzzer-no-link -c -o \"\$1\" \"\$0\"" || exit 1

pids=""
for name in "$@"; do
    src="tests/fuzz/$name.c"
    [ -e "$src" ] || { echo "fuzz: no $src"; exit 1; }
    clang $flags -fsanitize=fuzzer -o "bin/fuzz/$name" "$src" \
        $(for f in $sources; do echo "bin/fuzz/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"; done) $libs
    case "$name" in
        fuzz_scenario) runs=${KS_FUZZ_RUNS:-60000} ;;
        *) runs=${KS_FUZZ_RUNS:-200000} ;;
    esac
    corpus="bin/fuzz/$name-corpus"
    mkdir -p "$corpus"
    seeds=""
    [ -d "tests/fuzz/$name-corpus" ] && seeds="tests/fuzz/$name-corpus"
    (
        if "bin/fuzz/$name" -seed=1 -runs="$runs" -max_len=4096 "$corpus" $seeds \
            >"bin/fuzz/$name.log" 2>&1; then
            echo "fuzz: $name ok ($runs inputs, $(grep -c . "bin/fuzz/$name.log") log lines)"
        else
            tail -40 "bin/fuzz/$name.log"
            echo "fuzz: $name FAILED (bin/fuzz/$name.log)"
            exit 1
        fi
    ) &
    pids="$pids $!"
done
status=0
for pid in $pids; do
    wait "$pid" || status=1
done
exit $status
