/* SPDX-License-Identifier: MIT */
/*
 * --kernel: the kallsyms table (a text in /proc/kallsyms' format: order,
 * modules, zeroed addresses, malformed lines), and kernel stacks by id
 * made into frames (a fake map: a failed id, the hook's frames, names
 * that are not there).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "aggregate/aggregate.h"
#include "core/errors.h"
#include "symbol/kallsyms.h"
#include "symbol/kstack.h"

/* Out of order, as a module's symbols are; aliases, data, junk, a cut line. */
static const char SYMS[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff816f81e0 T core_sys_select\n"
	"ffffffff816f6a30 t do_select\n"
	"ffffffff81a00000 D some_data\n"
	"not an address t nothing\n"
	"ffffffff81b00000\n"
	"ffffffff81b00000 t\n"
	"ffffffffc0a01000 t nft_do_chain\t[nf_tables]\n"
	"ffffffffc0a00000 t nft_lookup_eval\t[nf_tables]\n"
	"ffffffff8142e290 T hrtimer_nanosleep\n"
	"ffffffff8142e290 T alias_of_hrtimer_nanosleep\n"
	"ffffffff81300000 W weak_one\n"
	"ffffffff81200000 r rodata_one\n";

static FILE *text(const char *s)
{
	return fmemopen((void *)s, strlen(s), "r");
}

static void test_table(void)
{
	struct kallsyms k;
	const char *mod = "?";
	FILE *f = text(SYMS);

	CHECK_EQ_INT(kallsyms_parse(&k, f), 0);
	fclose(f);
	CHECK_EQ_INT(k.n, 8);                   /* text ones only */
	CHECK_EQ_INT(k.malformed, 3);
	CHECK(!k.zeroed);
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff816f6a30, &mod), "do_select");
	CHECK_EQ_STR(mod, "");
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff816f81df, &mod), "do_select");
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff816f81e0, &mod), "core_sys_select");
	/* Data is not a function: the text before it names the address. */
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff81a00010, &mod), "core_sys_select");
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff8142e291, &mod), "hrtimer_nanosleep");     /* listed first */
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff81300001, &mod), "weak_one");
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffffc0a01010, &mod), "nft_do_chain");
	CHECK_EQ_STR(mod, "nf_tables");
	CHECK_EQ_STR(kallsyms_name(&k, 0xffffffffc0a00fff, &mod), "nft_lookup_eval");
	/* Below the first symbol: none. */
	CHECK(kallsyms_name(&k, 0xffffffff80ffffff, &mod) == NULL);
	CHECK(kallsyms_name(&k, 0, &mod) == NULL);
	kallsyms_free(&k);
}

static void test_zeroed(void)
{
	static const char zero[] =
		"0000000000000000 T _stext\n0000000000000000 t do_select\n0000000000000000 t x\t[mod]\n";
	struct kallsyms k;
	const char *mod;
	FILE *f = text(zero);

	CHECK_EQ_INT(kallsyms_parse(&k, f), 0);
	fclose(f);
	CHECK(k.zeroed);
	CHECK_EQ_INT(k.n, 0);
	CHECK_EQ_INT(k.zero, 3);
	CHECK(kallsyms_name(&k, 0xffffffff816f6a30, &mod) == NULL);
	kallsyms_free(&k);
	/* An overlong line is passed over whole, the next one read. */
	{
		char big[1200];

		memset(big, 'a', sizeof(big));
		memcpy(big, "ffffffff81000000 T ", 19);
		strcpy(big + sizeof(big) - 40, "\nffffffff81000010 T after_long\n");
		f = text(big);
		CHECK_EQ_INT(kallsyms_parse(&k, f), 0);
		fclose(f);
		CHECK_EQ_INT(k.n, 1);
		CHECK_EQ_INT(k.malformed, 1);
		CHECK_EQ_STR(kallsyms_name(&k, 0xffffffff81000020, &mod), "after_long");
		kallsyms_free(&k);
	}
	CHECK_EQ_INT(kallsyms_load(&k, "/nonexistent/kallsyms"), -PBP_E_IO);
}

/* The fake map: id 1 a switch-out's stack (the hook innermost), id 2 in a module. */
static uint32_t fake_read(void *ctx, int32_t id, uint64_t *ips)
{
	static const uint64_t one[] = { 0xffffffff837f67d0, 0xffffffff81b10000, 0xffffffff816f6a40,
					0xffffffff816f81f0, 0xffffffff81000100 };
	static const uint64_t two[] = { 0xffffffffc0a01010, 0x10, 0x20, 0xffffffff81000100 };

	(*(int *)ctx)++;
	if (id == 1) {
		memcpy(ips, one, sizeof(one));
		return 5;
	}
	if (id == 2) {
		memcpy(ips, two, sizeof(two));
		return 4;
	}
	if (id == 3) {          /* an interrupt's stack: whatever it struck is the thread's */
		memcpy(ips, one + 1, 2 * sizeof(*ips));
		ips[2] = one[4];
		return 3;
	}
	return 0;
}

