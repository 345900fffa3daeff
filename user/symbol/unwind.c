/* SPDX-License-Identifier: MIT */
/*
 * Native unwinding (unwind.h). One Dwfl per process holds its modules at
 * the addresses it maps them at (dwfl_linux_proc_report reads its maps);
 * the files are opened through /proc/PID/root. Its thread callbacks are
 * ours: no ptrace, the one thread is the sample's, its registers the
 * kernel's copy, its memory the stack copy first and the process after.
 * The Dwfl is made again (at most every REBUILD_NS) when ip is in none of
 * its modules: a library loaded since. Its walks are remembered
 * (unwmemo.h) from the sample's first frame and from the few after it
 * (KEYED): a sample in code sampled before, or called from where one was,
 * takes the rest of its walk from the memo once the words it read are
 * read again.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <dwarf.h>

#include "symbol/unwind.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/search.h"
#include "symbol/unwmemo.h"

/* As native.c's maps: a module loaded since is unwound through within this. */
#define REBUILD_NS 200000000ull

/* The memory past a stack copy is read this much at a time (a page: whole or not at all). */
#define FAR_PAGE 4096

/*
 * Frames looked up in the memo past the first: the second and the two
 * after it. The frames near the leaf hold the leaf's loop state in their
 * saved registers and miss often; a few frames out (the extension's
 * caller, the evaluation loop at its call) the state repeats while the
 * program calls from the same place.
 */
#define KEYED 3

/* x86-64 DWARF register numbers: rbp, rsp. */
#define DW_X86_64_RBP 6

struct unwinder {
	pid_t pid;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	char *debugpath;
	uint64_t built_ns;
	const struct ustack_in *in;     /* the sample being unwound */
	uint64_t *pcs;
	size_t max, n;
	bool cut;
	/* The walk being made, for the memo: every word libdwfl read, in order. */
	struct unwmemo memo;
	struct unwmemo_read log[UNWMEMO_MAX_READS];
	uint32_t nlog;                  /* may pass UNWMEMO_MAX_READS: then it is not kept */
	/* Frames 1..KEYED looked up: their states, and where in the log their reads start. */
	struct {
		struct unwmemo_key key;
		uint32_t mark;          /* log[mark..]: read from this frame on */
	} keyed[KEYED];
	unsigned nkeyed;                /* looked up and missed, in walk order */
	uint32_t mark;                  /* the log's length as the frame in hand began */
	const struct unwmemo_entry *hit;        /* the rest of the walk taken from the memo */
	/* This walk is looked up and kept: the key holds the limit in 16 bits, and it may be off. */
	bool remembering, memo_off;
	/* This sample's page of the process past the stack copy (read_far). */
	uint8_t far[FAR_PAGE];
	uint64_t far_page;
	bool far_read, far_ok;
};

/*
 * The process whose modules are being found: libdwfl asks for a module's
 * file lazily, in the middle of an unwind_stack or build of ours, and its
 * callback cannot reach the Dwfl it is for. This program is single-threaded.
 */
static pid_t finding_for;

/* Module files as the process sees them: through its root. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	char path[4096 + 64];
	int fd;

	if (name[0] != '/' || !finding_for)     /* [vdso]: libdwfl reads it from memory */
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)finding_for, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	*file_name = strdup(path);
	*elfp = NULL;
	return fd;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl, (void)arg, (void)thread_argp;
	return 0;       /* threads are asked for by id only */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	*thread_argp = u;
	return u->in && tid == u->in->tid;
}

/*
 * A word past the stack copy, from the process now: its whole page at the
 * first such word of a sample, one read for the words after it there (the
 * outer frames of a deep stack are read a word at a time, a system call
 * each, else). A page is read whole or not at all; a word across two
 * pages is read alone.
 */
