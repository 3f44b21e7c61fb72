# ksim: a plain Makefile (no generated configure step).
#
#   make          build bin/ksim (installs missing Debian packages first, see deps)
#   make test     unit suites, the same suites under ASan+UBSan, dependency check,
#                 every scenario through `ksim check`, determinism, the report in a
#                 headless browser, bounded fuzzing
#   make demo     run scenarios/quickstart.ini and write its plots
#   make bench    benchmarks under tests/bench/, one BENCH line each, then the
#                 1,000-seed shard check (make shards-1000)
#   make docs     regenerate the documentation's excerpts and images (tests/docs.py);
#                 make docs-redraw also redraws the browser screenshots
#
# Sources are found by wildcard: core/*.c is the Kafka model, sim/*.c the world
# and the program (sim/main.c holds main), tests/{core,sim}/test_*.c the CUnit
# suites. Each test file defines `void ks_test_register_<name>(void)`; the
# runner's list is generated from those definitions, so adding a file is enough.

CC      ?= cc
PKGS     = glib-2.0 json-glib-1.0 sqlite3 cunit zlib liblz4 libzstd
DEBS     = libglib2.0-dev libjson-glib-dev libsqlite3-dev libcunit1-dev gnuplot-nox pkg-config \
           clang libclang-rt-14-dev parallel sqlite3 python3 \
           zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev \
           python3-lz4 python3-snappy python3-zstandard python3-crcmod chromium
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror
BASE     = -std=c11 -D_GNU_SOURCE $(WARN) -g
OPT     ?= -O2
# bin/ksim and the benchmarks are linked with link-time optimisation: the model's
# hot paths cross files (the broker calls the log, the log the disk, everyone the
# world), and inlining across them took 5 % of the instructions and more of the
# time (issue 16). The objects carry both GIMPLE and machine code
# (-ffat-lto-objects), so bin/ksim-tests links the same objects with -fno-lto,
# without the 40-60 CPU s of an LTO link. LTO= turns it off. Same events, same trace_hash:
# the flags change no arithmetic (no -ffast-math, C11 contracts no FMA).
LTO     ?= -flto=auto
LTO_OBJ  = $(if $(LTO),$(LTO) -ffat-lto-objects)
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# Snappy ships no .pc file on Debian 12: its C API header is checked by deps and
# the library linked by name. libsnappy.so is C++ but carries its own libstdc++
# dependency, so a C link needs no -lstdc++.
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lsnappy -lm
CFLAGS_ALL = $(BASE) $(OPT) $(PKG_CFLAGS) $(CFLAGS)
ifeq ($(DEBUG),1)
CFLAGS_ALL += -DKS_DEBUG=1
endif
# core/ also builds with -Wconversion (STYLE 3.9): the model's integer widths are deliberate.
CORE_WARN = $(if $(filter core/%,$<),-Wconversion)
SAN      = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

