/* SPDX-License-Identifier: MIT */
/*
 * libunwind over a captured stack (natunwind.h): an address space of our
 * own whose registers are the captured ones (ip, sp, bp; the rest unknown)
 * and whose memory is the copy, then this process's memory past it. The
 * unwind tables are found as libunwind finds them for this process (its
 * local find_proc_info: dl_iterate_phdr and the loaded .eh_frame_hdr), which
 * a profiler of another process could not do; it would read each file's
 * .eh_frame_hdr instead (perf does). So the figure is libunwind's walk with
 * the table lookup at its cheapest.
 */
#include <string.h>
#include <libunwind.h>

#include "natunwind.h"

static unw_addr_space_t space;
static const struct ustack_in *current;

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg)
{
	unw_accessors_t *local = unw_get_accessors(unw_local_addr_space);

	(void)as;
	return local->find_proc_info(space, ip, pi, need, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	unw_accessors_t *local = unw_get_accessors(unw_local_addr_space);

	(void)as;
	if (local->put_unwind_info)
		local->put_unwind_info(space, pi, arg);
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	(void)as, (void)arg, (void)addr;
	return -UNW_ENOINFO;
}

/* The copy where it holds addr, else this process's memory (the same process: read it). */
static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	const struct ustack_in *in = current;

	(void)as, (void)arg;
	if (write)
		return -UNW_EINVAL;
	if (in->len >= sizeof(*val) && addr >= in->sp && addr - in->sp <= in->len - sizeof(*val))
		memcpy(val, in->stack + (addr - in->sp), sizeof(*val));
	else
		memcpy(val, (const void *)(uintptr_t)addr, sizeof(*val));
	return 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	(void)as, (void)arg;
	if (write)
		return -UNW_EREADONLYREG;
	if (reg == UNW_REG_IP)
		*val = current->ip;
	else if (reg == UNW_REG_SP)
		*val = current->sp;
	else if (reg == UNW_X86_64_RBP)
		*val = current->bp;
	else
		return -UNW_EBADREG;
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off,
			 void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
	return -UNW_ENOINFO;
}

int natunwind_init(void)
{
	static unw_accessors_t acc = {
		.find_proc_info = find_proc_info, .put_unwind_info = put_unwind_info,
		.get_dyn_info_list_addr = get_dyn_info_list_addr, .access_mem = access_mem,
		.access_reg = access_reg, .access_fpreg = access_fpreg, .resume = resume,
		.get_proc_name = get_proc_name,
	};

	space = unw_create_addr_space(&acc, 0);
	if (!space)
		return -1;
	unw_set_caching_policy(space, UNW_CACHE_GLOBAL);
	return 0;
}

int natunwind_stack(const struct ustack_in *in, uint64_t *pcs, size_t max, size_t *n, bool *cut)
{
	unw_cursor_t c;
	unw_word_t ip;
	int step = 1;

	*n = 0;
	*cut = false;
	current = in;
	if (unw_init_remote(&c, space, NULL) < 0)
		return -1;
	while (step > 0 && unw_get_reg(&c, UNW_REG_IP, &ip) == 0 && ip) {
		if (*n == max) {
			*cut = true;
			break;
		}
		/* As unwind.c: a return address one byte back, into its call. */
		pcs[*n] = *n ? ip - 1 : ip;
		(*n)++;
		step = unw_step(&c);
	}
	return 0;
}
