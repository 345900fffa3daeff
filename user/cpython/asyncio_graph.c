/* SPDX-License-Identifier: MIT */
/*
 * asyncio_graph.c: a process's asyncio tasks, how they chain and who awaits
 * whom, read from outside while it runs (3.14+).
 *
 * Where 3.14 keeps them (Modules/_asynciomodule.c, pycore_tstate.h): every
 * pending asyncio.Task is on a circular doubly linked list of struct
 * llist_node {next, prev} embedded in the task (task_node), headed in its
 * thread's _PyThreadStateImpl (asyncio_tasks_head), or in the interpreter's
 * when that thread has ended. A task leaves the list when it finishes, so a
 * listed task is pending, or running when it is its thread's
 * asyncio_running_task. Its coroutine (task_coro) embeds its frame
 * (gi_iframe); suspended in an await (gi_frame_state ==
 * FRAME_SUSPENDED_YIELD_FROM, -1) the awaited object is the top of that
 * frame's value stack (stackpointer[-1], a _PyStackRef: tag bits set), and
 * the chain goes on while that object is a coroutine of the same type.
 * task_awaited_by is NULL, one awaiting task, or (task_awaited_by_is_set) a
 * set of them. A coroutine awaiting a future (or a task) holds the future's
 * iterator (_asyncio.FutureIter, {PyObject_HEAD; future}), which is seen
 * through to the future, so that a task awaiting a task says which.
 *
 * Nothing is trusted: every list walk and chain is bounded, cycles end it,
 * each failure is counted in struct aio_stats and what was read is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "cpython/asyncio_graph.h"
#include "core/bytes.h"
#include "core/errors.h"
#include "cpython/asyncio_offsets.h"
#include "cpython/pyver.h"

#define FRAME_SUSPENDED_YIELD_FROM (-1)
#define FRAME_COMPLETED 1       /* this and above (FRAME_CLEARED, 4): no frame left */

/* Addresses seen, for cycles and for finding a task by address: open addressing. */
#define SEEN_SLOTS (2 * AIO_MAX_TASKS)

struct walk {
	const struct aio_mem *m;
	const struct pyver *v;
	const struct aio_layout *l;
	struct aio_graph *g;
	uint64_t seen[SEEN_SLOTS];      /* task addresses; index + 1 in slot_task */
	uint32_t slot_task[SEEN_SLOTS];
	uint64_t iter_type;             /* _asyncio.FutureIter's type once seen */
};

static int mem_rd(const struct aio_mem *m, uint64_t addr, void *buf, size_t len)
{
	if (addr == 0 || addr + len < addr)
		return -PBP_E_FAULT;
	return m->read(m->ctx, addr, buf, len);
}

static int mem_u64(const struct aio_mem *m, uint64_t addr, uint64_t *out)
{
	uint8_t b[8];
	int err = mem_rd(m, addr, b, sizeof(b));

	if (!err)
		*out = load_u64(b, 0);
	return err;
}

static int rd(const struct walk *w, uint64_t addr, void *buf, size_t len)
{
	return mem_rd(w->m, addr, buf, len);
}

static int rd_u64(const struct walk *w, uint64_t addr, uint64_t *out)
{
	return mem_u64(w->m, addr, out);
}

static size_t slot_of(uint64_t addr)
{
	return (size_t)((addr >> 3) * 0x9e3779b97f4a7c15ull >> 40) % SEEN_SLOTS;
}

/* The task at addr: its index, or -1. */
static long find_task(const struct walk *w, uint64_t addr)
{
	for (size_t i = slot_of(addr), k = 0; k < SEEN_SLOTS; i = (i + 1) % SEEN_SLOTS, k++) {
		if (w->seen[i] == 0)
			return -1;
		if (w->seen[i] == addr)
			return (long)w->slot_task[i] - 1;
	}
	return -1;
}

static void remember(struct walk *w, uint64_t addr, size_t idx)
{
	size_t i = slot_of(addr);

	while (w->seen[i] != 0)         /* never full: at most AIO_MAX_TASKS of 2x slots */
		i = (i + 1) % SEEN_SLOTS;
	w->seen[i] = addr;
	w->slot_task[i] = (uint32_t)idx + 1;
}