CORE_SRC = $(sort $(wildcard core/*.c))
SIM_SRC  = $(sort $(filter-out sim/main.c,$(wildcard sim/*.c)))
LIB_SRC  = $(CORE_SRC) $(SIM_SRC)
TEST_SRC = $(sort $(wildcard tests/core/test_*.c tests/sim/test_*.c)) tests/runner.c tests/testlib.c
BENCH_SRC = $(sort $(wildcard tests/bench/bench_*.c))
HDRS     = $(wildcard core/*.h sim/*.h tests/*.h tests/core/*.h tests/sim/*.h)

OBJ      = $(LIB_SRC:%.c=build/%.o)
TEST_OBJ = $(TEST_SRC:%.c=build/%.o)
ASAN_OBJ = $(LIB_SRC:%.c=build/asan/%.o) $(TEST_SRC:%.c=build/asan/%.o)
BENCH_BIN = $(BENCH_SRC:tests/bench/%.c=bin/bench/%)

.PHONY: all deps build test test-all unit unit-asan unit-asan-scenario unit-asan-rest check-deps scenarios scenarios-debug determinism golden cli report docs docs-check shards edges decode \
        fuzz fuzz-log fuzz-scenario demo demo-all bench bench-all bench-bins shards-1000 format clean

# The public targets install what is missing first, then run make again so
# that pkg-config's flags are read after the install.
all: deps
	@$(MAKE) --no-print-directory build
build: bin/ksim
# The checks run two at a time (the machine CI uses has two cores), each one's output
# printed in one piece when it ends (--output-sync), the longest first so that the
# two lanes end together. Every check works in its own mktemp folder, so any two can
# run side by side. Their temporary folders go to /dev/shm when it is writable
# (TEST_TMPDIR): the unit tests and the scripts create thousands of run folders and
# SQLite databases, and on a disk file system the kernel's file creation and SQLite's
# syncs cost more wall time than the runs (the release unit tests: 34 s on tmpfs,
# 195 s on this machine's ext4 under load). The files are as real on tmpfs.
TEST_TMPDIR = $$( [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "$${TMPDIR:-/tmp}" )
test: deps
	@TMPDIR=$(TEST_TMPDIR) $(MAKE) --no-print-directory -j2 --output-sync=target test-all
demo: deps
	@$(MAKE) --no-print-directory demo-all
bench: deps
	@$(MAKE) --no-print-directory bench-all

# ---- dependencies ------------------------------------------------------------
# Checks with pkg-config and command -v; installs as root, else prints the command.
deps:
	@missing=""; \
	command -v pkg-config >/dev/null 2>&1 || missing="pkg-config"; \
	for p in $(PKGS); do pkg-config --exists $$p 2>/dev/null || missing="$$missing $$p"; done; \
	command -v gnuplot >/dev/null 2>&1 || missing="$$missing gnuplot"; \
	command -v clang >/dev/null 2>&1 || missing="$$missing clang"; \
	ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
	  || ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer*.a >/dev/null 2>&1 \
	  || missing="$$missing libclang-rt (libFuzzer)"; \
	command -v parallel >/dev/null 2>&1 || missing="$$missing parallel"; \
	command -v sqlite3 >/dev/null 2>&1 || missing="$$missing sqlite3"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	[ -f /usr/include/snappy-c.h ] || missing="$$missing snappy-c.h"; \
	{ python3 -c 'import lz4.frame, snappy, zstandard, crcmod' || /usr/bin/python3 -c 'import lz4.frame, snappy, zstandard, crcmod'; } \
	  >/dev/null 2>&1 || missing="$$missing python3-lz4/python3-snappy/python3-zstandard/python3-crcmod"; \
	if [ -n "$$missing" ]; then \
	  echo "ksim: missing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEBS)) || exit 1; \
	  else \
	    echo "ksim: run as root: apt-get update && apt-get install -y $(DEBS)"; exit 1; \
	  fi; \
	fi

# ---- the program ---------------------------------------------------------------
bin/ksim: $(OBJ) build/sim/main.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LTO) -o $@ $^ $(PKG_LIBS)

build/%.o: %.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LTO_OBJ) $(CORE_WARN) -c -o $@ $<

build/debug/%.o: %.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(CORE_WARN) -DKS_DEBUG=1 -c -o $@ $<

# bin/ksim with the whole-object checks after every event (STYLE 3.7; make DEBUG=1
# builds the same checks into bin/ksim itself).
bin/ksim-debug: $(LIB_SRC:%.c=build/debug/%.o) build/debug/sim/main.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(PKG_LIBS)

build/asan/%.o: %.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O1 $(SAN) $(CORE_WARN) $(PKG_CFLAGS) -Ibuild -c -o $@ $<

# ---- unit tests ----------------------------------------------------------------
build/suites.h: $(filter tests/core/% tests/sim/%,$(TEST_SRC))
	@mkdir -p build
	@{ for f in $^; do grep -ho '^void ks_test_register_[a-z0-9_]*(void)' $$f || true; done; } \
	  | sed 's/^void \(.*\)(void)/KS_SUITE(\1)/' > $@.tmp && mv $@.tmp $@

build/tests/runner.o: build/suites.h
build/asan/tests/runner.o: build/suites.h
build/tests/runner.o: CFLAGS += -Ibuild

bin/ksim-tests: $(OBJ) $(TEST_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(if $(LTO),-fno-lto) -o $@ $^ $(PKG_LIBS)

bin/ksim-tests-asan: $(ASAN_OBJ)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O1 $(SAN) -o $@ $^ $(PKG_LIBS)

unit: bin/ksim-tests
	TMPDIR=$(TEST_TMPDIR) bin/ksim-tests

# In two halves that make test runs side by side: sim/scenario (every key at its
# extremes, each run under the sanitizers; the most partitions are only loaded)
# and everything else. Their temporary folders go to /dev/shm when it is
# writable: creating that many replica folders on a disk file system costs
# the kernel more than the run.
ASAN_RUN = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TMPDIR=$(TEST_TMPDIR)
unit-asan: unit-asan-scenario unit-asan-rest
unit-asan-scenario: bin/ksim-tests-asan
	$(ASAN_RUN) bin/ksim-tests-asan sim/scenario
unit-asan-rest: bin/ksim-tests-asan
	$(ASAN_RUN) bin/ksim-tests-asan --except sim/scenario

# core/ includes nothing from sim/ (STYLE 3.2): the seam is core/world.h.
check-deps:
	@if grep -n '#include *"[^"]*sim/' core/*.c core/*.h; then \
	  echo "check-deps: core/ must not include sim/"; exit 1; else echo "check-deps: ok"; fi

scenarios: bin/ksim
	@mkdir -p build/test && rm -f build/test/scenarios.db
	bin/ksim check scenarios --db build/test/scenarios.db

# Every scenario again with the invariant checks after every event.
scenarios-debug: bin/ksim-debug
	@mkdir -p build/test && rm -f build/test/scenarios-debug.db
	bin/ksim-debug check scenarios --db build/test/scenarios-debug.db

# Same seed, same trace: the two runs of every scenario above (two processes,
# two builds) must give one trace_hash; and different seeds, different timing
# (tests/seeds.sh).
determinism: scenarios scenarios-debug bin/ksim
	sh tests/determinism.sh build/test/scenarios.db build/test/scenarios-debug.db
	sh tests/seeds.sh

golden: bin/ksim
	sh tests/golden.sh

# Segment files read back by an independent decoder (tests/decode_segments.py).
decode: bin/ksim
	sh tests/decode.sh

# The built program as a user runs it: exit codes, --json, --quiet, check, describe,
# list and compare; every query of docs/database.md on a database of real runs; and
# the cause named for every lost range of every lossy scenario.
cli: bin/ksim
	sh tests/cli.sh
	sh tests/inspect.sh
	sh tests/database.sh
	sh tests/causes.sh

# `ksim report` pages in a real browser: headless Chromium opens one, clicks through
# its steps (the page's #selftest) and renders a screenshot (tests/report.sh).
report: bin/ksim
	sh tests/report.sh

# The documentation's excerpts and images (README.md, docs/tutorial.md, docs/model.md)
# are made by commands marked in the Markdown (tests/docs.py): `make docs` regenerates
# them, `make docs-check` (part of make test) fails when one differs from what ksim
# prints now.
docs: bin/ksim
	python3 tests/docs.py --update
# The same, and the browser screenshots redrawn too (make docs keeps them).
docs-redraw: bin/ksim
	python3 tests/docs.py --redraw
docs-check: bin/ksim
	python3 tests/docs.py

# Sweeps split into shards by GNU parallel and merged equal the unsharded sweep;
# explore finds a weak setting and its reproducer fails again.
shards: bin/ksim
	sh tests/shards.sh
	sh tests/explore.sh
# The same check at 1,000 seeds in 10 shards (a few minutes; make bench runs it).
shards-1000: bin/ksim
	sh tests/shards.sh bin/ksim 1000

# The program's edges: signals to sweep/explore stop their workers and remove their
# temporary folders; a full disk is an I/O error naming the path, never an assertion.
edges: bin/ksim
	sh tests/signals.sh
	sh tests/diskfull.sh

# Bounded libFuzzer runs (needs clang): the batch decoder and log recovery
# (fuzz-log), the scenario parser with --set, finalize and the write_ini
# round trip (fuzz-scenario); make fuzz runs both side by side.
fuzz: $(OBJ)
	sh tests/fuzz/run.sh
fuzz-log: $(OBJ)
	sh tests/fuzz/run.sh fuzz_log
fuzz-scenario: $(OBJ)
	sh tests/fuzz/run.sh fuzz_scenario

test-all: unit-asan-scenario unit-asan-rest scenarios-debug cli scenarios docs-check determinism decode unit shards fuzz report edges golden check-deps
	@echo "make test: all passed"

# ---- demo ------------------------------------------------------------------------
demo-all: bin/ksim
	rm -f demo.db
	bin/ksim run scenarios/quickstart.ini --db demo.db
	bin/ksim plot demo.db --kind throughput -o demo-throughput.png
	bin/ksim plot demo.db --kind isr -o demo-isr.png
	@echo "demo: wrote demo-throughput.png and demo-isr.png"

# ---- benchmarks --------------------------------------------------------------------
# The library is compiled once for all the benchmarks, always at -O2 with LTO as
# bin/ksim whatever OPT or DEBUG say (build/bench/), two files at a time; then the
# benchmarks run one after another, alone.
BENCH_OBJ = $(LIB_SRC:%.c=build/bench/%.o)
# Named only by a pattern rule, the objects would be intermediate files that make
# deletes after linking, so every benchmark rebuild compiled the library again.
.SECONDARY: $(BENCH_OBJ)
build/bench/%.o: %.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O2 $(LTO) $(PKG_CFLAGS) -c -o $@ $<

bin/bench/%: tests/bench/%.c $(BENCH_OBJ) $(HDRS) $(wildcard tests/bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O2 $(LTO) $(PKG_CFLAGS) -o $@ $< $(BENCH_OBJ) $(PKG_LIBS)

bench-bins: $(BENCH_BIN)
	@:
bench-all: bin/ksim
	@$(MAKE) --no-print-directory -j2 bench-bins
	@for b in $(BENCH_BIN); do $$b || exit 1; done
	sh tests/shards.sh bin/ksim 1000

# Formats every C file with the committed .clang-format (run before committing).
FORMAT_SRC = $(wildcard core/*.[ch] sim/*.[ch] tests/*.[ch] tests/core/*.[ch] tests/sim/*.[ch] \
                        tests/bench/*.c tests/fuzz/*.c)
format:
	clang-format -i $(FORMAT_SRC)

clean:
	rm -rf build bin runs ksim.db demo.db demo-*.png
