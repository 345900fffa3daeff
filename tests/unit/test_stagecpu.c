/* SPDX-License-Identifier: MIT */
/*
 * stagecpu.c: a nested stage stops its outer one's clock, so the stages
 * count each second once and sum to no more than the threads' CPU time;
 * nothing is counted before stagecpu_enable(). metrics.c: a family of rows
 * gets one HELP and TYPE.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "agent/metrics.h"
#include "core/stagecpu.h"
#include "unit.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* About ns of CPU, on this thread's clock. */
static void burn(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	volatile uint64_t x = 0;

	while (thread_cpu_ns() < end)
		x++;
}

static uint64_t sum(const uint64_t ns[STAGE__COUNT])
{
	uint64_t s = 0;

	for (int i = 0; i < STAGE__COUNT; i++)
		s += ns[i];
	return s;
}

static void test_off_until_enabled(void)
{
	uint64_t ns[STAGE__COUNT];

	stagecpu_thread(STAGE_OTHER);
	stagecpu_enter(STAGE_NAMING);
	burn(2000000);
	stagecpu_leave();
	stagecpu_flush();
	stagecpu_read(ns);
	CHECK_EQ_INT(sum(ns), 0);
}

/* other 10 ms, naming 20 ms around gzip 10 ms: each its own, the sum within the thread's time. */
static void *nested(void *arg)
{
	uint64_t *took = arg, t0 = thread_cpu_ns();

	stagecpu_thread(STAGE_OTHER);
	burn(10000000);
	stagecpu_enter(STAGE_NAMING);
	burn(10000000);
	stagecpu_enter(STAGE_GZIP);
	burn(10000000);
	stagecpu_leave();
	burn(10000000);
	stagecpu_leave();
	stagecpu_flush();
	*took = thread_cpu_ns() - t0;
	return NULL;
}

static void test_nesting(void)
{
	uint64_t ns[STAGE__COUNT], took = 0;
	pthread_t t;

	stagecpu_enable();
	pthread_create(&t, NULL, nested, &took);
	pthread_join(t, NULL);
	stagecpu_read(ns);
	CHECK(ns[STAGE_OTHER] >= 10000000 && ns[STAGE_OTHER] < 15000000);
	CHECK(ns[STAGE_NAMING] >= 20000000 && ns[STAGE_NAMING] < 25000000);
	CHECK(ns[STAGE_GZIP] >= 10000000 && ns[STAGE_GZIP] < 15000000);
	CHECK(sum(ns) <= took);
	CHECK_EQ_INT(ns[STAGE_HTTP] + ns[STAGE_DISCOVERY] + ns[STAGE_LABELS] + ns[STAGE_SLICES] + ns[STAGE_PPROF], 0);
	/* a thread without a base counts only what it enters */
	stagecpu_leave();       /* unbalanced: ignored */
	burn(2000000);
	stagecpu_enter(STAGE_HTTP);
	stagecpu_leave();
	stagecpu_flush();
	stagecpu_read(ns);
	CHECK(ns[STAGE_HTTP] < 1000000);
	CHECK_EQ_STR(stagecpu_name(STAGE_PPROF), "pprof");
	CHECK_EQ_STR(stagecpu_name(STAGE__COUNT), "?");
}

static void test_families(void)
{
	struct metric rows[] = {
		{ "a_total", "counter", "A.", 1, NULL },
		{ "b_seconds_total", "counter", "B.", 0.5, "stage=\"x\"" },
		{ "b_seconds_total", "counter", "B.", 2, "stage=\"y\"" },
	};
	char *body = NULL;
	size_t len = 0;

	CHECK_EQ_INT(metrics_format(rows, 3, &body, &len), 0);
	CHECK_EQ_STR(body, "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"
			   "# HELP b_seconds_total B.\n# TYPE b_seconds_total counter\n"
			   "b_seconds_total{stage=\"x\"} 0.5\nb_seconds_total{stage=\"y\"} 2\n");
	free(body);
}

int main(void)
{
	test_off_until_enabled();
	test_nesting();
	test_families();
	return unit_done("test_stagecpu");
}
