#!/bin/sh
# Bounded libFuzzer runs (make fuzz-log): each tests/fuzz/fuzz_*.c is built with
# clang -fsanitize=fuzzer,address,undefined together with core/ and sim/ (less
# sim/main.c, so recovery can run on the simulated disk) and run for a
# fixed number of inputs from a fixed seed, so the run is bounded and repeatable.
set -eu
if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz-log: clang not found; skipped (apt-get install -y clang)"
    exit 0
fi
mkdir -p bin/fuzz
pkgs="glib-2.0 json-glib-1.0 sqlite3 zlib liblz4 libzstd"
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined $(pkg-config --cflags $pkgs)"
libs="$(pkg-config --libs $pkgs) -lsnappy -lm"
lib_src=$(ls core/*.c sim/*.c | grep -v "^sim/main.c$")
for src in tests/fuzz/fuzz_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    clang $flags -o "bin/fuzz/$name" "$src" $lib_src $libs
    corpus="bin/fuzz/$name-corpus"
    mkdir -p "$corpus"
    "bin/fuzz/$name" -seed=1 -runs="${KS_FUZZ_RUNS:-200000}" -max_len=4096 "$corpus" 2>"bin/fuzz/$name.log" \
        || { tail -40 "bin/fuzz/$name.log"; exit 1; }
    echo "fuzz-log: $name ok ($(grep -c . "bin/fuzz/$name.log") log lines)"
done
