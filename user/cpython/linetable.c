// SPDX-License-Identifier: MIT
/*
 * Bytecode offset -> source line, for the three line-table formats CPython
 * has used since 3.8. The tables are copied out of the target's memory, so
 * they are untrusted: every read is bounds-checked against len, every loop
 * consumes at least one byte per turn (so it ends), and arithmetic is done in
 * int64_t with the running line kept inside int range (so it cannot wrap).
 *
 * Where the interpreter and this file could disagree, this file follows what
 * PyCode_Addr2Line() returns, because that is what frame.f_lineno and
 * tracebacks show. In particular a negative offset (a frame that has not run
 * its first instruction yet) gives co_firstlineno, as it does in CPython.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "cpython/linetable.h"
#include "cpython/pyver.h"

/* A byte as the signed char CPython stores line deltas in (3.8-3.10). */
static int sbyte(uint8_t b)
{
	return b < 0x80 ? (int)b : (int)b - 0x100;
}

/*
 * Add a delta to the running line. Real tables never leave int range; one
 * that does is corrupt, and stopping there keeps later sums from overflowing.
 */
static bool line_add(int64_t *line, int64_t delta)
{
	*line += delta;
	return *line >= INT_MIN && *line <= INT_MAX;
}

/* Lines are positive in real code; anything below 0 means "no line". */
static int line_result(int64_t line)
{
	return line < 0 ? -1 : (int)line;
}

/* ------------------------------------------------------ 3.8-3.9 co_lnotab */

/*
 * Pairs of (unsigned bytecode delta, signed line delta). The line of an
 * offset is firstlineno plus the line deltas of every pair whose cumulative
 * bytecode offset is <= off. An odd trailing byte is ignored, as CPython
 * does (it counts len / 2 pairs). There is no end marker, so offsets past
 * the code keep the last line: that is what the interpreter reports too.
 */
static int lnotab_addr2line(const uint8_t *tab, size_t len, int firstlineno, int64_t off)
{
	int64_t addr = 0, line = firstlineno;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > off)
			break;
		if (!line_add(&line, sbyte(tab[i + 1])))
			return -1;
	}
	return line_result(line);
}

/* -------------------------------------------------- 3.10 co_linetable */

/*
 * Pairs of (unsigned byte length of the range, signed line delta), each
 * range starting where the previous one ended. A line delta of -128 marks a
 * range with no line (and does not move the running line). Zero-length
 * ranges only carry a line delta, used to split deltas beyond +-127.
 * Offsets not covered by any range have no line.
 */
static int linetable310_addr2line(const uint8_t *tab, size_t len, int firstlineno, int64_t off)
{
	int64_t start = 0, line = firstlineno;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int64_t end = start + tab[i];
		int ldelta = sbyte(tab[i + 1]);
		bool noline = ldelta == -128;

		if (!noline && !line_add(&line, ldelta))
			return -1;
		/* Ranges are contiguous, so off >= start holds here. */
		if (off < end)
			return noline ? -1 : line_result(line);
		start = end;
	}
	return -1;
}

/* ------------------------------------------------ 3.11+ location table */

/*
 * Each entry starts with a byte that has bit 7 set; bits 3-6 are the form
 * (below) and bits 0-2 the number of 2-byte code units covered, minus 1.
 * The bytes that follow have bit 7 clear, which is how CPython itself finds
 * the next entry when it only wants lines, so this decoder does the same:
 * an entry extends to the next byte with bit 7 set.
 */
enum loc_form {
	LOC_SHORT_MAX = 9,      /* 0-9: same line, columns in one more byte */
	LOC_ONE_LINE0 = 10,     /* 10-12: line += form - 10, 2 column bytes */
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13,    /* line delta (svarint), no columns */
	LOC_LONG = 14,          /* line delta, end line delta, col+1, end col+1 */
	LOC_NONE = 15,          /* no location at all */
};

#define LOC_HEAD 0x80u
#define CODE_UNIT 2

/* Cursor over the bytes of one entry, after its head byte. */
struct loc_cur {
	const uint8_t *p;
	size_t pos, end;
	bool bad;               /* read past the entry or an oversized varint */
};

