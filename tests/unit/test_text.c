/* SPDX-License-Identifier: MIT */
/* text.c: the one escaper of text from the target, and collapsed lines built on it. */
#include <stdlib.h>
#include <stdio.h>
#include <stdint.h>
#include <stddef.h>

#include "aggregate/aggregate.h"
#include "aggregate/status.h"
#include "core/text.h"
#include "output/writers.h"
#include "unit.h"

static char *esc(const char *s, enum text_esc how)
{
	static char buf[512];

	text_escape(buf, sizeof(buf), s, how);
	return buf;
}

static char *put(const char *s, enum text_esc how, size_t max_chars)
{
	static char *text;
	size_t len;
	FILE *o;

	free(text);
	text = NULL;
	o = open_memstream(&text, &len);
	text_put_cut(o, s, how, max_chars);
	fclose(o);
	return text;
}

static void test_plain(void)
{
	/* C0, DEL, C1 (U+009B, CSI), an invalid byte; UTF-8 and backslashes stay */
	CHECK_EQ_STR(esc("a\x1b[31mb\n\t\r\x01\x7f\xc2\x9b\xff\xc3\xa9\\x", TEXT_PLAIN),
		     "a\\x1b[31mb\\n\\t\\r\\x01\\x7f\\x9b\\xff\xc3\xa9\\x");
	CHECK_EQ_STR(esc("\xe5\x90\x8d \xf0\x9f\x98\x80", TEXT_PLAIN), "\xe5\x90\x8d \xf0\x9f\x98\x80");
	/* a surrogate, an overlong form, a cut character: each byte shown */
	CHECK_EQ_STR(esc("\xed\xa0\x80|\xc0\xaf|\xe5\x90", TEXT_PLAIN),
		     "\\xed\\xa0\\x80|\\xc0\\xaf|\\xe5\\x90");
	/* bidi embeddings, overrides, isolates (U+202A, U+202E, U+2066, U+2069); their neighbours stay */
	CHECK_EQ_STR(esc("a\xe2\x80\xaa" "b\xe2\x80\xae" "c\xe2\x81\xa6" "d\xe2\x81\xa9" "e", TEXT_PLAIN),
		     "a\\u202ab\\u202ec\\u2066d\\u2069e");
	CHECK_EQ_STR(esc("\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", TEXT_PLAIN),
		     "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa");
}

static void test_json_xml(void)
{
	CHECK_EQ_STR(esc("q\"b\\\n\x1b\x7f\xc2\x9b\xff<", TEXT_JSON),
		     "q\\\"b\\\\\\u000a\\u001b\\u007f\\u009b\xef\xbf\xbd<");
	CHECK_EQ_STR(esc("<&>\xe2\x80\xa8", TEXT_HTML_JSON), "\\u003c\\u0026\\u003e\\u2028");
	CHECK_EQ_STR(esc("\xe2\x80\xae\xe2\x81\xa7", TEXT_JSON), "\\u202e\\u2067");
	CHECK_EQ_STR(esc("<a&'\">\x1b\t\x7f\xc2\x9b\xff", TEXT_XML),
		     "&lt;a&amp;&#39;&quot;&gt;\xef\xbf\xbd\t&#x7f;&#x9b;\xef\xbf\xbd");
}

static void test_buffer_and_cut(void)
{
	char small[6];

	/* the whole length is returned; what fits stops before an escape that does not */
	CHECK_EQ_INT(text_escape(small, sizeof(small), "ab\x1b" "cd", TEXT_PLAIN), 8);
	CHECK_EQ_STR(small, "ab");
	CHECK_EQ_INT(text_escape(NULL, 0, "\n", TEXT_PLAIN), 2);
	CHECK_EQ_STR(put("h\xc3\xa9llo", TEXT_XML, 3), "h\xc3\xa9\xe2\x80\xa6");
	CHECK_EQ_INT(text_len("h\xc3\xa9\xff"), 3);
}

static void test_utf8(void)
{
	char s[] = "ok\xed\xa0\x80-\xe5\x90";

	CHECK_EQ_INT(utf8_seq_len((const unsigned char *)"\xc3\xa9"), 2);
	CHECK_EQ_INT(utf8_seq_len((const unsigned char *)"\xc2\x9b"), 2);   /* C1 is valid UTF-8 */
	CHECK_EQ_INT(utf8_seq_len((const unsigned char *)"\xed\xa0\x80"), 0);
	CHECK_EQ_INT(utf8_seq_len((const unsigned char *)"\xf4\x90\x80\x80"), 0);
	utf8_scrub(s);
	CHECK_EQ_STR(s, "ok?-?");
}

/* Lines are what counts: stacks apart only by tags, or by locations that read the same, are one. */
static void test_collapsed_lines(void)
{
	struct agg *a = agg_new();
	struct profile_meta m = { .mode = "wall", .hz = 99 };
	uint32_t f = (uint32_t)agg_loc(a, "f", "a.py", 1, LOC_PY);
	uint32_t semi = (uint32_t)agg_loc(a, "x;y", "", -1, LOC_PY);
	uint32_t colon = (uint32_t)agg_loc(a, "x:y", "", -1, LOC_PY);
	uint32_t nl = (uint32_t)agg_loc(a, "n\nl", "b\x1b.py", 2, LOC_PY);
	uint32_t s1[] = { f, semi }, s2[] = { f, colon }, s3[] = { nl };
	char *text = NULL;
	size_t len;
	FILE *o;

	for (uint32_t tid = 1; tid <= 3; tid++) {
		struct stack_tags t = { .pid = 5, .tid = tid, .status = tid % ST__COUNT };

		agg_add(a, &t, s1, 2, tid);
		agg_add(a, &t, s2, 2, 10);
		agg_add(a, &t, s3, 1, 100);
	}
	CHECK_EQ_INT(agg_nstacks(a), 9);
	o = open_memstream(&text, &len);
	CHECK_EQ_INT(collapsed_write(a, &m, o), 0);
	fclose(o);
	CHECK_EQ_STR(text, "f (a.py:1);x:y 36\nn\\nl (b\\x1b.py:2) 300\n");
	free(text);
	agg_free(a);
}

int main(void)
{
	test_plain();
	test_json_xml();
	test_buffer_and_cut();
	test_utf8();
	test_collapsed_lines();
	return unit_done("text");
}