/* The task at addr: read it, check it is one, keep it. */
static int add_task(struct walk *w, uint64_t addr, int owner, bool running)
{
	const struct aio_layout *l = w->l;
	uint8_t obj[4096];
	struct aio_task *t;
	int err = rd(w, addr, obj, l->task_size);

	if (err)
		return err;
	if (l->legacy ? load_u64(obj, w->v->ob_type) != l->task_type : obj[l->task_is_task] != 1) {
		w->g->st.not_tasks++;
		return -PBP_E_CORRUPT;
	}
	t = &w->g->tasks[w->g->n];
	memset(t, 0, sizeof(*t));
	t->addr = addr;
	t->name = load_u64(obj, l->task_name);
	t->owner = owner;
	t->running = running;
	t->awaits_task = -1;
	if (l->legacy && l->task_fut_waiter + 8 <= l->task_size)
		t->fut_waiter = load_u64(obj, l->task_fut_waiter);
	remember(w, addr, w->g->n++);
	return 0;
}

/*
 * Past the bound the tasks are not read, only counted, so that the tasks a
 * profile leaves out are said: one read a node, bounded too.
 */
static void count_beyond(struct walk *w, const struct aio_source *s, uint64_t node)
{
	while (node != s->head && w->g->st.beyond < AIO_MAX_BEYOND && rd_u64(w, node, &node) == 0)
		w->g->st.beyond++;
}

/* One list: bounded by the tasks it may add, ended by a task already seen. */
static void walk_list(struct walk *w, const struct aio_source *s)
{
	uint64_t node;

	if (rd_u64(w, s->head, &node) != 0) {
		w->g->st.list_faults++;
		return;
	}
	while (node != s->head) {
		if (w->g->n >= AIO_MAX_TASKS) {
			w->g->st.list_long++;
			count_beyond(w, s, node);
			return;
		}
		if (node < w->l->task_node || find_task(w, node - w->l->task_node) >= 0) {
			w->g->st.list_cycles++;
			return;
		}
		if (add_task(w, node - w->l->task_node, s->owner, s->running_task == node - w->l->task_node) != 0 ||
		    rd_u64(w, node, &node) != 0) {
			w->g->st.list_faults++;
			return;
		}
	}
}

/* The object a coroutine suspended in an await awaits, from the top of its frame's stack. */
static int awaited(const struct walk *w, uint64_t frame_addr, const uint8_t *frame, uint64_t *obj)
{
	uint64_t sp = load_u64(frame, w->v->fr_stackpointer) & ~7ull;
	int err;

	if (w->l->legacy) {     /* before 3.14: an int, the stack's depth in localsplus */
		int32_t top = (int32_t)load_u32(frame, w->l->fr_stacktop);

		sp = top > 0 && top < 4096 ? frame_addr + w->l->fr_localsplus + 8u * (uint32_t)top : 0;
	}
	err = sp ? rd_u64(w, sp - 8, obj) : -PBP_E_CORRUPT;

	if (!err)
		*obj &= ~(uint64_t)w->v->k.exec_tag_bits;
	return err;
}

static bool in_chain(const uint64_t *coros, size_t n, uint64_t c)
{
	for (size_t i = 0; i < n; i++)
		if (coros[i] == c)
			return true;
	return false;
}

/* A type's tp_name (PyVarObject's header, then the name pointer), "" when unreadable. */
static void type_name(const struct walk *w, uint64_t type, char *out, size_t len)
{
	uint64_t name;

	out[0] = 0;
	if (rd_u64(w, type + w->v->ob_type + 16, &name) != 0)
		return;
	if (rd(w, name, out, len - 1) == 0) {
		out[len - 1] = 0;
		return;
	}
	for (size_t i = 0; i + 1 < len; i++) {      /* near the end of its mapping: bytewise */
		if (rd(w, name + i, out + i, 1) != 0 || out[i] == 0) {
			out[i] = 0;
			return;
		}
	}
	out[len - 1] = 0;
}