static const char HOOKED[] =
	"ffffffff81000000 T entry_SYSCALL_64\n"
	"ffffffff816f81e0 T core_sys_select\n"
	"ffffffff816f6a30 t do_select\n"
	"ffffffff81b10000 T bpf_trace_run4\n"
	"ffffffffc0a01000 t nft_do_chain\t[nf_tables]\n";

/* locs[from..n) as "name (file)|name..." */
static void names(struct agg *a, const uint32_t *locs, uint32_t from, uint32_t n, char *out, size_t len)
{
	out[0] = '\0';
	for (uint32_t i = from; i < n; i++) {
		const char *name, *file;
		int line;
		uint32_t kind;

		agg_loc_info(a, locs[i], &name, &file, &line, &kind);
		file = file && file[0] ? file : NULL;
		snprintf(out + strlen(out), len - strlen(out), "%s%s%s%s%s", i > from ? "|" : "", name,
			 file ? " (" : "", file ? file : "", file ? ")" : "");
	}
}

static char *write_temp(const char *s)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/pbp-kallsyms-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		return NULL;
	close(fd);
	return path;
}

static void test_frames(void)
{
	char *path = write_temp(HOOKED), got[512];
	struct kstacks *k = path ? kstacks_new(path) : NULL;
	struct agg *a = agg_new();
	struct pbp_sample s = { .flags = PBP_F_KSTACK | PBP_F_SWITCH_OUT, .kstack = 1 };
	uint32_t locs[16], n = 1;
	int reads = 0;

	CHECK(k && a);
	if (!k || !a)
		return;
	locs[0] = (uint32_t)agg_loc(a, "work", "app.py", 6, LOC_PY);
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	names(a, locs, 1, n, got, sizeof(got));
	/* Outermost first, after the Python frame; the hook's two frames left out. */
	CHECK_EQ_STR(got, "[kernel] entry_SYSCALL_64|[kernel] core_sys_select|[kernel] do_select");
	n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	CHECK_EQ_INT(reads, 1);                 /* an id is read once */
	/* A module's function; addresses below every symbol one [unknown] frame. */
	s.kstack = 2, n = 1, s.flags = PBP_F_KSTACK;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	names(a, locs, 1, n, got, sizeof(got));
	CHECK_EQ_STR(got, "[kernel] entry_SYSCALL_64|[kernel] [unknown]|[kernel] nft_do_chain (nf_tables)");
	s.kstack = 3, n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	names(a, locs, 1, n, got, sizeof(got));
	CHECK_EQ_STR(got, "[kernel] entry_SYSCALL_64|[kernel] do_select|[kernel] bpf_trace_run4");
	/* Room for two only. */
	n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 3), 0);
	CHECK_EQ_INT(n, 3);
	/* A failed id (-EEXIST), an id the map does not have: one [unknown] frame, counted. */
	s.kstack = -17, n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	names(a, locs, 1, n, got, sizeof(got));
	CHECK_EQ_STR(got, KERNEL_UNKNOWN);
	s.kstack = 7, n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	CHECK_EQ_INT(n, 2);
	s.kstack = PBP_KSTACK_ENTRIES, n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	CHECK_EQ_INT(kstacks_stats(k)->missed, 3);
	CHECK_EQ_INT(kstacks_stats(k)->stacks, 5);
	CHECK_EQ_INT(kstacks_stats(k)->symbols, 5);
	kstacks_free(k);
	unlink(path);
	/* No kallsyms at all: every stack one [unknown] frame, no crash. */
	k = kstacks_new("/nonexistent/kallsyms");
	CHECK(k != NULL);
	s.kstack = 1, n = 1;
	CHECK_EQ_INT(kernel_frames(k, &s, fake_read, &reads, a, locs, &n, 16), 0);
	names(a, locs, 1, n, got, sizeof(got));
	CHECK_EQ_STR(got, KERNEL_UNKNOWN);
	CHECK_EQ_INT(kstacks_stats(k)->unnamed, 1);
	kstacks_free(k);
	agg_free(a);
}

int main(void)
{
	test_table();
	test_zeroed();
	test_frames();
	return unit_done("test_kernel");
}
