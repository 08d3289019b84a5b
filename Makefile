# skiff build. Sources are discovered by folder, so adding a file needs no
# edit here:
#   protocol/*.c storage/*.c raft/*.c broker/*.c broker/*/*.c clients/*.c
#                                                          -> one static lib each
#   broker/main.c -> bin/skiff      clients/skiffctl.c -> bin/skiffctl
#   test/unit/test_*.c   -> one check executable each (built and run by `make test-unit`)
#   test/sim/sim_*.c     -> one executable each (`make test-sim` / `make sim-long`)
#   test/bench/bench_*.c -> one executable each (built and run by `make bench`)
#   test/fuzz/fuzz_*.c   -> one libFuzzer target each (built by clang, `make fuzz`)
#   test/tools/*.c       -> helper programs for scripted tests ($(B)/test/tools/NAME,
#                           built by `make test-integration` and `make bench`)
#   test/support/*.c     -> linked into every test, sim, bench and tool program
#   test/layers/t_folder_graph.sh -> run with the unit tests (broker/'s folder
#                           graph against broker/README.md "Layers")
#   test/layers/t_prefixes.sh -> run with the unit tests (public names of each
#                           broker/ folder carry its prefix, broker/README.md "Names")
#   test/integration/t_*.sh -> run by `make test` after the unit tests, in
#                           parallel lanes (see test-integration below; env:
#                           SKIFF_BIN_DIR = bin/, SKIFF_TEST_DIR = $(B)/test)
# `make` builds bin/ only (what `make run` starts); every test target builds
# the programs it runs, `make test-programs` builds them all without running.
# Generated code (protocol/schema/*.kps -> kp_msgs.[ch]) lives in $(B)/gen and
# is never committed.

CC      ?= cc
PYTHON  ?= python3
PKGS    := libevent libevent_pthreads libzstd liblz4 zlib snappy libprotobuf-c libcrypto
B       ?= build
BIN     ?= bin
OPT     ?= -O2
SAN     ?=
CSTD    := -std=c11 -D_GNU_SOURCE
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
INCS    := -I. -I$(B)/gen
# TLS on the listeners and peer connections (broker/net/tls.c, quorum_client.c)
PKGS    += libssl libevent_openssl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)
CFLAGS  := $(CSTD) $(OPT) -g $(WARN) $(SAN) $(INCS) $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(SAN)
LDLIBS  := $(PKG_LIBS) -lpthread -lm

MODULES := broker clients raft storage protocol
MAINS   := broker/main.c clients/skiffctl.c
GEN_H   := $(B)/gen/kp_msgs.h
GEN_C   := $(B)/gen/kp_msgs.c
SCHEMAS := $(sort $(wildcard protocol/schema/*.kps))
GEN_PY  := $(wildcard protocol/gen/*.py)

# the config key table (broker/config/kafka_keys.tsv -> C rows; the
# reference page broker/config/CONFIGURATION.md is committed, and
# test/unit/t_config_reference.sh checks it equals the generator's output)
KKEYS_INC := $(B)/gen/broker/config/kafka_keys.inc

# the web console (broker/admin/console/*) embedded as one generated C file
# (broker/admin/admin_console.h; the generator is console/embed.py)
CONSOLE_FILES := $(sort $(wildcard broker/admin/console/*.html broker/admin/console/*.css \
                   broker/admin/console/*.js broker/admin/console/*.svg))
CONSOLE_C := $(B)/gen/broker/admin/console_assets.c

PROTOS  := $(sort $(wildcard broker/*.proto broker/*/*.proto))
PROTO_C := $(patsubst %.proto,$(B)/gen/%.pb-c.c,$(PROTOS))
PROTO_H := $(PROTO_C:.c=.h)
GEN_ALL_H := $(if $(SCHEMAS),$(GEN_H)) $(PROTO_H) $(KKEYS_INC)

lib_srcs = $(filter-out $(MAINS),$(sort $(wildcard $(1)/*.c $(1)/*/*.c)))
lib_objs = $(patsubst %.c,$(B)/obj/%.o,$(call lib_srcs,$(1)))
PROTO_OBJS := $(call lib_objs,protocol) $(if $(SCHEMAS),$(B)/obj/gen/kp_msgs.o)
LIBS    := $(foreach m,$(MODULES),$(B)/lib/libskiff_$(m).a)