/* t awaits obj of type type: a future's iterator stands for its future. */
static void see_through(struct walk *w, struct aio_task *t, uint64_t obj, uint64_t type)
{
	size_t n;
	uint64_t fut, fut_type;

	t->awaits = obj;
	t->awaits_type = type;
	if (type != w->iter_type) {
		type_name(w, type, t->awaits_name, sizeof(t->awaits_name));
		n = strlen(t->awaits_name);
		if (n < 10 || strcmp(t->awaits_name + n - 10, "FutureIter") != 0)
			return;
		w->iter_type = type;    /* one type the whole process through: named once */
	}
	t->awaits_name[0] = 0;
	if (rd_u64(w, obj + w->v->ob_type + 8, &fut) == 0 && fut &&
	    rd_u64(w, fut + w->v->ob_type, &fut_type) == 0) {
		t->awaits = fut;
		t->awaits_type = fut_type;
		type_name(w, fut_type, t->awaits_name, sizeof(t->awaits_name));
	}
}

/* One coroutine: its frame into t; *next the coroutine it awaits, 0 for none. */
static int chain_step(struct walk *w, struct aio_task *t, uint64_t coro, uint64_t *next)
{
	const struct pyver *v = w->v;
	uint8_t gen[1024];
	size_t len = (size_t)v->gen_iframe + v->fr_size;
	const uint8_t *frame = gen + v->gen_iframe;
	uint64_t type, inner, inner_type;
	int err;

	*next = 0;
	if (len > sizeof(gen))
		return -PBP_E_CORRUPT;
	err = rd(w, coro, gen, len);
	if (err)
		return err;
	if ((int8_t)gen[v->gen_frame_state] >= FRAME_COMPLETED)
		return 0;
	t->frames[t->nframes].code = load_u64(frame, v->k.fr_code) & ~(uint64_t)v->k.exec_tag_bits;
	t->frames[t->nframes].instr = load_u64(frame, v->k.fr_instr);
	t->nframes++;
	if ((int8_t)gen[v->gen_frame_state] != FRAME_SUSPENDED_YIELD_FROM)
		return 0;
	/* Awaiting something else than a coroutine of its own type (a future): the chain ends. */
	type = load_u64(gen, v->ob_type);
	err = awaited(w, coro + v->gen_iframe, frame, &inner);
	if (!err && inner)
		err = rd_u64(w, inner + v->ob_type, &inner_type);
	if (!err && inner && inner_type == type)
		*next = inner;
	else if (!err && inner)
		see_through(w, t, inner, inner_type);
	return err;
}

static void read_chain(struct walk *w, struct aio_task *t)
{
	uint64_t coros[AIO_MAX_CHAIN];
	uint64_t coro;

	if (rd_u64(w, t->addr + w->l->task_coro, &coro) != 0) {
		t->chain_cut = true;
		w->g->st.chain_faults++;
		return;
	}
	t->coro = coro;
	while (coro) {
		if (t->nframes >= AIO_MAX_CHAIN) {
			w->g->st.chain_long++;
			break;
		}
		if (in_chain(coros, t->nframes, coro)) {
			w->g->st.chain_cycles++;
			break;
		}
		coros[t->nframes] = coro;
		if (chain_step(w, t, coro, &coro) != 0) {
			w->g->st.chain_faults++;
			break;
		}
	}
	t->chain_cut = coro != 0;
}

static void add_awaiter(struct walk *w, struct aio_task *t, uint64_t addr)
{
	long i = find_task(w, addr);

	if (i < 0 || t->nawaiters >= AIO_MAX_AWAITERS) {
		if (t->awaiters_unknown < UINT16_MAX)
			t->awaiters_unknown++;
		return;
	}
	for (unsigned k = 0; k < t->nawaiters; k++)
		if (t->awaiters[k] == (uint32_t)i)
			return;
	t->awaiters[t->nawaiters++] = (uint32_t)i;
}

