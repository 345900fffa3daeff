/* SPDX-License-Identifier: MIT */
/*
 * The target table's index by pid (session/targets.c): whatever slots are
 * given, freed and given again, run_target_of finds the slot a walk of the
 * table in order finds, a pid held twice and a slot reused included, and
 * the index made again as stale entries fill it.
 */
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/run.h"
#include "unit.h"

#define SLOTS 32
#define PIDS 40         /* fewer pids than steps: the same pid is given again and again */

static char a_process;  /* what a slot holds is never read here: any pointer but NULL */

static struct target *walk(struct session *r, pid_t pid)
{
	for (int i = 0; i < r->ntargets; i++)
		if (r->targets[i].p && r->targets[i].pid == pid)
			return &r->targets[i];
	return NULL;
}

static struct session *table(void)
{
	struct session *r = calloc(1, sizeof(*r));

	CHECK(r != NULL);
	r->target_slots = SLOTS;
	r->o.max_processes = SLOTS;     /* every slot live at most: none is ever taken back */
	r->targets = calloc(SLOTS, sizeof(*r->targets));
	CHECK(r->targets != NULL);
	CHECK_EQ_INT(run_index_init(r), 0);
	return r;
}

static void table_free(struct session *r)
{
	free(r->index);
	free(r->targets);
	free(r);
}

/* Every pid, found as the walk finds it; how many were found at all. */
static int same_as_walk(struct session *r)
{
	int found = 0;

	for (pid_t pid = 0; pid <= PIDS; pid++) {
		struct target *t = run_target_of(r, pid);

		CHECK(t == walk(r, pid));
		found += t != NULL;
	}
	return found;
}

static void test_churn(void)
{
	struct session *r = table();
	int found = 0, twice = 0, remade = 0;

	srand(33);
	for (int step = 0; step < 20000; step++) {
		pid_t pid = 1 + rand() % PIDS;
		unsigned used = r->index_used;
		struct target *t;

		if (rand() % 3) {
			twice += walk(r, pid) != NULL;  /* given while another slot holds it */
			t = run_place_target(r, pid, (struct pyproc *)(void *)&a_process);
			if (t)
				t->alive = true;
		} else if (r->ntargets) {
			t = &r->targets[rand() % r->ntargets];
			t->p = NULL;                    /* freed, as target_fini does */
			if (rand() % 2)
				t->pid = 0;
		}
		remade += r->index_used < used;
		if (step % 7 == 0)
			found += same_as_walk(r);
	}
	CHECK(found > 1000);
	CHECK(twice > 100);
	CHECK(remade > 10);
	CHECK(2 * r->index_used <= r->index_size);
	table_free(r);
}

/* A slot given its pid in place (the -p list, the launched command), then indexed. */
static void test_in_place(void)
{
	struct session *r = table();

	for (int i = 0; i < 3; i++) {
		r->targets[i].p = (struct pyproc *)(void *)&a_process;
		r->targets[i].pid = 7;          /* -p 7,7,7: the first slot answers */
		r->ntargets++;
		run_index_target(r, &r->targets[i]);
	}
	CHECK(run_target_of(r, 7) == &r->targets[0]);
	r->targets[0].p = NULL;
	CHECK(run_target_of(r, 7) == &r->targets[1]);
	CHECK(run_target_of(r, 8) == NULL);
	table_free(r);
}

int main(void)
{
	test_churn();
	test_in_place();
	return unit_done("targets");
}