static bool read_far(struct unwinder *u, uint64_t addr, uint64_t *val)
{
	uint64_t page = addr & ~(uint64_t)(FAR_PAGE - 1);
	struct iovec l = { val, sizeof(*val) }, r = { (void *)(uintptr_t)addr, sizeof(*val) };

	if (addr - page > FAR_PAGE - sizeof(*val))
		return process_vm_readv(u->pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof(*val);
	if (!u->far_read || u->far_page != page) {
		l = (struct iovec){ u->far, FAR_PAGE };
		r = (struct iovec){ (void *)(uintptr_t)page, FAR_PAGE };
		u->far_page = page;
		u->far_read = true;
		u->far_ok = process_vm_readv(u->pid, &l, 1, &r, 1, 0) == (ssize_t)FAR_PAGE;
	}
	if (u->far_ok)
		memcpy(val, u->far + (addr - page), sizeof(*val));
	return u->far_ok;
}

/* A word of the sample's memory: the stack copy first, the process now past it. */
static bool read_word(void *arg, uint64_t addr, uint64_t *val)
{
	struct unwinder *u = arg;
	const struct ustack_in *in = u->in;

	/* Written so that no sum can wrap: addr is whatever the CFI computed. */
	if (in->len >= sizeof(*val) && addr >= in->sp && addr - in->sp <= in->len - sizeof(*val)) {
		memcpy(val, in->stack + (addr - in->sp), sizeof(*val));
		return true;
	}
	return read_far(u, addr, val);
}

/* libdwfl's reads, logged: they are what a remembered walk is checked against. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwinder *u = arg;
	uint64_t val = 0;
	bool ok = read_word(u, addr, &val);

	(void)dwfl;
	*result = val;
	if (u->nlog < UNWMEMO_MAX_READS)
		u->log[u->nlog] = (struct unwmemo_read){ addr, ok ? val : 0, ok };
	u->nlog += u->nlog <= UNWMEMO_MAX_READS;
	return ok;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word regs[2] = { u->in->bp, u->in->sp };

	dwfl_thread_state_register_pc(thread, u->in->ip);
	return dwfl_thread_state_registers(thread, DW_X86_64_RBP, 2, regs);
}

static const Dwfl_Thread_Callbacks thread_cb = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static void drop(struct unwinder *u)
{
	if (u->dwfl)
		dwfl_end(u->dwfl);
	u->dwfl = NULL;
	unwmemo_clear(&u->memo);        /* its walks were made with these modules */
}

/* The process's modules, reported again, and our thread callbacks attached. */
static int build(struct unwinder *u)
{
	drop(u);
	u->built_ns = mono_ns();
	finding_for = u->pid;
	u->dwfl = dwfl_begin(&u->cb);
	if (!u->dwfl)
		return -PBP_E_NOMEM;
	dwfl_report_begin(u->dwfl);
	if (dwfl_linux_proc_report(u->dwfl, u->pid) != 0 ||
	    dwfl_report_end(u->dwfl, NULL, NULL) != 0 ||
	    !dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_cb, u)) {
		drop(u);
		return -PBP_E_GONE;
	}
	return 0;
}

struct unwinder *unwinder_new(pid_t pid)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
	if (asprintf(&u->debugpath, "/proc/%d/root/usr/lib/debug", (int)pid) < 0) {
		free(u);
		return NULL;
	}
	u->cb.find_elf = find_elf;
	u->cb.find_debuginfo = dwfl_standard_find_debuginfo;
	u->cb.debuginfo_path = &u->debugpath;
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	drop(u);
	free(u->debugpath);
	free(u);
}

/*
 * A frame past the first, as libdwfl holds it: its pc and every register
 * it knows. Only a frame that is no activation is kept: dwfl_frame_pc said
 * so, after unwinding the next (reading it was the start of the walk
 * from here), and so the frame is neither the first nor a signal frame,
 * the two flags of libdwfl's state that no register shows.
 */
static void frame_key(struct unwinder *u, struct unwmemo_key *k, Dwfl_Frame *state, Dwarf_Addr pc)
{
	Dwarf_Word v;

	unwmemo_key_init(k, pc, (uint16_t)u->n, (uint16_t)u->max);
	for (unsigned r = 0; r < UNWMEMO_REGS; r++)
		if (dwfl_frame_reg(state, r, &v) == 0)
			unwmemo_key_reg(k, r, v);
}

