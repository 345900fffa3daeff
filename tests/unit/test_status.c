/* SPDX-License-Identifier: MIT */
/*
 * The table of statuses (status.c): every row complete and distinct, labels
 * found again, the classifier's cases, and the palettes the flame graphs
 * take from the table.
 */
#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "output/writers.h"
#include "unit.h"

static bool is_colour(const char *c)
{
	if (!c || strlen(c) != 7 || c[0] != '#')
		return false;
	for (int i = 1; i < 7; i++)
		if (!isxdigit((unsigned char)c[i]) || isupper((unsigned char)c[i]))
			return false;
	return true;
}

/* "[name]": the label is the name in brackets, nothing else. */
static bool label_matches_name(const struct status_info *r)
{
	size_t n = r->name ? strlen(r->name) : 0;

	return n && r->label && strlen(r->label) == n + 2 && r->label[0] == '[' &&
		strncmp(r->label + 1, r->name, n) == 0 && r->label[n + 1] == ']';
}

static void test_rows_complete(void)
{
	for (uint32_t s = 0; s < ST__COUNT; s++) {
		const struct status_info *r = status_info(s);

		CHECK(r->label && r->label[0]);
		CHECK(label_matches_name(r));
		CHECK(is_colour(r->colour));
		CHECK(r->mark > ' ' && r->mark < 0x7f);
		CHECK_EQ_INT(status_by_label(r->label), s);
		for (uint32_t t = 0; t < s; t++) {
			CHECK(strcmp(r->label, status_label(t)) != 0);
			CHECK(strcmp(r->colour, status_info(t)->colour) != 0);
			CHECK(r->mark != status_info(t)->mark);
		}
	}
}

static void test_lookups(void)
{
	CHECK(status_info(ST__COUNT) == status_info(ST_UNKNOWN));
	CHECK(status_info(UINT32_MAX) == status_info(ST_UNKNOWN));
	CHECK_EQ_STR(status_label(ST__COUNT + 7), "[unknown]");
	CHECK_EQ_INT(status_by_label("[unknown]"), ST_UNKNOWN);
	CHECK_EQ_INT(status_by_label("gil wait"), -PBP_E_NOENT);     /* the name is no label */
	CHECK_EQ_INT(status_by_label("[gil wait] "), -PBP_E_NOENT);
	CHECK_EQ_INT(status_by_label(""), -PBP_E_NOENT);
	/* What profiles already on disk say: these must not change. */
	CHECK_EQ_STR(status_label(ST_RUNNING), "[running]");
	CHECK_EQ_STR(status_label(ST_NATIVE), "[native, no GIL]");
	CHECK_EQ_STR(status_label(ST_GIL_WAIT), "[gil wait]");
	CHECK_EQ_STR(status_info(ST_GIL_WAIT)->colour, "#e0393e");
}

static void test_classify(void)
{
	/* on a CPU: the GIL decides; unknown counts as held */
	CHECK_EQ_INT(status_classify(true, PBP_OFF_NONE, false, false), ST_RUNNING);
	CHECK_EQ_INT(status_classify(true, PBP_OFF_NONE, true, true), ST_RUNNING);
	CHECK_EQ_INT(status_classify(true, PBP_OFF_NONE, true, false), ST_NATIVE);
	/* the last off-CPU reason is stale while on a CPU */
	CHECK_EQ_INT(status_classify(true, PBP_OFF_DISK, true, false), ST_NATIVE);
	/* off a CPU: the kernel's reason */
	CHECK_EQ_INT(status_classify(false, PBP_OFF_RUNNABLE, true, false), ST_RUNNABLE);
	CHECK_EQ_INT(status_classify(false, PBP_OFF_SLEEP, true, false), ST_SLEEPING);
	CHECK_EQ_INT(status_classify(false, PBP_OFF_NONE, false, false), ST_SLEEPING);
	CHECK_EQ_INT(status_classify(false, PBP_OFF_DISK, true, true), ST_DISK);
	/* SIGSTOP or a tracer: stopped, whatever it held (issue 30, item 11). */
	CHECK_EQ_INT(status_classify(false, PBP_OFF_STOPPED, true, true), ST_STOPPED);
	CHECK_EQ_INT(status_classify(false, PBP_OFF_STOPPED, false, false), ST_STOPPED);
	CHECK_EQ_INT(status_classify(false, PBP_OFF_GIL, true, false), ST_GIL_WAIT);
	CHECK_EQ_INT(status_classify(false, PBP_OFF_GIL, false, false), ST_GIL_WAIT);
	/* preempted in the futex call that just took the GIL */
	CHECK_EQ_INT(status_classify(false, PBP_OFF_GIL, true, true), ST_RUNNABLE);
	for (uint32_t r = 0; r < 256; r++) {
		CHECK(status_classify(false, (uint8_t)r, true, false) < ST__COUNT);
		CHECK(status_classify(false, (uint8_t)r, true, false) != ST_UNKNOWN);
	}
}

/* The whole page, as one string. */
static char *write_to_string(int (*writer)(const struct agg *, const struct profile_meta *, FILE *),
			     const struct agg *a)
{
	struct profile_meta m = { .mode = "wall", .hz = 99 };
	FILE *f = tmpfile();
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (writer(a, &m, f) == 0 && (n = ftell(f)) > 0 && (buf = calloc(1, (size_t)n + 1))) {
		rewind(f);
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

/* A stack ending in each status: the svg uses each colour, the html page carries the palette. */
static void test_palettes(void)
{
	struct agg *a = agg_new();
	uint32_t f = (uint32_t)agg_loc(a, "main", "app.py", 1, LOC_PY);
	char want[16 * ST__COUNT + 32] = "\"status_colour\":[";
	char *html, *svg;

	for (uint32_t s = 0; s < ST__COUNT; s++) {
		struct stack_tags t = { .pid = 1, .tid = 1, .status = s };
		uint32_t locs[] = { f, (uint32_t)agg_loc(a, status_label(s), NULL, -1, LOC_STATUS) };

		agg_add(a, &t, locs, 2, 1 + s);
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s\"%s\"", s ? "," : "",
			 status_info(s)->colour);
	}
	strcat(want, "]");
	html = write_to_string(html_write, a);
	svg = write_to_string(svg_write, a);
	CHECK(html && strstr(html, want));
	for (uint32_t s = 0; s < ST__COUNT; s++) {
		char fill[32];

		snprintf(fill, sizeof(fill), "fill=\"%s\"", status_info(s)->colour);
		CHECK(svg && strstr(svg, fill));
	}
	free(html);
	free(svg);
	agg_free(a);
}

int main(void)
{
	test_rows_complete();
	test_lookups();
	test_classify();
	test_palettes();
	return unit_done("status");
}