/* A set's live keys. Deleted slots hold a dummy key, which is no task: it counts as unknown. */
static void read_set(struct walk *w, struct aio_task *t, uint64_t set)
{
	const struct pyver *v = w->v;
	uint8_t hdr[256], *table;
	uint64_t used, mask;
	/* The header up to the last of the three words read. */
	size_t hdr_len = (v->set_mask > v->set_used ? v->set_mask : v->set_used);

	hdr_len = (v->set_table > hdr_len ? v->set_table : hdr_len) + 8u;
	if (hdr_len > sizeof(hdr) || rd(w, set, hdr, hdr_len) != 0) {
		w->g->st.set_faults++;
		return;
	}
	used = load_u64(hdr, v->set_used);
	mask = load_u64(hdr, v->set_mask);
	if (mask >= AIO_MAX_SET || (mask & (mask + 1)) != 0 || used > mask + 1) {
		w->g->st.set_corrupt++;
		return;
	}
	table = malloc((mask + 1) * 16);
	if (!table || rd(w, load_u64(hdr, v->set_table), table, (mask + 1) * 16) != 0) {
		w->g->st.set_faults++;
		free(table);
		return;
	}
	for (uint64_t i = 0; i <= mask; i++)
		if (load_u64(table, (uint32_t)(16 * i)) != 0)
			add_awaiter(w, t, load_u64(table, (uint32_t)(16 * i)));
	free(table);
}

static void read_awaiters(struct walk *w, struct aio_task *t)
{
	uint8_t b[8], is_set;
	uint64_t by;

	if (w->l->legacy)
		return;         /* no awaited_by before 3.14: derived from what each awaits */
	if (rd(w, t->addr + w->l->task_awaited_by, b, 8) != 0 ||
	    rd(w, t->addr + w->l->task_awaited_by_is_set, &is_set, 1) != 0) {
		w->g->st.set_faults++;
		return;
	}
	by = load_u64(b, 0);
	if (!by)
		return;
	if (is_set)
		read_set(w, t, by);
	else
		add_awaiter(w, t, by);
}

/* Which task each awaits; before 3.14 that is also who awaits whom. */
static void resolve_awaits(struct walk *w)
{
	struct aio_graph *g = w->g;

	for (size_t i = 0; i < g->n; i++) {
		struct aio_task *t = &g->tasks[i];

		if (t->awaits)
			t->awaits_task = (int32_t)find_task(w, t->awaits);
		if (w->l->legacy && t->awaits_task >= 0)
			add_awaiter(w, &g->tasks[t->awaits_task], t->addr);
	}
}

int aio_graph_init(struct aio_graph *g)
{
	memset(g, 0, sizeof(*g));
	g->tasks = calloc(AIO_MAX_TASKS, sizeof(*g->tasks));
	return g->tasks ? 0 : -PBP_E_NOMEM;
}

void aio_graph_free(struct aio_graph *g)
{
	free(g->tasks);
	memset(g, 0, sizeof(*g));
}

static struct walk *walk_new(const struct aio_mem *m, const struct pyver *v, const struct aio_layout *l,
			     struct aio_graph *g)
{
	struct walk *w;

	if (l->task_size > 4096 || (!v->async_ok && !l->legacy))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->m = m;
	w->v = v;
	w->l = l;
	w->g = g;
	g->n = 0;
	memset(&g->st, 0, sizeof(g->st));
	return w;
}

/* All tasks first: an awaiter is joined by address to a task already read. */
static void walk_tasks(struct walk *w)
{
	for (size_t i = 0; i < w->g->n; i++) {
		read_chain(w, &w->g->tasks[i]);
		read_awaiters(w, &w->g->tasks[i]);
	}
	resolve_awaits(w);
	free(w);
}

int aio_graph_read(const struct aio_mem *m, const struct pyver *v, const struct aio_layout *l,
		   const struct aio_source *src, size_t nsrc, struct aio_graph *g)
{
	struct walk *w = walk_new(m, v, l, g);

	if (!w)
		return l->task_size > 4096 || !v->async_ok ? -PBP_E_CORRUPT : -PBP_E_NOMEM;
	for (size_t i = 0; i < nsrc; i++)
		walk_list(w, &src[i]);
	walk_tasks(w);
	return 0;
}

