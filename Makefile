# ai-scheduler — build, test, demo, bench.
#   make            bin/ai-scheduler (and bin/kubectl-pool, bin/kubectl-queue)
#   make test       unit tests (plain, ASan+UBSan, TSan) and the e2e suite on a real kube-apiserver
#   make demo       local control plane + scheduler + examples/, prints where pods landed
#   make bench      ai-scheduler vs kube-scheduler on the same API server
#   make bench-reservation  a 32-GPU gang behind a stream of small jobs, with and without reservations
#   make bench-simulate     ai-scheduler simulate on 10,000 nodes and 100,000 pods (test/simulate/gen.py)
#   make fuzz       every libFuzzer target (test/fuzz) for FUZZ_RUNS runs (default 10M) each
#   make chaos      the chaos suite at full size (5000 pods, leader kills, a 20-minute soak)
#   make fairness   the queue fairness suite's long decayed-usage run (150 s, 5%)
#   make lint       C format, shellcheck, Python syntax, doc links; make format fixes the C format
# Missing Debian packages are installed first when run as root (see test/deps.sh).

CC      ?= cc
PKGS    := libcurl jansson yaml-0.1 openssl libmicrohttpd gnutls
WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CPPFLAGS+= -D_GNU_SOURCE -Ipkg
CFLAGS  ?= -O2 -g
LDLIBS  += -lpthread -lm

# Variants: plain (build/), asan (build-asan/), tsan (build-tsan/). The
# sanitizer builds also check the lock hierarchy (pkg/util/lockorder.h);
# the plain build does not pay for it.
VARIANT ?= plain
ifeq ($(VARIANT),asan)
  B := build-asan
  SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  CHECKS := -DAISCHED_LOCKCHECK
else ifeq ($(VARIANT),tsan)
  B := build-tsan
  SAN := -fsanitize=thread -fno-omit-frame-pointer
  CHECKS := -DAISCHED_LOCKCHECK
else ifeq ($(VARIANT),fuzz)
  # libFuzzer targets (test/fuzz): clang, coverage hooks in the library,
  # ASan+UBSan; the fuzzer's own main() is linked into the targets only.
  B := build-fuzz
  CC := clang
  SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
  B := build
  SAN :=
endif

