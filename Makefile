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
INCLUDES := -Iinclude -Iuser -I$(BUILD)
LDLIBS   := -lbpf -ldw -lelf -lz -lprotobuf-c -lmicrohttpd -lgnutls -lcurl -lcjson -lncursesw -ltinfo -lpthread

# User space: one folder per stage (see docs/internals.md); everything
# but the entry point is a library that the program, the unit tests and the
# fuzzers link against. Every object also writes its dependencies (-MMD -MP),
# so a header edit rebuilds only what includes it.
MAIN_SRC  := user/cli/main.c
LIB_SRCS  := $(filter-out $(MAIN_SRC),$(wildcard user/*/*.c))

# pprof's schema (proto/*.proto), compiled by protoc-c into build/proto/ and
# part of the library. The generated C is not ours to fix: no -Werror.
PROTOS    := $(wildcard proto/*.proto)
PROTO_C   := $(PROTOS:proto/%.proto=$(BUILD)/proto/%.pb-c.c)
PROTO_H   := $(PROTO_C:.c=.h)

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.bpf.o)
SKELS     := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)
# Made before any object is compiled: the first build has no dependency files yet.
GENERATED := $(SKELS) $(PROTO_H) $(BUILD)/flamegraph.html.inc

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
SAN       := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Keep what only pattern rules name: make would delete it as intermediate.
.SECONDARY: $(BPF_OBJS) $(SKELS) $(PROTO_C) $(PROTO_H)

.PHONY: all deps test unit unit-asan integration integration-asan fuzz fuzz-regress bench demo freethreaded freethreaded-cached \
	install clean chroot soak layers deb image

all: $(BUILD)/pybpfprof

deps:
	@scripts/deps.sh

$(BUILD)/vmlinux.h:
	@mkdir -p $(BUILD)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# Program and callback signatures are the kernel's: unused parameters are allowed.
# The headers it includes are the compiler's to list (-MMD -MP), as for user space;
# vmlinux.h is named too, because it must be made before the first compile. An
# object without its .d (a build from before) is made again, to get one; clang
# writes the .d after the object, so the object is touched to stay the newer.
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(BUILD)/%.bpf.d
	$(CLANG) -g -O2 $(WARN) -Wno-unused-parameter -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(BUILD) \
		-MMD -MP -c $< -o $@
	touch $@

$(BUILD)/%.bpf.d: ;
-include $(BPF_OBJS:.o=.d)

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

# The flame graph page is a template that html.c includes as bytes, joined
# from its parts (one concern each; the script is one scope across them).
PAGE_PARTS := $(addprefix user/output/page/,head.html data.js tree.js table.js views.js source.js graph.js view.js foot.html)
$(BUILD)/flamegraph.html.inc: $(PAGE_PARTS)
	@mkdir -p $(BUILD)
	cat $(PAGE_PARTS) | xxd -i > $@.tmp && mv $@.tmp $@

# One set of rules per build flavour: $(call flavour,DIR,COMPILER,FLAGS)
# compiles the library into DIR/libpybpfprof.a and the unit tests into
# DIR/unit/. Flavours: release (the program), asan (ASan+UBSan: the unit
# tests again and the whole program for integration-asan; clang, because
# gcc's UBSan ignores log_path), fuzz (libFuzzer's coverage on top).
define flavour
$(1)/obj/%.o: user/%.c | $(GENERATED)
	@mkdir -p $$(dir $$@)
	$(2) $(3) -MMD -MP -c $$< -o $$@

$(1)/obj/%.pb-c.o: $(BUILD)/proto/%.pb-c.c | $(GENERATED)
	@mkdir -p $$(dir $$@)
	$(2) $(filter-out -Werror,$(3)) -c $$< -o $$@

$(1)/libpybpfprof.a: $(LIB_SRCS:user/%.c=$(1)/obj/%.o) $(PROTO_C:$(BUILD)/proto/%.c=$(1)/obj/%.o)
	rm -f $$@ && ar rcs $$@ $$^

$(1)/unit/%: tests/unit/%.c $(1)/libpybpfprof.a | $(GENERATED)
	@mkdir -p $$(dir $$@)
	$(2) $(3) -MMD -MP -Itests/unit $$< $(1)/libpybpfprof.a -o $$@ $(LDLIBS)

-include $(LIB_SRCS:user/%.c=$(1)/obj/%.d) $(1)/obj/cli/main.d $(UNIT_SRCS:tests/unit/%.c=$(1)/unit/%.d)
endef

CFLAGS_ALL  := -std=c11 -D_GNU_SOURCE $(WARN) $(INCLUDES)
ASAN_DIR    := $(BUILD)/asan-bin
ASAN_CFLAGS := $(CFLAGS_ALL) -g -O1 $(SAN)
FUZZ_DIR    := $(BUILD)/fuzz
FUZZ_CFLAGS := $(CFLAGS_ALL) -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all

$(eval $(call flavour,$(BUILD),$(CC),$(CFLAGS_ALL) $(CPPFLAGS) $(CFLAGS)))
$(eval $(call flavour,$(ASAN_DIR),$(CLANG),$(ASAN_CFLAGS)))
$(eval $(call flavour,$(FUZZ_DIR),$(CLANG),$(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link))

$(BUILD)/pybpfprof: $(BUILD)/obj/cli/main.o $(BUILD)/libpybpfprof.a
	$(CC) $(CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The native leaf's cost per sample, in one process (scripts/bench/natbench.c).
# With libunwind beside libdw, to compare the two on the same stacks (libunwind-dev: the bench only).
$(BUILD)/natbench: scripts/bench/natbench.c scripts/bench/natunwind.c $(BUILD)/libpybpfprof.a | $(GENERATED)
	$(CC) $(CFLAGS_ALL) $(CFLAGS) scripts/bench/natbench.c scripts/bench/natunwind.c $(BUILD)/libpybpfprof.a \
		-o $@ $(LDLIBS) -lunwind-x86_64 -lunwind

UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
ASAN_BINS := $(UNIT_SRCS:tests/unit/%.c=$(ASAN_DIR)/unit/%)

# Unit tests: once plain, once under ASan+UBSan (with leak checking).
unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do (cd tests/unit && ../../$$t); done

unit-asan: $(ASAN_BINS)
	@set -e; for t in $(ASAN_BINS); do \
		(cd tests/unit && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 ../../$$t); done

# A lower stage never includes a higher one, and headers include no cycle;
# commit subjects since the rule was kept are at most 72 characters.
layers:
	@scripts/check-layers.py
	@scripts/check-subjects.sh

# Fuzzing (libFuzzer): each tests/fuzz/fuzz_NAME.c is linked with the whole
# library, built again by clang with coverage and sanitizers (the HTML writer
# needs the page template), and seeded from tests/fuzz/corpus/NAME/.
# `make fuzz` fuzzes each for FUZZ_SECONDS, new inputs going to a scratch
# corpus in build/fuzz/ (listed first, so the committed one is only read);
# a crash leaves its input as build/fuzz/NAME-crash-*. `make fuzz-regress`
# runs each harness once over every committed input (part of `make test`).
FUZZ_SECONDS ?= 60
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_DIR)/%)

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/libpybpfprof.a | $(GENERATED)
	$(CLANG) $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer $< $(FUZZ_DIR)/libpybpfprof.a -o $@ $(LDLIBS)

-include $(FUZZ_BINS:%=%.d)

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

# Two passes (docs/testing.md): the tests that wait far more than they
# compute, two at a time (pytest-xdist; whole modules to a worker, so that a
# module's shared targets and recordings are made once; the largest first,
# tests/integration/passes.py, so that both end together), then those marked
# `serial`, alone: system-wide profiling, the host's BPF objects, CPU shares,
# rates and timing. PYTEST_JOBS=1 runs the first pass in one process too.
PYTEST_JOBS ?= 2
INTEGRATION_ARGS := tests/integration

# $(call pytest_passes,NAME,ENV,ARGS): both passes of pytest $(ARGS) with
# $(ENV) (variable names: their values hold commas), each
# keeping every test's time in build/NAME-PASS.xml; then each pass's wall
# seconds and the modules' totals. Exit 5 (a pass with nothing selected) is
# no failure; the other pass runs even when one fails.
define pytest_passes
	@rm -f $(BUILD)/$(1)-parallel.xml $(BUILD)/$(1)-serial.xml $(BUILD)/$(1)-passes.txt; status=0; \
	for pass in parallel serial; do \
		if [ $$pass = parallel ]; then opts="-n $(PYTEST_JOBS) --dist loadfile"; sel="not serial"; \
		else opts=""; sel="serial"; fi; \
		t0=$$(date +%s); \
		$($(2)) $(PYTEST) -ra -v --durations=15 $$opts -m "$$sel" --junitxml=$(BUILD)/$(1)-$$pass.xml $($(3)); \
		rc=$$?; [ $$rc -eq 5 ] && rc=0; [ $$rc -eq 0 ] || status=$$rc; \
		echo "$$pass $$(( $$(date +%s) - t0 ))" >> $(BUILD)/$(1)-passes.txt; \
	done; \
	scripts/test-times.py --passes $(BUILD)/$(1)-passes.txt $(BUILD)/$(1)-parallel.xml $(BUILD)/$(1)-serial.xml; \
	exit $$status
endef

integration: all
	$(call pytest_passes,integration,,INTEGRATION_ARGS)

# The whole program under ASan+UBSan (the BPF side is the same object), run
# through the integration tests that together reach every subcommand, mode,
# output writer, -a and the error exits, on two interpreters (offsets from
# the table and from _Py_DebugOffsets; the static stripped one by the tests
# that pick the first found). Only the tests that read a layout
# (`every_version`) take another code path on the other interpreter: the
# rest run on the first named (PBP_ONE_FAMILY), 3.13, on which every test
# of the list runs that runs on 3.11 (asyncio's wall tasks only there).
# Reports go to files, one per process, so the
# tests' own checks of stderr see what they always see; a report that
# appears during a test fails it (tests/integration/conftest.py), leaks
# found at exit included. Built by clang: gcc's UBSan ignores log_path and
# writes to stderr, where a test that accepts the exit code would miss it.
ASAN_PROG := $(ASAN_DIR)/pybpfprof
ASAN_LOGS := $(ASAN_DIR)/reports
ASAN_INTERPS ?= 3.13,3.11-debian-static
# Left out, and why:
#  test_valgrind            valgrind cannot run an ASan binary (skips itself)
#  test_achieved_rate, test_cpu_split_matches_target, test_gil_contention:
#                           measure timing and rates, which ASan's overhead shifts
#  test_push_outage         15-30 s of a receiver away, timed to the agent's retries: the
#                           queue's code runs in the other push tests
#  test_cpu_mode_once       top's shares in cpu mode follow the CPU the target gets, which ASan shifts
#  test_wall_takes_stacks_as_threads_leave_the_cpu: shares of ticks and naps against the clock;
#                           stacks taken as threads leave the CPU come in the other wall tests too
#  test_dump_names_code_copies_at_one_address: counts dump's torn reads of a running
#                           thread, which ASan's slower reads make many (46 of 60 on a quiet
#                           machine); dump's walk and naming run in test_dump's tests
#  on 3.11-debian-static, what is not `every_version`: the same code as on 3.13, other offsets
ASAN_TESTS := tests/integration/test_hostile.py tests/integration/test_record.py \
	tests/integration/test_formats.py tests/integration/test_modes.py \
	tests/integration/test_dump.py tests/integration/test_threadnames.py \
	tests/integration/test_lifetimes.py tests/integration/test_asyncio.py \
	tests/integration/test_host.py::test_all_processes_every_version \
	tests/integration/test_host.py::test_filters tests/integration/test_cli.py \
	tests/integration/test_pidns.py::test_inner_ids_shown \
	tests/integration/test_pidns.py::test_dump_matches_target \
	tests/integration/test_pidns.py::test_profiler_inside_a_namespace \
	tests/integration/test_agent.py tests/integration/test_top.py
ASAN_SKIP := not test_achieved_rate and not test_cpu_split_matches_target and not test_gil_contention \
	and not test_push_outage and not test_cpu_mode_once and not test_wall_takes_stacks_as_threads_leave_the_cpu \
	and not test_dump_names_code_copies_at_one_address
ASAN_ARGS := $(ASAN_TESTS) -k '$(ASAN_SKIP)'
ASAN_ENV := PBP_BIN=$(abspath $(ASAN_PROG)) PBP_SANITIZED=1 PBP_SANITIZER_LOGS=$(abspath $(ASAN_LOGS)) \
	PBP_INTERPS=$(ASAN_INTERPS) PBP_ONE_FAMILY=1 \
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:log_path=$(abspath $(ASAN_LOGS))/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(abspath $(ASAN_LOGS))/ubsan

$(ASAN_PROG): $(ASAN_DIR)/obj/cli/main.o $(ASAN_DIR)/libpybpfprof.a
	$(CLANG) $(ASAN_CFLAGS) $^ -o $@ $(LDLIBS)

# The report directory is open to all: some tests run the binary as nobody.
# Both workers of the parallel pass write reports there: a report fails the
# test that was running in each worker when it appeared (one of the two
# caused it; the report's pid and stack say which run).
integration-asan: $(ASAN_PROG)
	rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS) && chmod 1777 $(ASAN_LOGS)
	$(call pytest_passes,integration-asan,ASAN_ENV,ASAN_ARGS)

# Each step's time and the total are printed at the end (CI allows 90 minutes).
# The steps that compile do so on every CPU (the program, the ASan and
# fuzzing builds of the library, the unit tests and harnesses: one file at
# a time took about 80 s of CPU-bound waiting on two CPUs); what a step then
# runs, it runs as before. Not the integration steps: their tests run make
# (deb, demo), which would be handed a job server it cannot reach.
TEST_STEPS := all layers unit unit-asan fuzz-regress freethreaded-cached integration integration-asan
BUILD_STEPS := all unit unit-asan fuzz-regress
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: deps
	@start=$$(date +%s); times=""; status=0; \
	for step in $(TEST_STEPS); do \
		jobs=; case " $(BUILD_STEPS) " in *" $$step "*) jobs=-j$(BUILD_JOBS);; esac; \
		t0=$$(date +%s); $(MAKE) $$jobs $$step || { status=$$?; times="$$times $$step:FAILED"; break; }; \
		times="$$times $$step:$$(( $$(date +%s) - t0 ))s"; \
	done; \
	echo "make test:$$times; total $$(( $$(date +%s) - start )) s"; exit $$status

chroot:
	@scripts/sid-chroot.sh

# A free-threaded 3.14t in the sid chroot (docs/requirements.md), from
# PBP_FT_SRC, ../shared/cpython's 3.14 tarball or Debian's python3.14 source.
freethreaded:
	@scripts/build-freethreaded.sh

# make test's step: built once and cached in the chroot (a later run finds it
# in a second). A build that fails does not fail the suite: its one line is
# kept in the chroot's .python3.14t.failed, which the integration tests give
# as 3.14t's SKIPPED reason.
freethreaded-cached:
	@scripts/build-freethreaded.sh >/dev/null || \
		echo "make: no free-threaded 3.14t: its integration tests are SKIPPED (reason above)"

# Not part of `make test`: 30 minutes (SOAK_SECONDS to change) at 999 Hz of a
# churning target; pybpfprof's RSS and fds every 10 s go to bench/soak.csv.
# Then 30 minutes (SOAK_AGENT_SECONDS) of `pybpfprof agent` over 50 short-lived
# targets (bench/soak-agent.csv); `scripts/soak.py agent` runs that case alone.
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

MANPAGES := pybpfprof.1 $(wildcard pybpfprof-*.1)

install: all
	install -D -m 0755 $(BUILD)/pybpfprof $(DESTDIR)$(PREFIX)/bin/pybpfprof
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 scripts/pybpfprof.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/pybpfprof

# The Debian package (docs/install.md), built in build/deb/ by
# dpkg-buildpackage and checked by lintian (scripts/deb.sh). Rebuilt only
# when a file it is made of changed: it takes minutes, and the package
# tests ask for it.
DEB_VERSION := $(shell sed -n 's/^\#define PBP_VERSION "\(.*\)"$$/\1/p' user/core/version.h)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB         := $(BUILD)/deb/pybpfprof_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_INPUTS  := $(filter user/% bpf/% include/% proto/% debian/% deploy/systemd/% Makefile pybpfprof.1 pybpfprof-%.1 \
	scripts/deb.sh scripts/pybpfprof.bash-completion,$(shell git ls-files --cached --others --exclude-standard 2>/dev/null))

deb: $(DEB)

$(DEB): $(DEB_INPUTS)
	scripts/deb.sh $(BUILD)/deb

# Not part of `make test` (a whole build inside, minutes): the Containerfile's
# image, built by buildah without a daemon and checked (scripts/image.sh).
image:
	@scripts/image.sh

clean:
	rm -rf $(BUILD)
