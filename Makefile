# pybpfprof — see README.md. `make test` on a fresh Debian 12 machine installs,
# builds and tests everything; `make demo` profiles a bundled workload.

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
PYTEST   ?= pytest-3
PREFIX   ?= /usr/local
BUILD    := build

ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -I$(BUILD)
LDLIBS   := -lbpf -lelf -lz

# User space split in two: the library (everything testable without BPF)
# and the parts that need the skeleton or are the program entry.
PROG_SRCS := user/main.c user/sampler.c user/record.c user/attach.c user/launch.c user/statsjson.c user/summary.c
LIB_SRCS  := $(filter-out $(PROG_SRCS),$(wildcard user/*.c))
LIB_OBJS  := $(LIB_SRCS:user/%.c=$(BUILD)/obj/%.o)
PROG_OBJS := $(PROG_SRCS:user/%.c=$(BUILD)/obj/%.o)
HDRS      := $(wildcard include/*.h user/*.h)

# pprof's schema (proto/*.proto), compiled by protoc-c into build/proto/ and
# linked into everything that links the library. The generated C is not ours
# to fix, so it builds without -Werror.
PROTOS     := $(wildcard proto/*.proto)
PROTO_C    := $(PROTOS:proto/%.proto=$(BUILD)/proto/%.pb-c.c)
PROTO_H    := $(PROTO_C:.c=.h)
PROTO_OBJS := $(PROTO_C:$(BUILD)/proto/%.c=$(BUILD)/obj/%.o)
HDRS       += $(PROTO_H)
LIB_OBJS   += $(PROTO_OBJS)
LDLIBS     += -lprotobuf-c

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.bpf.o)
SKELS     := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
ASAN_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/asan/%)
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Keep the BPF object: bpftool reads it and the tests inspect it.
.SECONDARY: $(BPF_OBJS) $(SKELS)

.PHONY: all deps test unit unit-asan integration integration-asan fuzz fuzz-regress bench demo install clean chroot soak

all: $(BUILD)/pybpfprof

deps:
	@scripts/deps.sh

$(BUILD)/vmlinux.h:
	@mkdir -p $(BUILD)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c include/pybpfprof.h $(BUILD)/vmlinux.h
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(BUILD) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: user/%.c $(HDRS) $(SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

# Generated sources are kept: make would otherwise delete them as intermediates.
.SECONDARY: $(PROTO_C) $(PROTO_H)

$(BUILD)/obj/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

# The flame graph page is a template that html.c includes as bytes.
$(BUILD)/flamegraph.html.inc: user/flamegraph.html.tmpl
	@mkdir -p $(BUILD)
	xxd -i < $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/html.o $(UNIT_BINS) $(ASAN_BINS): $(BUILD)/flamegraph.html.inc

$(BUILD)/pybpfprof: $(PROG_OBJS) $(LIB_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# Unit tests: once plain, once under ASan+UBSan (with leak checking).
$(BUILD)/unit/%: tests/unit/%.c $(LIB_SRCS) $(HDRS) $(PROTO_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit $< $(LIB_SRCS) $(PROTO_OBJS) -o $@ $(LDLIBS)

$(BUILD)/asan/%: tests/unit/%.c $(LIB_SRCS) $(HDRS) $(PROTO_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN) -Itests/unit $< $(LIB_SRCS) $(PROTO_OBJS) -o $@ $(LDLIBS)

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do (cd tests/unit && ../../$$t); done

unit-asan: $(ASAN_BINS)
	@set -e; for t in $(ASAN_BINS); do \
		(cd tests/unit && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 ../../$$t); done

# Fuzzing (libFuzzer): each tests/fuzz/fuzz_NAME.c is linked with the whole
# library, built again by clang with coverage and sanitizers (the HTML writer
# needs the page template), and seeded from tests/fuzz/corpus/NAME/.
# `make fuzz` fuzzes each for FUZZ_SECONDS, new inputs going to a scratch
# corpus in build/fuzz/ (listed first, so the committed one is only read);
# a crash leaves its input as build/fuzz/NAME-crash-*. `make fuzz-regress`
# runs each harness once over every committed input (part of `make test`).
FUZZ_SECONDS ?= 60
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_SAN    := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -I$(BUILD) $(FUZZ_SAN)
FUZZ_LIB    := $(LIB_SRCS:user/%.c=$(BUILD)/fuzz/obj/%.o) $(PROTO_C:$(BUILD)/proto/%.c=$(BUILD)/fuzz/obj/%.o)

# Kept between builds: only pattern rules name them.
.SECONDARY: $(FUZZ_LIB)

$(BUILD)/fuzz/obj/%.o: user/%.c $(HDRS) $(BUILD)/flamegraph.html.inc
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/obj/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CLANG) $(filter-out -Werror,$(FUZZ_CFLAGS)) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB) $(HDRS)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB) -o $@ $(LDLIBS)

fuzz: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$${f##*/fuzz_}; \
		mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		echo "fuzz $$n: $(FUZZ_SECONDS) s"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/$$n- \
			$(BUILD)/fuzz/corpus-$$n tests/fuzz/corpus/$$n; done

fuzz-regress: $(FUZZ_BINS)
	@set -e; for f in $(FUZZ_BINS); do n=$${f##*/fuzz_}; \
		echo "fuzz-regress $$n: $$(ls tests/fuzz/corpus/$$n | wc -l) inputs"; \
		$$f -runs=0 -artifact_prefix=$(BUILD)/fuzz/$$n- tests/fuzz/corpus/$$n 2>$(BUILD)/fuzz/$$n.log \
			|| { cat $(BUILD)/fuzz/$$n.log; exit 1; }; done

integration: all
	$(PYTEST) -ra -v --durations=30 tests/integration

# The whole program under ASan+UBSan (the BPF side is the same object), run
# through the integration tests that together reach every subcommand, mode,
# output writer, -a and the error exits, on two interpreters (offsets from
# the table and from _Py_DebugOffsets; the static stripped one by the tests
# that pick the first found). Reports go to files, one per process, so the
# tests' own checks of stderr see what they always see; a report that
# appears during a test fails it (tests/integration/conftest.py), leaks
# found at exit included. Built by clang: gcc's UBSan ignores log_path and
# writes to stderr, where a test that accepts the exit code would miss it.
ASAN_DIR  := $(BUILD)/asan-bin
ASAN_PROG := $(ASAN_DIR)/pybpfprof
ASAN_OBJS := $(PROG_SRCS:user/%.c=$(ASAN_DIR)/obj/%.o) $(LIB_SRCS:user/%.c=$(ASAN_DIR)/obj/%.o) \
	     $(PROTO_C:$(BUILD)/proto/%.c=$(ASAN_DIR)/obj/%.o)
ASAN_LOGS := $(ASAN_DIR)/reports
ASAN_INTERPS ?= 3.11-debian-static,3.13
# Left out, and why:
#  test_valgrind            valgrind cannot run an ASan binary (skips itself)
#  test_achieved_rate, test_cpu_split_matches_target, test_gil_contention:
#                           measure timing and rates, which ASan's overhead shifts
ASAN_TESTS := tests/integration/test_hostile.py tests/integration/test_record.py \
	tests/integration/test_formats.py tests/integration/test_modes.py \
	tests/integration/test_dump.py tests/integration/test_threadnames.py \
	tests/integration/test_lifetimes.py \
	tests/integration/test_host.py::test_all_processes_every_version \
	tests/integration/test_host.py::test_filters tests/integration/test_cli.py \
	tests/integration/test_pidns.py::test_inner_ids_shown \
	tests/integration/test_pidns.py::test_dump_matches_target \
	tests/integration/test_pidns.py::test_profiler_inside_a_namespace
ASAN_SKIP := not test_achieved_rate and not test_cpu_split_matches_target and not test_gil_contention
ASAN_ENV := PBP_BIN=$(abspath $(ASAN_PROG)) PBP_SANITIZED=1 PBP_SANITIZER_LOGS=$(abspath $(ASAN_LOGS)) \
	PBP_INTERPS=$(ASAN_INTERPS) \
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:log_path=$(abspath $(ASAN_LOGS))/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(abspath $(ASAN_LOGS))/ubsan
ASAN_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -I$(BUILD) -g -O1 $(SAN)

$(ASAN_DIR)/obj/%.o: user/%.c $(HDRS) $(SKELS)
	@mkdir -p $(dir $@)
	$(CLANG) $(ASAN_CFLAGS) -c $< -o $@

$(ASAN_DIR)/obj/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CLANG) $(filter-out -Werror,$(ASAN_CFLAGS)) -c $< -o $@

$(ASAN_DIR)/obj/html.o: $(BUILD)/flamegraph.html.inc

$(ASAN_PROG): $(ASAN_OBJS)
	$(CLANG) $(ASAN_CFLAGS) $^ -o $@ $(LDLIBS)

# The report directory is open to all: some tests run the binary as nobody.
integration-asan: $(ASAN_PROG)
	rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS) && chmod 1777 $(ASAN_LOGS)
	$(ASAN_ENV) $(PYTEST) -ra -v $(ASAN_TESTS) -k '$(ASAN_SKIP)'

test: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) unit-asan
	$(MAKE) fuzz-regress
	$(MAKE) integration
	$(MAKE) integration-asan

chroot:
	@scripts/sid-chroot.sh

# Not part of `make test`: 30 minutes (SOAK_SECONDS to change) at 999 Hz of a
# churning target; pybpfprof's RSS and fds every 10 s go to bench/soak.csv.
soak: all
	python3 scripts/soak.py

# What pybpfprof costs (root): writes bench/RESULTS.md and prints a table,
# about 30 minutes; BENCH_QUICK=1 for a smoke run of under 3 minutes.
bench: all
	BENCH_QUICK=$(BENCH_QUICK) /usr/bin/python3 scripts/bench

# Profiles scripts/demo_app.py for 10 s into demo.html (needs root).
demo: deps
	$(MAKE) all
	@scripts/demo.sh

install: all
	install -D -m 0755 $(BUILD)/pybpfprof $(DESTDIR)$(PREFIX)/bin/pybpfprof
	install -D -m 0644 pybpfprof.1 $(DESTDIR)$(PREFIX)/share/man/man1/pybpfprof.1
	install -D -m 0644 scripts/pybpfprof.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/pybpfprof

clean:
	rm -rf $(BUILD)
