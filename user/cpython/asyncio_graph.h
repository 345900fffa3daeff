/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_ASYNCIO_GRAPH_H
#define PBP_CPYTHON_ASYNCIO_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct aio_layout;
struct pyver;

/* Bounds of one read of a process's task graph: memory read from it is untrusted. */
#define AIO_MAX_TASKS 32768     /* tasks kept, all lists together (pages touched only as used) */
#define AIO_MAX_CHAIN 64        /* coroutine frames of one task */
#define AIO_MAX_AWAITERS 16     /* awaiters of one task */
#define AIO_MAX_SET 4096        /* slots of an awaited-by set's table */
#define AIO_MAX_REGISTRY (8 * AIO_MAX_TASKS)    /* slots of a set of every task (before 3.14) */
#define AIO_MAX_BEYOND (1u << 20)       /* tasks past AIO_MAX_TASKS counted, not read */
/* Words of a task set's change detector (aio_list_sig, aio_legacy_sig): 4 a registry, 2 of them. */
#define AIO_SIG_WORDS 8

/* How the target's memory is read: 0 or -PBP_E_* (the fuzzer gives a buffer). */
struct aio_mem {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* One task list: a thread state's (owner >= 0: the thread's index) or an interpreter's. */
struct aio_source {
	uint64_t head;          /* address of the struct llist_node that heads it */
	uint64_t running_task;  /* the thread's asyncio_running_task, 0 if none */
	int owner;              /* the caller's thread index, -1: the interpreter's list */
};

struct aio_frame {
	uint64_t code;          /* code object (tag bits cleared) */
	uint64_t instr;         /* the frame's instr_ptr */
};

struct aio_task {
	uint64_t addr;
	uint64_t name;          /* task_name: a str, or an int (the n of "Task-n") */
	int owner;              /* the source's owner */
	bool running;           /* its thread's running task */
	bool chain_cut;         /* the chain ended on a bound or a failed read */
	uint8_t nframes;
	uint8_t nawaiters;
	uint16_t awaiters_unknown;      /* awaiters not among the tasks read (or past the bound) */
	/*
	 * What the innermost coroutine awaits, when it is suspended in an
	 * await of something other than a coroutine: the object (a future
	 * iterator is seen through to its future), its type, and that
	 * object's index among the tasks read when it is one (else -1).
	 */
	uint64_t awaits, awaits_type;
	uint64_t fut_waiter;    /* before 3.14: the future its step waits on (_fut_waiter) */
	uint64_t coro;          /* its coroutine (task_coro) */
	int32_t awaits_task;
	char awaits_name[32];   /* the type's tp_name, "" when unread */
	struct aio_frame frames[AIO_MAX_CHAIN];     /* outermost (the task's coroutine) first */
	uint32_t awaiters[AIO_MAX_AWAITERS];        /* indexes into the graph's tasks */
};

/* Every bounded failure, counted: a graph read from a running process is a best effort. */
struct aio_stats {
	unsigned list_faults;   /* a list read failed part way (a task freed mid-read) */
	unsigned list_cycles;   /* a list came back to a task it had given */
	unsigned list_long;     /* AIO_MAX_TASKS reached */
	unsigned beyond;        /* tasks past it: counted (up to AIO_MAX_BEYOND), left out */
	unsigned not_tasks;     /* a list node whose object is no task */
	unsigned chain_faults, chain_cycles, chain_long;
	unsigned set_faults, set_corrupt;
};

struct aio_graph {
	struct aio_task *tasks; /* AIO_MAX_TASKS of them, n used */
	size_t n;
	struct aio_stats st;
};

int aio_graph_init(struct aio_graph *g);
void aio_graph_free(struct aio_graph *g);
/*
 * Walk each source's task list, then every task's coroutine chain and
 * awaiters. Never fails on what it reads: what cannot be read is counted in
 * g->st and left out. Returns 0, or -PBP_E_NOMEM.
 */
int aio_graph_read(const struct aio_mem *m, const struct pyver *v, const struct aio_layout *l,
		   const struct aio_source *src, size_t nsrc, struct aio_graph *g);

/* A task found in a registry (before 3.14): its address, loop's thread and whether it runs. */
struct aio_given {
	uint64_t addr;
	int owner;
	bool running;
};

/*
 * The same from a list of task addresses (l->legacy): each kept when it is
 * an object of l->task_type (else counted in not_tasks), repeats once;
 * awaiters are the tasks whose innermost await is this task (no
 * awaited_by before 3.14; a gather's children: aio_graph_gathers).
 */
int aio_graph_read_given(const struct aio_mem *m, const struct pyver *v, const struct aio_layout *l,
			 const struct aio_given *tasks, size_t n, struct aio_graph *g);

/* Before 3.14: a task awaiting a gather's future, and that future's list of children. */
struct aio_gather {
	uint32_t awaiter;       /* index of the task among g's */
	uint64_t children;      /* the _GatheringFuture's _children, a list */
};

/*
 * Before 3.14 a gather's children record no awaiter; the future gather()
 * returns keeps them (_children), and the task whose _fut_waiter it is
 * awaits them all: each child among g's tasks gets that awaiter. A list is
 * a PyListObject (ob_size, then ob_item after the header); one unreadable
 * counts in set_faults, one longer than AIO_MAX_TASKS in set_corrupt.
 * Children not among the tasks (finished, or a nested gather's future) are
 * left out. 0, or -PBP_E_NOMEM.
 */
int aio_graph_gathers(const struct aio_mem *m, const struct pyver *v, const struct aio_gather *gs,
		      size_t n, struct aio_graph *g);

#endif /* PBP_CPYTHON_ASYNCIO_GRAPH_H */
