/* SPDX-License-Identifier: MIT */
/*
 * The target table: a slot per profiled process (those gone whose last
 * samples wait in the ring buffer still included), how a process is
 * opened, placed and labelled, and the processes to look at again later
 * (just exec'd, or not Python yet).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "session/run.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/stagecpu.h"
#include "core/text.h"
#include "cpython/process.h"
#include "proc/cgroup.h"
#include "proc/discover.h"
#include "proc/procfs.h"
#include "proc/remote.h"
#include "sample/loop.h"
#include "sample/sampler.h"
#include "sample/target.h"

/* -p: a few processes, generous caches; -a: many, each kept small. */
const struct pyproc_limits run_target_limits = { 1024, 4096, 64 << 20 };
const struct pyproc_limits run_host_limits = { 64, 1024, 4 << 20 };

/*
 * The table's index by pid, so that a sample finds its target without a
 * look at every slot: open addressing, an entry a slot's number + 1 (0:
 * empty). Entries are never taken out: one whose slot was freed or given
 * to another pid is passed over, and when entries fill half the index it
 * is made again from the slots that hold a process. Every slot that
 * holds one is in it (run_index_target after each pid given).
 */
static unsigned pid_hash(pid_t pid, unsigned mask)
{
	uint32_t h = (uint32_t)pid * 0x9e3779b1u;

	return (h ^ (h >> 16)) & mask;
}

static bool holds(const struct session *r, int slot, pid_t pid)
{
	return slot < r->ntargets && r->targets[slot].p && r->targets[slot].pid == pid;
}

static void index_put(struct session *r, int slot)
{
	unsigned mask = r->index_size - 1, i;

	for (i = pid_hash(r->targets[slot].pid, mask); r->index[i]; i = (i + 1) & mask)
		if (r->index[i] == slot + 1)
			return;         /* given this pid before, and again */
	r->index[i] = slot + 1;
	r->index_used++;
}

/* Four entries a slot: made again, the live ones fill at most a quarter. */
int run_index_init(struct session *r)
{
	unsigned n = 4;

	while (n < 4 * (unsigned)r->target_slots)
		n *= 2;
	r->index = calloc(n, sizeof(*r->index));
	r->index_size = r->index ? n : 0;
	r->index_used = 0;
	return r->index ? 0 : -PBP_E_NOMEM;
}

void run_index_target(struct session *r, const struct target *t)
{
	if (2 * (r->index_used + 1) > r->index_size) {
		memset(r->index, 0, r->index_size * sizeof(*r->index));
		r->index_used = 0;
		for (int i = 0; i < r->ntargets; i++)
			if (r->targets[i].p && &r->targets[i] != t)
				index_put(r, i);
	}
	index_put(r, (int)(t - r->targets));
}

/* The first slot that holds pid, as a walk of the table in order would find it. */
struct target *run_target_of(struct session *r, pid_t pid)
{
	unsigned mask = r->index_size - 1;
	int best = -1;

	if (!r->index_size)
		return NULL;
	for (unsigned i = pid_hash(pid, mask); r->index[i]; i = (i + 1) & mask) {
		int slot = r->index[i] - 1;

		if (holds(r, slot, pid) && (best < 0 || slot < best))
			best = slot;
	}
	return best < 0 ? NULL : &r->targets[best];
}

int run_live_targets(const struct session *r)
{
	int n = 0;

	for (int i = 0; i < r->ntargets; i++)
		n += r->targets[i].p && r->targets[i].alive;
	return n;
}

bool run_all_free_threaded(const struct session *r)
{
	int n = 0;

	for (int i = 0; i < r->ntargets; i++) {
		if (!r->targets[i].p || !r->targets[i].alive)
			continue;
		if (!r->targets[i].p->v.free_threaded)
			return false;
		n++;
	}
	return n > 0;
}

uint64_t run_process_reads(const struct session *r)
{
	uint64_t n = r->c.reads_gone;

	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p)
			n += remote_stats(r->targets[i].p->r)->reads;
	return n;
}

bool pid_alive(pid_t pid)
{
	char st = proc_state(pid);

	return st != '?' && st != 'Z' && st != 'X';
}

/*
 * A signal 0, no /proc read: -a's look each minute at every target, idle
 * ones included, in case an exit event was lost. A zombie counts until it
 * is reaped; its exit event, when it came, had dropped it already.
 */
