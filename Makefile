# ai-scheduler — build, test, demo, bench.
#   make            bin/ai-scheduler (and bin/kubectl-pool)
#   make test       unit tests (plain, ASan+UBSan, TSan) and the e2e suite on a real kube-apiserver
#   make demo       local control plane + scheduler + examples/, prints where pods landed
#   make bench      ai-scheduler vs kube-scheduler on the same API server
# Missing Debian packages are installed first when run as root (see test/deps.sh).

CC      ?= cc
PKGS    := libcurl jansson yaml-0.1 openssl libmicrohttpd
WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CPPFLAGS+= -D_GNU_SOURCE -Ipkg
CFLAGS  ?= -O2 -g
LDLIBS  += -lpthread -lm

# Variants: plain (build/), asan (build-asan/), tsan (build-tsan/).
VARIANT ?= plain
ifeq ($(VARIANT),asan)
  B := build-asan
  SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(VARIANT),tsan)
  B := build-tsan
  SAN := -fsanitize=thread -fno-omit-frame-pointer
else
  B := build
  SAN :=
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
UNIT_SRCS := $(wildcard test/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:test/unit/%.c=$(B)/test/%)
TOOL_SRCS := $(wildcard test/bench/*.c)
TOOL_BINS := $(TOOL_SRCS:test/bench/%.c=$(B)/tools/%)

ALL_CFLAGS = $(WARN) $(CFLAGS) $(SAN) $(PKG_CFLAGS) -MMD -MP
ALL_LDFLAGS = $(SAN) $(LDFLAGS)

.PHONY: all deps test unit unit-asan unit-tsan e2e e2e-valgrind demo bench lint clean install property

all: deps
	@$(MAKE) --no-print-directory bin/ai-scheduler bin/kubectl-pool tools

deps:
	@bash test/deps.sh build

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(B)/libaisched.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/bin/ai-scheduler: $(CMD_OBJS) $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CMD_OBJS) $(B)/libaisched.a $(PKG_LIBS) $(LDLIBS)

# Replaced atomically: a running scheduler keeps its old binary.
bin/ai-scheduler: $(B)/bin/ai-scheduler
	@mkdir -p bin
	cp $< $@.tmp && mv -f $@.tmp $@

bin/kubectl-pool: bin/ai-scheduler
	ln -sf ai-scheduler $@

tools: $(TOOL_BINS)

$(B)/tools/%: test/bench/%.c $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(B)/libaisched.a $(PKG_LIBS) $(LDLIBS)

$(B)/test/%: test/unit/%.c $(B)/libaisched.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -Itest/unit $(ALL_LDFLAGS) -o $@ $< $(B)/libaisched.a $(PKG_LIBS) $$(pkg-config --libs cmocka) $(LDLIBS)

unit-bins: $(UNIT_BINS)

# Each unit binary is a cmocka suite; run them all, fail if any fails.
unit: deps
	@$(MAKE) --no-print-directory unit-bins
	@bash test/run-unit.sh $(B)/test

unit-asan:
	@$(MAKE) --no-print-directory VARIANT=asan unit

unit-tsan:
	@$(MAKE) --no-print-directory VARIANT=tsan unit

e2e: all
	@bash test/e2e/run.sh

test: deps
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory unit-asan
	@$(MAKE) --no-print-directory unit-tsan
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory VARIANT=asan bin-asan
	@$(MAKE) --no-print-directory VARIANT=tsan bin-tsan
	@bash test/e2e/run.sh

bin-asan: $(B)/bin/ai-scheduler
bin-tsan: $(B)/bin/ai-scheduler

demo: all
	@bash test/e2e/demo.sh

bench: all
	@bash test/bench/bench.sh

# Long property campaign: PROPERTY_RANDOM random seeds (printed) besides PROPERTY_SEEDS;
# PROPERTY_PODS, PROPERTY_NODES, PROPERTY_KINDS as in test/e2e/t_property.sh.
property: all
	@python3 test/property/test_checker.py
	@PROPERTY_RANDOM=$${PROPERTY_RANDOM:-20} E2E_FILE_TIMEOUT=$${E2E_FILE_TIMEOUT:-7200} bash test/e2e/run.sh property

lint:
	@bash test/lint.sh

# Installs the scheduler and the kubectl plugin (`kubectl pool`).
PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/ai-scheduler $(DESTDIR)$(PREFIX)/bin/ai-scheduler
	ln -sf ai-scheduler $(DESTDIR)$(PREFIX)/bin/kubectl-pool

clean:
	rm -rf build build-asan build-tsan bin

-include $(shell find build build-asan build-tsan -name '*.d' 2>/dev/null)
