/* SPDX-License-Identifier: MIT */
/*
 * asyncio_tasks.c: the task graph of a live 3.14+ process.
 *
 * The layout comes from the _asyncio module's AsyncioDebug section
 * (asyncio_offsets.c), found in whichever mapped file has it: the module's
 * own lib-dynload/_asyncio.*.so (Debian), or the interpreter binary or
 * libpython when the module is built in. The graph itself is walked by
 * asyncio_graph.c over reads of the target's memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpython/asyncio_tasks.h"
#include "core/errors.h"
#include "cpython/objects.h"
#include "cpython/process.h"
#include "cpython/pystr.h"
#include "cpython/thread.h"
#include "proc/elf.h"
#include "proc/maps.h"
#include "proc/remote.h"

#define SECTION ".AsyncioDebug"

static bool is_asyncio_module(const char *path)
{
	const char *base = strrchr(path, '/');

	return strncmp(base ? base + 1 : path, "_asyncio.", 9) == 0;
}

/* The mapped file e (offset 0) opened as the very inode mapped: through the target's root, else as named. */
static int section_of(pid_t pid, const struct map_entry *e, struct elf_section *sec)
{
	char path[700];
	struct stat st;

	for (int i = 0; i < 2; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, e->path);
		else
			snprintf(path, sizeof(path), "%s", e->path);
		if (stat(path, &st) == 0 && (uint64_t)st.st_ino == e->inode)
			return elf_find_section(path, SECTION, sec);
	}
	return -PBP_E_NOENT;
}

/* Read and check the table of the file mapped at e. */
static int layout_at(struct pyproc *p, const struct map_entry *e, struct aio_layout *l)
{
	struct elf_section sec;
	uint8_t blob[AIO_OFFSETS_SIZE];
	uint64_t bias;
	int err = section_of(p->pid, e, &sec);

	if (err)
		return err;
	if (sec.size < AIO_OFFSETS_SIZE)
		return -PBP_E_CORRUPT;
	bias = sec.is_shared ? e->start - (sec.first_load_vaddr & ~0xfffull) : 0;
	err = remote_read(p->r, bias + sec.addr, blob, sizeof(blob));
	return err ? err : aio_layout_decode(&p->v, blob, sizeof(blob), l);
}

/* The module's own file first; then the binary holding the runtime (built in). */
int aio_find_layout(struct pyproc *p, struct aio_layout *l)
{
	char path[64];
	struct map_entry e;
	int err = -PBP_E_NOENT;
	FILE *f;

	if (!p->v.async_ok)
		return -PBP_E_VERSION;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	f = fopen(path, "re");
	if (!f)
		return -PBP_E_GONE;
	for (int pass = 0; pass < 2 && err == -PBP_E_NOENT; pass++) {
		rewind(f);
		while (err == -PBP_E_NOENT && maps_next(f, &e) == 0) {
			if (e.offset != 0 || e.path[0] != '/')
				continue;
			if (pass == 0 ? is_asyncio_module(e.path) : strcmp(e.path, p->binary) == 0)
				err = layout_at(p, &e, l);
		}
	}
	fclose(f);
	return err;
}

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return remote_read(ctx, addr, buf, len);
}

static bool seen_interp(const struct pythread *ts, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (ts[k].interp == ts[i].interp)
			return true;
	return false;
}

int aio_read_tasks(struct pyproc *p, const struct aio_layout *l, const struct pythread *ts,
		   size_t n, struct aio_graph *g)
{
	struct aio_mem m = { read_mem, p->r };
	struct aio_source *src = calloc(2 * n + 1, sizeof(*src));
	size_t ns = 0;
	int err;

	if (!src)
		return -PBP_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		src[ns] = (struct aio_source){ ts[i].tstate + l->ts_tasks_head, 0, (int)i };
		/* Unreadable: no running task, the list says the rest. */
		if (remote_ptr(p->r, ts[i].tstate + l->ts_running_task, &src[ns].running_task) != 0)
			src[ns].running_task = 0;
		ns++;
	}
	for (size_t i = 0; i < n; i++)
		if (!seen_interp(ts, i))
			src[ns++] = (struct aio_source){ ts[i].interp + l->is_tasks_head, 0, -1 };
	err = aio_graph_read(&m, &p->v, l, src, ns, g);
	free(src);
	return err;
}

/* Whether the object at addr is a task: its is_task byte says so. */
static bool is_task(struct pyproc *p, const struct aio_layout *l, uint64_t addr)
{
	uint8_t b = 0;

	return addr && remote_read(p->r, addr + l->task_is_task, &b, 1) == 0 && b == 1;
}

/* The first task of an awaited-by set: its table's first key that is one. */
static uint64_t first_in_set(struct pyproc *p, uint64_t set)
{
	const struct pyver *v = &p->v;
	uint64_t mask, table, key;

	if (remote_ptr(p->r, set + v->set_mask, &mask) != 0 || mask >= AIO_MAX_SET ||
	    remote_ptr(p->r, set + v->set_table, &table) != 0)
		return 0;
	for (uint64_t i = 0; i <= mask; i++)
		if (remote_ptr(p->r, table + 16 * i, &key) == 0 && key)
			return key;     /* a dummy (deleted) key fails is_task */
	return 0;
}

static uint64_t first_awaiter(struct pyproc *p, const struct aio_layout *l, uint64_t task)
{
	uint64_t by;
	uint8_t is_set;

	if (remote_ptr(p->r, task + l->task_awaited_by, &by) != 0 || !by ||
	    remote_read(p->r, task + l->task_awaited_by_is_set, &is_set, 1) != 0)
		return 0;
	return is_set ? first_in_set(p, by) : by;
}

int aio_list_sig(struct pyproc *p, const struct aio_layout *l, uint64_t tstate, uint64_t sig[2])
{
	return remote_read(p->r, tstate + l->ts_tasks_head, sig, 2 * sizeof(*sig));
}

int aio_running_task(struct pyproc *p, const struct aio_layout *l, uint64_t tstate, uint64_t *task)
{
	return remote_ptr(p->r, tstate + l->ts_running_task, task);
}

int aio_task_chain(struct pyproc *p, const struct aio_layout *l, uint64_t task,
		   uint64_t *tasks, size_t max, size_t *n)
{
	uint64_t t = task;

	*n = 0;
	while (*n < max && is_task(p, l, t)) {
		for (size_t i = 0; i < *n; i++)
			if (tasks[i] == t)
				return -PBP_E_CORRUPT;
		tasks[(*n)++] = t;
		t = first_awaiter(p, l, t);
	}
	return 0;
}

uint64_t aio_task_code(struct pyproc *p, const struct aio_layout *l, uint64_t task)
{
	uint64_t coro, code;

	if (remote_ptr(p->r, task + l->task_coro, &coro) != 0 || !coro ||
	    remote_ptr(p->r, coro + p->v.gen_iframe + p->v.k.fr_code, &code) != 0)
		return 0;
	return code & ~(uint64_t)p->v.k.exec_tag_bits;
}

void aio_task_name(struct pyproc *p, uint64_t name, char *out, size_t len)
{
	uint64_t n;

	if (pylong_read(p, name, &n) == 0)
		snprintf(out, len, "Task-%llu", (unsigned long long)n);
	else if (pystr_read_fresh(p->r, &p->v, name, 200, out, len) != 0)
		snprintf(out, len, "<unreadable>");
}