static unsigned loc_byte(struct loc_cur *c)
{
	if (c->pos >= c->end) {
		c->bad = true;
		return 0;
	}
	return c->p[c->pos++];
}

/*
 * Little-endian groups of 6 bits; bit 6 says another group follows. Values
 * past 32 bits do not occur (CPython writes ints) and would let later sums
 * overflow, so they are treated as corruption.
 */
static uint64_t loc_varint(struct loc_cur *c)
{
	uint64_t val = 0;
	unsigned shift = 0, b;

	do {
		b = loc_byte(c);
		if (c->bad || shift > 30) {
			c->bad = true;
			return 0;
		}
		val |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
	} while (b & 0x40);
	if (val > UINT32_MAX)
		c->bad = true;
	return val;
}

/* Sign in the low bit, magnitude above it. */
static int64_t loc_svarint(struct loc_cur *c)
{
	uint64_t u = loc_varint(c);

	return (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

/* One decoded entry: the byte range it covers and where it points. */
struct loc_entry {
	int64_t start, end;     /* byte offsets into the bytecode */
	int64_t line;           /* running line after this entry */
	bool noline;
};

/* Iterator over a location table. */
struct loc_iter {
	const uint8_t *tab;
	size_t len, pos;
	int64_t addr, line;
};

/*
 * Decode the entry at it->pos into e and step past it.
 * 1: decoded; 0: end of table; -1: corrupt.
 */
static int loc_next(struct loc_iter *it, struct loc_entry *e)
{
	if (it->pos >= it->len)
		return 0;
	uint8_t head = it->tab[it->pos];
	if (!(head & LOC_HEAD))
		return -1;

	struct loc_cur c = { .p = it->tab, .pos = it->pos + 1, .end = it->pos + 1 };
	while (c.end < it->len && !(it->tab[c.end] & LOC_HEAD))
		c.end++;
	it->pos = c.end;

	int form = head >> 3 & 15;
	int64_t delta = 0;

	e->start = it->addr;
	e->end = it->addr + ((head & 7) + 1) * CODE_UNIT;
	it->addr = e->end;
	e->noline = form == LOC_NONE;

	if (form == LOC_NO_COLUMNS || form == LOC_LONG)
		delta = loc_svarint(&c);
	else if (form >= LOC_ONE_LINE0 && form <= LOC_ONE_LINE2)
		delta = form - LOC_ONE_LINE0;
	if (c.bad || !line_add(&it->line, delta))
		return -1;
	/* The columns after the line delta are not read: only lines are named. */
	e->line = it->line;
	return 1;
}

/* Find the entry covering off. 1: found, 0: none covers it, -1: corrupt. */
static int loc_find(const uint8_t *tab, size_t len, int firstlineno, int64_t off,
		    struct loc_entry *e)
{
	struct loc_iter it = { .tab = tab, .len = len, .line = firstlineno };
	int rc;

	while ((rc = loc_next(&it, e)) > 0) {
		if (off < e->end)
			return 1;
	}
	return rc;
}

static int locations_addr2line(const uint8_t *tab, size_t len, int firstlineno, int64_t off)
{
	struct loc_entry e;

	if (loc_find(tab, len, firstlineno, off, &e) <= 0 || e.noline)
		return -1;
	return line_result(e.line);
}

/* ------------------------------------------------------------ dispatch */

int lt_addr2line(int kind, const uint8_t *tab, size_t len, int firstlineno, int64_t off)
{
	if (!tab && len)
		return -1;
	/* Before the first instruction CPython answers co_firstlineno. */
	if (off < 0)
		return line_result(firstlineno);
	switch (kind) {
	case LT_LNOTAB:
		return lnotab_addr2line(tab, len, firstlineno, off);
	case LT_LINETABLE310:
		return linetable310_addr2line(tab, len, firstlineno, off);
	case LT_LOCATIONS:
		return locations_addr2line(tab, len, firstlineno, off);
	default:
		return -1;
	}
}