UNIT_SRCS  := $(sort $(wildcard test/unit/test_*.c))
UNIT_BINS  := $(patsubst test/unit/%.c,$(B)/test/%,$(UNIT_SRCS))
SIM_SRCS   := $(sort $(wildcard test/sim/sim_*.c))
SIM_BINS   := $(patsubst test/sim/%.c,$(B)/test/%,$(SIM_SRCS))
BENCH_SRCS := $(sort $(wildcard test/bench/bench_*.c))
BENCH_BINS := $(patsubst test/bench/%.c,$(B)/test/%,$(BENCH_SRCS))
TOOL_SRCS  := $(sort $(wildcard test/tools/*.c))
TOOL_BINS  := $(patsubst test/tools/%.c,$(B)/test/tools/%,$(TOOL_SRCS))
TEST_SUPPORT := $(patsubst %.c,$(B)/obj/%.o,$(sort $(wildcard test/support/*.c)))
TEST_PROGS := $(UNIT_BINS) $(SIM_BINS) $(BENCH_BINS) $(TOOL_BINS)
TEST_OBJS  := $(patsubst test/%.c,$(B)/obj/test/%.o,$(UNIT_SRCS) $(SIM_SRCS) $(BENCH_SRCS) $(TOOL_SRCS))
SKIFF_BINS := $(if $(wildcard broker/main.c),$(BIN)/skiff) $(if $(wildcard clients/skiffctl.c),$(BIN)/skiffctl)

# Test-only fault injection (storage/st_io.h, st_cleaner.h): the files that
# hold hooks are compiled a second time with -DSKIFF_FAULT_INJECTION into
# $(B)/obj/fault/ and linked into every test, sim, bench and tool program
# through TEST_SUPPORT (objects come before the libraries, so their
# definitions win and the plain members are never pulled in). bin/ is built
# from the plain objects only: test/integration/t_no_test_hooks.sh.
FAULT_SRCS := storage/io.c storage/cleaner.c
FAULT_OBJS := $(patsubst %.c,$(B)/obj/fault/%.o,$(FAULT_SRCS))
TEST_SUPPORT += $(FAULT_OBJS)
$(B)/obj/test/%.o: CFLAGS += -DSKIFF_FAULT_INJECTION
$(B)/obj/fault/%.o: %.c | $(GEN_ALL_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSKIFF_FAULT_INJECTION -MMD -MP -c $< -o $@

.PHONY: all gen deps run run-secure test test-programs test-unit test-sim test-integration test-integration-1loop asan fuzz bench sim-long clean
.DEFAULT_GOAL := all

# the broker and its CLI; no test program (test/integration/t_make_nothing_to_do.sh)
all: $(SKIFF_BINS)

# every test, simulation, benchmark and tool program, built but not run
test-programs: $(TEST_PROGS)

# A test program's own object is named only by the pattern rules below, so
# make took it for an intermediate file and deleted it after linking; the .d
# file left behind then named it as a target, and the next make compiled
# every one of them again. Kept as secondary: built once, never deleted.
.SECONDARY: $(TEST_OBJS) $(FAULT_OBJS)

deps:
	@bash etc/install-deps.sh

# all generated headers (for tools that compile against the tree, e.g. fuzz)
gen: $(GEN_ALL_H)

# --- generated codec ------------------------------------------------------
$(GEN_H) $(GEN_C) &: $(SCHEMAS) $(GEN_PY)
	@mkdir -p $(B)/gen
	$(PYTHON) protocol/gen/kpgen.py --out $(B)/gen $(SCHEMAS)

$(KKEYS_INC): broker/config/kafka_keys.tsv broker/config/gen/cfgkeys.py
	@mkdir -p $(dir $@)
	$(PYTHON) broker/config/gen/cfgkeys.py --tsv broker/config/kafka_keys.tsv --c $@

$(CONSOLE_C): $(CONSOLE_FILES) broker/admin/console/embed.py
	@mkdir -p $(dir $@)
	$(PYTHON) broker/admin/console/embed.py --out $@ $(CONSOLE_FILES)

$(B)/obj/gen/broker/admin/console_assets.o: $(CONSOLE_C) | $(GEN_ALL_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# protobuf-c messages (metadata records), generated into $(B)/gen/broker/.
# Listed as .SECONDARY so make never deletes them as "intermediate" files
# of the pattern chain (a header only named by pattern rules would be).
.SECONDARY: $(PROTO_C) $(PROTO_H)
$(B)/gen/%.pb-c.c $(B)/gen/%.pb-c.h: %.proto
	@mkdir -p $(B)/gen
	protoc-c --c_out=$(B)/gen $<

$(B)/obj/gen/%.pb-c.o: $(B)/gen/%.pb-c.c $(B)/gen/%.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# every object may include a generated header, so generate first
$(B)/obj/%.o: %.c | $(GEN_ALL_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(B)/obj/gen/kp_msgs.o: $(GEN_C) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(B)/obj/test/%.o: test/%.c | $(GEN_ALL_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -MMD -MP -c $< -o $@

MODULE_OBJS_protocol := $(PROTO_OBJS)
MODULE_OBJS_storage  := $(call lib_objs,storage)
MODULE_OBJS_raft     := $(call lib_objs,raft)
MODULE_OBJS_broker   := $(call lib_objs,broker) $(patsubst $(B)/gen/%.c,$(B)/obj/gen/%.o,$(PROTO_C)) \
                        $(B)/obj/gen/broker/admin/console_assets.o
MODULE_OBJS_clients  := $(call lib_objs,clients)

define lib_rule
$(B)/lib/libskiff_$(1).a: $$(MODULE_OBJS_$(1)) $(B)/obj/empty.o
	@mkdir -p $$(dir $$@)
	rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call lib_rule,$(m))))

# an archive must hold something even while a module is still empty
$(B)/obj/empty.o:
	@mkdir -p $(dir $@)
	echo 'typedef int skiff_empty_unit_t;' | $(CC) $(CFLAGS) -x c -c - -o $@

$(BIN)/skiff: $(B)/obj/broker/main.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BIN)/skiffctl: $(B)/obj/clients/skiffctl.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(B)/test/%: $(B)/obj/test/unit/%.o $(TEST_SUPPORT) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) $(LDLIBS)

$(B)/test/tools/%: $(B)/obj/test/tools/%.o $(TEST_SUPPORT) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(shell pkg-config --libs rdkafka 2>/dev/null)

$(B)/test/sim_%: $(B)/obj/test/sim/sim_%.o $(TEST_SUPPORT) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(B)/test/bench_%: $(B)/obj/test/bench/bench_%.o $(TEST_SUPPORT) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(shell pkg-config --libs rdkafka 2>/dev/null)

# --- the two user commands ------------------------------------------------
# The builds inside them use every core (`.ci/run` and a new user type a bare
# `make test`; a serial build of ~370 files is minutes of CI's 2 cores). Only
# the compile steps: the test families below still run one after another.
# At most 8: nproc counts the CPUs this process may run on, not a container's
# CPU quota, and each compiler takes ~100 MB.
JOBS    ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ "$$n" -gt 8 ] && n=8; echo $$n)

# needs bin/ only: after `make` it compiles nothing
run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(SKIFF_BINS)
	@SKIFF_BIN=$(abspath $(BIN))/skiff bash etc/run-cluster.sh etc/cluster.conf

# the same with TLS and SASL on every port (etc/secure-cluster.conf; certs
# and the first admin user under ./data, made once by etc/run-secure.sh)
run-secure: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(SKIFF_BINS)
	@SKIFF_BIN=$(abspath $(BIN))/skiff bash etc/run-secure.sh

# Builds every test program first, the benchmarks' too (they are run by
# `make bench` only, but a compile error in one stops here, and none is left
# older than the sources it was built from: t_make_nothing_to_do.sh); then
# every family runs even when an earlier one fails; the last line is the total.
# The integration families: every script with several network loops per node,
# then the wire-path scripts of test/integration/one-loop.txt with one.
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(SKIFF_BINS) $(TEST_PROGS)
	@rm -f $(B)/test-logs/summary.txt; mkdir -p $(B)/test-logs
	@st=0; for f in test-unit test-sim test-integration test-integration-1loop; do \
	  $(MAKE) --no-print-directory $$f || st=1; done; \
	  bash test/summary.sh $(B)/test-logs/summary.txt && exit $$st

# test/layers/t_folder_graph.sh: broker/'s include graph against the
# allowed arrows of broker/README.md ("Layers"), with the checker's self-test.
# test/layers/t_prefixes.sh: every public identifier of a broker/ folder
# carries its prefix (broker/README.md "Names"), with the checker's self-test.
test-unit: $(UNIT_BINS)
	@TEST_LOG_DIR=$(B)/test-logs bash test/run-tests.sh unit $(UNIT_BINS) test/layers/t_folder_graph.sh test/layers/t_prefixes.sh test/unit/t_config_reference.sh

test-sim: $(SIM_BINS)
	@TEST_LOG_DIR=$(B)/test-logs bash test/run-tests.sh sim $(SIM_BINS)

# Integration scripts run in TEST_LANES parallel lanes (test/run-tests.sh:
# per-lane port ranges, "# test-solo:" scripts alone at the end). Every node
# a script starts gets num.network.threads=NET_THREADS (lib.sh, through
# SKIFF_TEST_NET_THREADS): 4 by default, several loops whatever the core
# count; `make test-integration NET_THREADS=1` runs all of them with one loop,
# NET_THREADS= (empty) with the node's own default.
# test-integration-1loop: the scripts of test/integration/one-loop.txt (the
# wire paths: produce, fetch, replication, kill -9, TLS, SASL, quotas,
# groups, transactions; the reasons are in the file) with one loop.
TEST_LANES  ?= 2
NET_THREADS ?= 4
INTEGRATION_ENV = TEST_LOG_DIR=$(B)/test-logs TEST_LANES=$(TEST_LANES) SKIFF_BIN_DIR=$(abspath $(BIN)) \
  SKIFF_TEST_DIR=$(abspath $(B))/test
ONE_LOOP_TESTS = $(addprefix test/integration/,$(shell awk '/^t_/ { print $$1 }' test/integration/one-loop.txt))
test-integration: $(SKIFF_BINS) $(TOOL_BINS)
	@$(INTEGRATION_ENV) SKIFF_TEST_NET_THREADS=$(NET_THREADS) bash test/run-tests.sh integration $(sort $(wildcard test/integration/t_*.sh))

test-integration-1loop: $(SKIFF_BINS) $(TOOL_BINS)
	@$(INTEGRATION_ENV) SKIFF_TEST_NET_THREADS=1 bash test/run-tests.sh integration-1loop $(ONE_LOOP_TESTS)

sim-long: $(SIM_BINS)
	@for s in $(SIM_BINS); do $$s --seeds $(or $(SEEDS),100000) || exit 1; done

# ASan + UBSan: separate build tree, same unit and simulation tests.
asan: deps
	@$(MAKE) --no-print-directory B=build-asan BIN=build-asan/bin OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  all test-unit test-sim

# libFuzzer targets, clang only; each runs FUZZ_SECONDS (default 20).
fuzz: deps
	@bash test/fuzz/run-fuzz.sh $(or $(FUZZ_SECONDS),20)

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) $(SKIFF_BINS) $(BENCH_BINS) $(TOOL_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-broker-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-group-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-cgroup-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-txn-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-quorum-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-tls-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-repl-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-produce-cpu-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-restart-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-net-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-cleaner-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-restart-segments-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-console-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-sasl-ssl-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-acl-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-alloc-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-fetch-alloc-bench.sh
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test bash test/bench/run-fetch-probe.sh
	@# issue 19: skiff alone here; BENCH_KAFKA=1 adds Apache Kafka side by side
	@# (~10 min more: a JVM broker fetched with Maven, started 3 times)
	@SKIFF_BIN_DIR=$(abspath $(BIN)) SKIFF_TEST_DIR=$(abspath $(B))/test BENCH_KAFKA=$${BENCH_KAFKA:-0} \
		bash test/bench/run-kafka-sbs.sh

clean:
	rm -rf build build-asan build-fuzz bin

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