# The scheduler binary of the plain build allocates through jemalloc
# (Debian's libjemalloc-dev): the informers' JSON and the HTTP client make a
# small allocation per field and per request, and it takes about 12% less
# CPU and memory than glibc's malloc (docs/benchmarks.md, "Where the time
# goes"). Sanitizer builds keep their own allocators; MALLOC=libc opts out.
MALLOC ?= jemalloc
ifeq ($(VARIANT)-$(MALLOC),plain-jemalloc)
  MALLOC_LIBS := $(if $(wildcard /usr/lib/*/libjemalloc.so /usr/lib/libjemalloc.so),-ljemalloc)
endif

DEPS_OK := $(shell pkg-config --exists $(PKGS) cmocka 2>/dev/null && echo yes)
ifeq ($(DEPS_OK),yes)
  PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
  PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
endif

LIB_SRCS  := $(shell find pkg -name '*.c' | sort)
LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/%.o)
CMD_SRCS  := $(shell find cmd/ai-scheduler -name '*.c' | sort)
CMD_OBJS  := $(CMD_SRCS:%.c=$(B)/%.o)
# The command's objects but main.o: the unit tests link them (the table
# commands' front-ends, cmd/ai-scheduler/cli.c) and include "ai-scheduler/*.h".
CMDLIB_OBJS := $(filter-out $(B)/cmd/ai-scheduler/main.o,$(CMD_OBJS))
UNIT_SRCS := $(wildcard test/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(B)/test/%)
# The suites' shared helpers with a .c of their own (test/unit/*.c but the
# suites, e.g. fake_services.c): one archive every suite links, so a suite
# takes only the helpers it calls.
TESTLIB_SRCS := $(filter-out $(UNIT_SRCS),$(wildcard test/unit/*.c))
TESTLIB_OBJS := $(TESTLIB_SRCS:test/unit/%.c=$(B)/testlib/%.o)
TOOL_SRCS := $(wildcard test/bench/*.c)
TOOL_BINS := $(TOOL_SRCS:test/bench/%.c=$(B)/tools/%)
FUZZ_SRCS := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:test/fuzz/fuzz_%.c=$(B)/fuzz/%)

ALL_CFLAGS = $(WARN) $(CFLAGS) $(SAN) $(CHECKS) $(PKG_CFLAGS) -MMD -MP
ALL_LDFLAGS = $(SAN) $(LDFLAGS)

.PHONY: all deps test unit unit-asan unit-tsan e2e e2e-valgrind demo bench bench-reservation bench-simulate bench-dashboard fairness fuzz fuzz-bins chaos lint clean install property soak

all: deps
	@$(MAKE) --no-print-directory bin/ai-scheduler bin/kubectl-pool bin/kubectl-queue tools

deps:
	@bash test/deps.sh build

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

# The dashboard's files (pkg/dashboard/web) become C arrays in the library
# (pkg/dashboard/embed.sh); the directory is a prerequisite so that adding or
# removing a file regenerates them too.
DASH_WEB := $(sort $(wildcard pkg/dashboard/web/*))
LIB_OBJS += $(B)/gen/dashboard_assets.o
$(B)/gen/dashboard_assets.c: pkg/dashboard/embed.sh pkg/dashboard/web $(DASH_WEB)
	@mkdir -p $(dir $@)
	sh pkg/dashboard/embed.sh $(DASH_WEB) > $@.tmp && mv $@.tmp $@
$(B)/gen/dashboard_assets.o: $(B)/gen/dashboard_assets.c
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(B)/libaisched.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/libaischedcmd.a: $(CMDLIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# ai-scheduler --version: the release and the git commit at build time.
# Rewritten only when it changes, so an unchanged tree does not relink.
AISCHED_VERSION := 0.1.0
$(B)/version.h: FORCE
	@mkdir -p $(dir $@)
	@printf '#define AISCHED_VERSION "%s"\n#define AISCHED_GIT "%s"\n' "$(AISCHED_VERSION)" \
	    "$$(git describe --always --dirty --tags 2>/dev/null || echo unknown)" >$@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@
$(B)/cmd/ai-scheduler/main.o: $(B)/version.h
$(B)/cmd/ai-scheduler/main.o: CPPFLAGS += -I$(B)
$(B)/cmd/ai-scheduler/daemon.o: $(B)/version.h
$(B)/cmd/ai-scheduler/daemon.o: CPPFLAGS += -I$(B)
.PHONY: FORCE
FORCE:

$(B)/bin/ai-scheduler: $(CMD_OBJS) $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CMD_OBJS) $(B)/libaisched.a $(MALLOC_LIBS) $(PKG_LIBS) $(LDLIBS)

# Replaced atomically: a running scheduler keeps its old binary.
bin/ai-scheduler: $(B)/bin/ai-scheduler
	@mkdir -p bin
	cp $< $@.tmp && mv -f $@.tmp $@

bin/kubectl-pool: bin/ai-scheduler
	ln -sf ai-scheduler $@

bin/kubectl-queue: bin/ai-scheduler
	ln -sf ai-scheduler $@

tools: $(TOOL_BINS)

$(B)/tools/%: test/bench/%.c $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(B)/libaisched.a $(PKG_LIBS) $(LDLIBS)

$(B)/testlib/%.o: test/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Itest/unit -c $< -o $@

$(B)/libaischedtest.a: $(TESTLIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/test/%: test/unit/%.c $(B)/libaischedtest.a $(B)/libaischedcmd.a $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Itest/unit -Icmd $(ALL_LDFLAGS) -o $@ $< $(B)/libaischedtest.a $(B)/libaischedcmd.a $(B)/libaisched.a $(PKG_LIBS) $$(pkg-config --libs cmocka) $(LDLIBS)

unit-bins: $(UNIT_BINS)

$(B)/fuzz/%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/libaisched.a $(PKG_LIBS) $(LDLIBS)

fuzz-bins: $(FUZZ_BINS)

# Each unit binary is a cmocka suite; run them all, fail if any fails.
unit: deps
	@$(MAKE) --no-print-directory unit-bins
	@bash test/run-unit.sh $(B)/test

# Stack use after return too (off by default in ASan; valgrind found one such bug).
unit-asan:
	@ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_stack_use_after_return=1} $(MAKE) --no-print-directory VARIANT=asan unit

unit-tsan:
	@$(MAKE) --no-print-directory VARIANT=tsan unit

e2e: all
	@bash test/e2e/run.sh

# Every part runs even when an earlier one failed; test/summary.sh prints the
# parts and a closing "N passed, M failed" (suites and e2e cases) over them all.
# The builds use every core (JOBS, default nproc: the variants' objects are
# compiled in parallel, ~2x faster on 2 cores); test/run-unit.sh runs the unit
# binaries UNIT_JOBS at a time.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: export TEST_SUMMARY := $(CURDIR)/build/test-summary.txt
test: deps
	@bash test/summary.sh begin
	@bash test/summary.sh run "unit (plain)" $(MAKE) --no-print-directory -j$(JOBS) unit
	@bash test/summary.sh run "unit (ASan)" $(MAKE) --no-print-directory -j$(JOBS) unit-asan
	@bash test/summary.sh run "unit (TSan)" $(MAKE) --no-print-directory -j$(JOBS) unit-tsan
	@bash test/summary.sh run "build" $(MAKE) --no-print-directory -j$(JOBS) all
	@bash test/summary.sh run "build (ASan)" $(MAKE) --no-print-directory -j$(JOBS) VARIANT=asan bin-asan
	@bash test/summary.sh run "build (TSan)" $(MAKE) --no-print-directory -j$(JOBS) VARIANT=tsan bin-tsan
	@bash test/summary.sh run "fuzz (short)" bash test/fuzz/run.sh short
	@bash test/summary.sh run "simulate" bash test/simulate/run.sh
	@bash test/summary.sh run "dashboard UI (fixtures, Chromium)" bash test/browser/run.sh
	@bash test/summary.sh run "e2e" bash test/e2e/run.sh
	@bash test/summary.sh end

bin-asan: $(B)/bin/ai-scheduler
bin-tsan: $(B)/bin/ai-scheduler

demo: all
	@bash test/e2e/demo.sh

# Each fuzz target (clang's libFuzzer) over its corpus in test/fuzz/corpus:
# FUZZ_RUNS executions (default 10M) or FUZZ_TIME seconds, whichever ends
# first; prints executions per target. make test runs each for FUZZ_SHORT s.
fuzz: deps
	@bash test/fuzz/run.sh long

# The chaos suite (test/e2e/t_chaos.sh) at the issue's sizes: 5000 pods with
# a leader loss every 5 s, and a 20-minute create/delete soak (about 30 min).
chaos: all
	@$(MAKE) --no-print-directory VARIANT=asan bin-asan
	@CHAOS_LONG=1 E2E_FILE_TIMEOUT=$${E2E_FILE_TIMEOUT:-3600} bash test/e2e/run.sh chaos

# The queue fairness suite with the long decayed-usage run (150 s, checked to
# the issue's 5%); make test runs it for 40 s and checks 20%.
fairness: all
	@$(MAKE) --no-print-directory VARIANT=asan bin-asan
	@QUEUE_CASES=decay DECAY_RUN=150 DECAY_TOL_PCT=5 bash test/e2e/run.sh queues

bench: all
	@bash test/bench/bench.sh

# The dashboard's routes on 10,000 nodes and 100,000 pending pods in a
# sandbox: time and size of each answer (DASH_NODES, DASH_PENDING, DASH_RUNS).
bench-dashboard: all
	@$(MAKE) --no-print-directory $(B)/tools/dashboard_bench
	@$(B)/tools/dashboard_bench $${DASH_NODES:-10000} $${DASH_PENDING:-100000} $${DASH_RUNS:-5}

# Reservation for large gangs: a 32-GPU gang behind a stream of 1-GPU jobs,
# with and without reservations, side by side (docs/benchmarks.md).
bench-reservation: all
	@bash test/bench/reservation.sh

# ai-scheduler simulate at the issue's size: 10,000 nodes, 100,000 pods
# (SIM_NODES, SIM_PODS, SIM_SEED; SIM_PERF=1 profiles; docs/benchmarks.md).
bench-simulate: all
	@bash test/simulate/bench.sh

# Long property campaign: PROPERTY_RANDOM random seeds (printed) besides PROPERTY_SEEDS;
# PROPERTY_PODS, PROPERTY_NODES, PROPERTY_KINDS as in test/e2e/t_property.sh.
property: all
	@python3 test/property/test_checker.py
	@PROPERTY_RANDOM=$${PROPERTY_RANDOM:-20} E2E_FILE_TIMEOUT=$${E2E_FILE_TIMEOUT:-7200} bash test/e2e/run.sh property

# Long composition campaign (test/e2e/t_composition.sh, test/compose/): COMPOSE_RANDOM
# random seeds (printed) at COMPOSE_SCALE 2 besides the fixed ones; a failing seed
# replays with COMPOSE_SEEDS=S COMPOSE_SCALE=2.
soak: all
	@python3 test/compose/test_checker.py
	@COMPOSE_SEEDS="$${COMPOSE_SEEDS:-1 3 7}" COMPOSE_RANDOM=$${COMPOSE_RANDOM:-20} COMPOSE_SCALE=$${COMPOSE_SCALE:-2} E2E_FILE_TIMEOUT=$${E2E_FILE_TIMEOUT:-7200} bash test/e2e/run.sh composition

lint:
	@bash test/lint.sh

# Rewrites the C files to .clang-format (lint checks the same style).
.PHONY: format
format:
	@bash test/format.sh

# Installs the scheduler and the kubectl plugins (`kubectl pool`, `kubectl queue`).
PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/ai-scheduler $(DESTDIR)$(PREFIX)/bin/ai-scheduler
	ln -sf ai-scheduler $(DESTDIR)$(PREFIX)/bin/kubectl-pool
	ln -sf ai-scheduler $(DESTDIR)$(PREFIX)/bin/kubectl-queue

clean:
	rm -rf build build-asan build-tsan build-fuzz bin

-include $(shell find build build-asan build-tsan build-fuzz -name '*.d' 2>/dev/null)