int aio_graph_read_given(const struct aio_mem *m, const struct pyver *v, const struct aio_layout *l,
			 const struct aio_given *tasks, size_t n, struct aio_graph *g)
{
	struct walk *w = l->legacy ? walk_new(m, v, l, g) : NULL;

	if (!w)
		return l->task_size > 4096 || !l->legacy ? -PBP_E_CORRUPT : -PBP_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (g->n >= AIO_MAX_TASKS) {
			g->st.list_long++;
			g->st.beyond += (unsigned)(n - i < AIO_MAX_BEYOND ? n - i : AIO_MAX_BEYOND);
			break;
		}
		if (find_task(w, tasks[i].addr) < 0 &&
		    add_task(w, tasks[i].addr, tasks[i].owner, tasks[i].running) == -PBP_E_FAULT)
			g->st.list_faults++;
	}
	walk_tasks(w);
	return 0;
}

/* Tasks by address, for joining a gather's children: sorted (address, index) pairs. */
struct by_addr {
	uint64_t addr;
	uint32_t idx;
};

static int by_addr_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct by_addr *)a)->addr, y = ((const struct by_addr *)b)->addr;

	return x < y ? -1 : x > y;
}

static long index_find(const struct by_addr *ix, size_t n, uint64_t addr)
{
	const struct by_addr key = { addr, 0 }, *hit = bsearch(&key, ix, n, sizeof(*ix), by_addr_cmp);

	return hit ? (long)hit->idx : -1;
}

/* Task awaiter awaits each child of the list at list that is among the tasks. */
static void link_children(const struct aio_mem *m, const struct pyver *v, const struct by_addr *ix,
			  uint32_t awaiter, uint64_t list, struct aio_graph *g)
{
	uint64_t size, items, *item;

	if (mem_u64(m, list + v->ob_type + 8, &size) != 0 || mem_u64(m, list + v->ob_type + 16, &items) != 0) {
		g->st.set_faults++;
		return;
	}
	if (size > AIO_MAX_TASKS) {     /* a gather of every task is no corruption */
		g->st.set_corrupt++;
		return;
	}
	item = malloc(size * 8 + 8);
	if (!item || (size && mem_rd(m, items, item, size * 8) != 0)) {
		g->st.set_faults++;
		free(item);
		return;
	}
	for (uint64_t i = 0; i < size; i++) {
		long c = index_find(ix, g->n, item[i]);
		struct aio_task *t = c >= 0 ? &g->tasks[c] : NULL;
		bool known = false;

		if (!t || (uint32_t)c == awaiter)
			continue;       /* finished, a nested gather's future, or itself: no link */
		for (unsigned k = 0; k < t->nawaiters; k++)
			known |= t->awaiters[k] == awaiter;
		if (!known && t->nawaiters < AIO_MAX_AWAITERS)
			t->awaiters[t->nawaiters++] = awaiter;
		else if (!known && t->awaiters_unknown < UINT16_MAX)
			t->awaiters_unknown++;
	}
	free(item);
}

int aio_graph_gathers(const struct aio_mem *m, const struct pyver *v, const struct aio_gather *gs,
		      size_t n, struct aio_graph *g)
{
	struct by_addr *ix;

	if (n == 0 || g->n == 0)
		return 0;
	ix = malloc(g->n * sizeof(*ix));
	if (!ix)
		return -PBP_E_NOMEM;
	for (size_t i = 0; i < g->n; i++)
		ix[i] = (struct by_addr){ g->tasks[i].addr, (uint32_t)i };
	qsort(ix, g->n, sizeof(*ix), by_addr_cmp);
	for (size_t i = 0; i < n; i++)
		if (gs[i].awaiter < g->n)
			link_children(m, v, ix, gs[i].awaiter, gs[i].children, g);
	free(ix);
	return 0;
}