/* The rest of the walk from the memo, when this frame's state was remembered. */
static bool rest_remembered(struct unwinder *u, const struct unwmemo_key *k, Dwarf_Addr pc)
{
	const struct unwmemo_entry *e = unwmemo_get(&u->memo, k, read_word, u);

	if (!e)
		return false;
	u->pcs[u->n++] = pc - 1;
	memcpy(u->pcs + u->n, e->pcs, e->npcs * sizeof(*e->pcs));
	u->n += e->npcs;
	u->cut = e->cut;
	u->hit = e;
	return true;
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	u->mark = u->nlog;
	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	if (u->n == u->max) {
		u->cut = true;
		return DWARF_CB_ABORT;
	}
	if (u->n >= 1 && u->n <= KEYED && !activation && u->remembering) {
		struct unwmemo_key *k = &u->keyed[u->nkeyed].key;

		frame_key(u, k, state, pc);
		if (rest_remembered(u, k, pc))
			return DWARF_CB_ABORT;
		u->keyed[u->nkeyed++].mark = u->mark;
	}
	/* A return address is past its call: one byte back names the caller's line. */
	u->pcs[u->n++] = activation ? pc : pc - 1;
	return DWARF_CB_OK;
}

/* The sample's first frame as libdwfl starts from it (set_initial_registers). */
static void first_frame_key(struct unwmemo_key *k, const struct ustack_in *in, size_t max)
{
	unwmemo_key_init(k, in->ip, 0, (uint16_t)max);
	unwmemo_key_reg(k, DW_X86_64_RBP, in->bp);
	unwmemo_key_reg(k, DW_X86_64_RBP + 1, in->sp);
}

/*
 * The walk just made, remembered from the frames looked up that missed,
 * and from its first frame when libdwfl made it whole. A walk finished
 * from the memo is kept with the remembered walk's reads after its own:
 * those are the reads the whole walk would have made. It is not kept
 * from its first frame: that state (a leaf's pc and registers in a
 * loop) seldom comes back, while a put costs a block of a few KiB and
 * takes a way of its set from a walk that does (a thread blocked in a
 * call, whose first frame repeats, missed further out too the first
 * time, and is kept then). A walk not kept for want of memory costs only
 * the next such sample's walk: the stack in hand is right either way, so
 * unwmemo_put's failure is dropped.
 */
static void remember(struct unwinder *u, const struct unwmemo_key *k0)
{
	uint32_t nlog = u->nlog;

	if (nlog > UNWMEMO_MAX_READS)
		return;
	if (u->hit) {
		/* Copied before any put: a put into the hit's slot frees it. */
		if (nlog + u->hit->nreads > UNWMEMO_MAX_READS)
			return;
		memcpy(u->log + nlog, u->hit->reads, u->hit->nreads * sizeof(*u->log));
		nlog += u->hit->nreads;
	}
	for (unsigned i = 0; i < u->nkeyed; i++) {
		uint32_t d = u->keyed[i].key.depth, mark = u->keyed[i].mark;

		if (u->n > d)
			(void)unwmemo_put(&u->memo, &u->keyed[i].key, u->pcs + d + 1,
					  (uint32_t)(u->n - d - 1), u->cut, u->log + mark, nlog - mark);
	}
	if (!u->hit)
		(void)unwmemo_put(&u->memo, k0, u->pcs + 1, (uint32_t)(u->n - 1), u->cut, u->log, nlog);
}

/* libdwfl's walk of the sample, or the memo's when it remembers the first frame. */
static void walk(struct unwinder *u, const struct ustack_in *in)
{
	struct unwmemo_key k0;
	const struct unwmemo_entry *e;

	if (!u->dwfl)
		return;
	u->remembering = !u->memo_off && in->ip && u->max <= UINT16_MAX;
	first_frame_key(&k0, in, u->max);
	if (u->remembering && (e = unwmemo_get(&u->memo, &k0, read_word, u))) {
		u->pcs[u->n++] = in->ip;
		memcpy(u->pcs + u->n, e->pcs, e->npcs * sizeof(*e->pcs));
		u->n += e->npcs;
		u->cut = e->cut;
		return;
	}
	u->nlog = u->mark = 0;
	u->nkeyed = 0;
	u->hit = NULL;
	dwfl_getthread_frames(u->dwfl, in->tid, on_frame, u);
	/* No first frame: libdwfl could not start (no thread), and nothing is known. */
	if (u->n > 0 && u->remembering)
		remember(u, &k0);
}

