/* SPDX-License-Identifier: MIT */
/* jsonw.c: commas at every nesting, strings escaped, numbers JSON can hold. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <stddef.h>
#include <stdbool.h>

#include "core/jsonw.h"
#include "unit.h"

static char *text;

static FILE *open_text(size_t *len)
{
	free(text);
	text = NULL;
	return open_memstream(&text, len);
}

static void test_nesting(void)
{
	struct jsonw w;
	size_t len;
	FILE *o = open_text(&len);

	jw_begin(&w, o);
	jw_u64(&w, "a", 18446744073709551615ull);
	jw_obj(&w, "o");
	jw_end_obj(&w);
	jw_arr(&w, "l");
	jw_obj(&w, NULL);
	jw_int(&w, "pid", -1);
	jw_bool(&w, "python", true);
	jw_bool(&w, "gone", false);
	jw_end_obj(&w);
	jw_obj(&w, NULL);
	jw_end_obj(&w);
	jw_end_arr(&w);
	jw_arr(&w, "e");
	jw_end_arr(&w);
	jw_str(&w, "n", NULL);
	jw_finish(&w);
	fclose(o);
	CHECK_EQ_STR(text, "{\"a\":18446744073709551615,\"o\":{},\"l\":[{\"pid\":-1,\"python\":true,\"gone\":false},{}],"
		     "\"e\":[],\"n\":null}\n");
}

static void test_strings_and_numbers(void)
{
	struct jsonw w;
	size_t len;
	FILE *o = open_text(&len);

	jw_begin(&w, o);
	/* a name the target chose: quote, backslash, newline, ESC, an invalid byte */
	jw_str(&w, "what", "a\"b\\c\n\x1b\xff");
	jw_num(&w, "x", 0.25);
	jw_num(&w, "nan", NAN);
	jw_num(&w, "inf", INFINITY);
	jw_num(&w, "s", 5.000123456);
	jw_finish(&w);
	fclose(o);
	CHECK_EQ_STR(text, "{\"what\":\"a\\\"b\\\\c\\u000a\\u001b\xef\xbf\xbd\",\"x\":0.25,"
		     "\"nan\":null,\"inf\":null,\"s\":5.00012346}\n");
}

int main(void)
{
	test_nesting();
	test_strings_and_numbers();
	free(text);
	return unit_done("test_jsonw");
}