bool pid_exists(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

/*
 * A target's labels, and with -a (and several -p) the process named at the
 * root of each stack; the target keeps them for every window after this.
 */
void run_label_target(struct session *r, struct target *t)
{
	struct cgroup_info cg;
	char cmd[256], label[320];
	bool root = r->o.all || r->o.npids >= 2 || r->o.follow;

	struct proc_meta m = { .pid = (uint32_t)t->pid, .ns_pid = t->p->tids ? (uint32_t)t->p->ns_pid : 0 };

	stagecpu_enter(STAGE_LABELS);
	memset(&cg, 0, sizeof(cg));
	t->labels_cg = 0;
	t->labels_moved = false;
	cgroup_read_hashed(t->pid, &cg, &t->labels_cg);
	m.label[PL_PYTHON_VERSION] = t->p->version;
	m.label[PL_CONTAINER_ID] = cg.container_id;
	m.label[PL_POD_UID] = cg.pod_uid;
	if (r->o.describe)
		r->o.describe(r->o.describe_ctx, t->pid, &cg, &m);
	if (root) {
		cmd[0] = '\0';
		/* proc_cmdline's success is a length: only an error or "" falls back to the comm */
		if (r->o.process_name)
			r->o.process_name(r->o.describe_ctx, t->pid, cmd, sizeof(cmd));
		else if (proc_cmdline(t->pid, cmd, sizeof(cmd)) < 0)
			cmd[0] = '\0';
		if (!cmd[0])
			proc_thread_comm(t->pid, t->pid, cmd, sizeof(cmd));
		root_label(label, sizeof(label), "process", (uint32_t)t->pid,
			   t->p->tids ? (uint32_t)t->p->ns_pid : 0, cmd);
		utf8_scrub(label);      /* a command line is any bytes; profiles are UTF-8 */
	}
	target_set_labels(&r->c, t, &m, root ? label : NULL);
	r->c.labels_made++;
	stagecpu_leave();
}

/*
 * A target's labels change at an exec (the target is dropped then and
 * made anew) or a move to another cgroup, which with -a the kernel tells
 * (PBP_EV_CGROUP), else one read of /proc/PID/cgroup with no parse: true
 * when neither happened, and they are taken as made now. A container whose
 * runtime had not written its bundle when they were made (an id, no
 * Kubernetes names) is looked up again. A process that rewrites its own
 * argv (setproctitle) keeps the name it had when found.
 */
bool run_labels_hold(struct session *r, struct target *t)
{
	const struct proc_meta *m = t->meta;
	uint64_t h;
	bool held;

	if (r->o.describe && m && m->label[PL_CONTAINER_ID] && m->label[PL_CONTAINER_ID][0] &&
	    !(m->label[PL_NAMESPACE] && m->label[PL_NAMESPACE][0]))
		return false;
	stagecpu_enter(STAGE_LABELS);
	if (r->o.all)
		held = !t->labels_moved;
	else
		held = t->labels_cg && cgroup_hash(t->pid, &h) == 0 && h == t->labels_cg;
	if (held) {
		t->labels_ns = mono_ns();
		t->counted_labels = t->counted;
		r->c.labels_kept++;
	}
	stagecpu_leave();
	return held;
}

int run_start_target(struct session *r, struct target *t)
{
	int err = target_init(&r->c, t);

	if (!err)
		run_label_target(r, t);
	/* Its root held now, while it runs: a file it lacks is said in the page. */
	if (!err && r->roots)
		srcroots_add(r->roots, t->pid);
	return err;
}

/* Forget a target: its samples stay in the profile, its memory goes. */
void run_drop_target(struct session *r, struct target *t)
{
	if (!t->p)
		return;
	sampler_del_proc(r->c.smp, t->pid);
	target_fini(&r->c, t);
}

static const uint64_t recheck_ms[] = { 20, 200, 1000, 5000 };
/*
 * A target that exec'd is not sampled until its new program is known: its
 * interpreter (mapped at once if static, by the loader if not) is looked
 * for at once and then often, as for a launched command.
 */
static const uint64_t reexec_ms[] = { 1, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000 };

/* Look at pid again after the next delay; false: that was the last one, it is not Python. */
bool run_queue_pending(struct session *r, pid_t pid, int tries)
{
	const uint64_t *ms = r->o.all ? recheck_ms : reexec_ms;
	int n = r->o.all ? (int)(sizeof(recheck_ms) / sizeof(*ms)) : (int)(sizeof(reexec_ms) / sizeof(*ms));
	struct pending *p;

	if (r->npending >= MAX_PENDING || tries >= n)
		return false;
	p = &r->pending[r->npending++];
	p->pid = pid;
	p->tries = tries;
	p->next_ns = mono_ns() + ms[tries] * 1000000ull;
	return true;
}

/*
 * A free slot of the target table given to p as pid; NULL when
 * --max-processes live ones are taken. An exited target keeps its slot
 * until its last samples are read; when those fill the table, the oldest
 * gives way (what it had left to read is counted lost).
 */
struct target *run_place_target(struct session *r, pid_t pid, struct pyproc *p)
{
	struct target *t = NULL, *old = NULL;
	int live = 0;

	for (int i = 0; i < r->target_slots; i++) {
		struct target *x = &r->targets[i];

		if (!x->p)
			t = t ? t : x;
		else if (x->alive)
			live++;
		else if (!old || x->init_ns < old->init_ns)
			old = x;
	}
	if (live >= r->o.max_processes || (!t && !old))
		return NULL;
	if (!t) {
		run_drop_target(r, old);
		t = old;
	}
	t->pid = pid;
	t->p = p;
	if (t - r->targets >= r->ntargets)
		r->ntargets = (int)(t - r->targets) + 1;
	run_index_target(r, t);
	return t;
}

struct target *run_add_target(struct session *r, pid_t pid, struct pyproc *p)
{
	struct target *t = run_place_target(r, pid, p);

	if (!t) {
		pyproc_close(p);
		return NULL;
	}
	if (run_start_target(r, t) != 0) {
		run_drop_target(r, t);
		return NULL;
	}
	return t;
}

/*
 * pyproc_open, and gil mode refused for a free-threaded build: it has no GIL
 * to count (its GIL struct is never read: pygil_read), so every tick would
 * say "not held" and the profile would be empty.
 */
int run_open(const struct session *r, pid_t pid, const struct pyproc_limits *lim, struct pyproc **p)
{
	int err = pyproc_open(pid, lim, p);

	if (!err && r->c.o.mode == MODE_GIL && (*p)->v.free_threaded)
		err = -PBP_E_NOGIL;
	return err;
}