int unwind_stack(struct unwinder *u, const struct ustack_in *in, uint64_t *pcs, size_t max,
		 size_t *n, bool *cut)
{
	int err = 0;

	*n = 0;
	*cut = false;
	if (!max)
		return 0;
	if (u->dwfl && !dwfl_addrmodule(u->dwfl, in->ip) && mono_ns() - u->built_ns >= REBUILD_NS)
		drop(u);
	if (!u->dwfl && (u->built_ns == 0 || mono_ns() - u->built_ns >= REBUILD_NS))
		err = build(u);
	finding_for = u->pid;
	u->in = in;
	u->far_read = false;    /* the process's memory as it is now, for this sample */
	u->pcs = pcs;
	u->max = max;
	u->n = 0;
	u->cut = false;
	walk(u, in);
	u->in = NULL;
	finding_for = 0;
	if (u->n == 0) {        /* not even ip: it is the innermost frame, whatever the walk said */
		pcs[u->n++] = in->ip;
	}
	*n = u->n;
	*cut = u->cut;
	return err == -PBP_E_NOMEM ? err : 0;
}

uint64_t unwind_remembered(const struct unwinder *u)
{
	return u->memo.hits;
}

void unwind_remember(struct unwinder *u, bool on)
{
	u->memo_off = !on;
}

/*
 * .eh_frame_hdr's search table: the start of every function with unwind
 * information, sorted, as 4-byte offsets from the header (the encoding
 * every linker writes: datarel sdata4, its count udata4, the eh_frame
 * pointer before it 4 bytes). The function holding vaddr starts at the
 * last entry at or below it and ends where the next one starts.
 */
#define EH_HDR_TABLE_ENC 0x3b           /* DW_EH_PE_datarel | DW_EH_PE_sdata4 */
#define EH_HDR_COUNT_ENC 0x03           /* DW_EH_PE_udata4 */
#define EH_HDR_ENTRY 8                  /* a function's start, then its FDE's */

struct table_key {
	uint64_t hdr_vaddr, vaddr;
};

static bool entry_starts_by(const void *entry, const void *key)
{
	const struct table_key *k = key;
	int32_t loc;

	memcpy(&loc, entry, 4);
	return k->hdr_vaddr + (int64_t)loc <= k->vaddr;
}

static bool table_span(const uint8_t *hdr, size_t size, uint64_t hdr_vaddr, uint64_t vaddr,
		       uint64_t *start, uint64_t *end)
{
	struct table_key key = { hdr_vaddr, vaddr };
	uint32_t count;
	size_t lo;
	uint64_t from, to;
	int32_t loc;

	if (size < 12 || hdr[0] != 1 || hdr[2] != EH_HDR_COUNT_ENC || hdr[3] != EH_HDR_TABLE_ENC)
		return false;
	memcpy(&count, hdr + 8, 4);
	if (count < 2 || (size - 12) / EH_HDR_ENTRY < count)
		return false;
	/* the last entry whose start is at or below vaddr (the first, to be refused, when none is) */
	lo = search_first(hdr + 12, count, EH_HDR_ENTRY, &key, entry_starts_by);
	lo = lo ? lo - 1 : 0;
	memcpy(&loc, hdr + 12 + lo * EH_HDR_ENTRY, 4);
	from = hdr_vaddr + (int64_t)loc;
	if (lo + 1 == count || from > vaddr)
		return false;
	memcpy(&loc, hdr + 12 + (lo + 1) * EH_HDR_ENTRY, 4);
	to = hdr_vaddr + (int64_t)loc;
	if (to <= vaddr)
		return false;
	/* Only a span found is written: a caller compares starts, a failed lookup's included. */
	*start = from;
	*end = to;
	return true;
}

bool unwind_func_span(struct unwinder *u, uint64_t pc, uint64_t *start, uint64_t *end)
{
	Dwfl_Module *mod = u->dwfl ? dwfl_addrmodule(u->dwfl, pc) : NULL;
	Dwarf_Addr bias = 0;
	Elf *elf;
	size_t n = 0;
	bool found = false;

	finding_for = u->pid;   /* the module's file may be opened now */
	elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	if (elf && elf_getphdrnum(elf, &n) != 0)
		n = 0;
	for (size_t i = 0; i < n && !found; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		found = d && table_span(d->d_buf, d->d_size, ph.p_vaddr, pc - bias, start, end);
	}
	finding_for = 0;
	if (found) {
		*start += bias;
		*end += bias;
	}
	return found;
}
