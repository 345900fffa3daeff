/* SPDX-License-Identifier: MIT */
/*
 * One line of /proc/PID/maps, as the kernel writes it (fs/proc/task_mmu.c):
 *
 *   7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0
 *   7f3a1e2b4000-7f3a1e2d9000 r--p 00000000 fd:01 1319423      /usr/lib/libc.so.6
 *   55d0c81e6000-55d0c8207000 rw-p 00000000 00:00 0            [heap]
 *   7f3a1e400000-7f3a1e401000 r--p 00000000 fd:01 42           /tmp/a b (deleted)
 *
 * Fields are separated by exactly one space; the path, if any, follows the
 * padding after the inode and runs to the end of the line (the kernel
 * escapes '\n' inside names, so the first newline ends the line). Older
 * kernels leave one trailing space when there is no path. All the padding
 * is skipped: file paths start with '/' and pseudo-paths ("[heap]",
 * "anon_inode:...") with neither a space, so no path loses anything. A
 * trailing " (deleted)" stays in the path and also sets e->deleted. Numbers are
 * parsed by hand: no sscanf, so no silent overflow and no %s buffer risk.
 */
#include <string.h>
#include <sys/sysmacros.h>
#include <stdint.h>
#include <stddef.h>

#include "proc/maps.h"
#include "core/errors.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* At least one hex digit, value <= max. Returns the end, or NULL. */
static const char *parse_hex(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	int d;

	while ((d = hexval(*p)) >= 0) {
		if (v > (max - (uint64_t)d) / 16)
			return NULL;
		v = v * 16 + (uint64_t)d;
		p++;
	}
	if (p == s)
		return NULL;
	*out = v;
	return p;
}

static const char *parse_dec(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	while (*p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
		p++;
	}
	if (p == s)
		return NULL;
	*out = v;
	return p;
}

static const char *expect(const char *p, char c)
{
	return p && *p == c ? p + 1 : NULL;
}

int maps_parse_line(const char *line, struct map_entry *e)
{
	static const char suffix[] = " (deleted)";
	const size_t slen = sizeof(suffix) - 1;
	struct map_entry t;
	const char *p = line, *path, *nl;
	uint64_t major = 0, minor = 0;
	size_t len;

	if (!line || !e)
		return -PBP_E_INVAL;
	memset(&t, 0, sizeof(t));

	p = parse_hex(p, UINT64_MAX, &t.start);
	p = expect(p, '-');
	if (p)
		p = parse_hex(p, UINT64_MAX, &t.end);
	p = expect(p, ' ');
	if (!p || t.start > t.end)
		return -PBP_E_CORRUPT;

	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -PBP_E_CORRUPT;
	memcpy(t.perms, p, 4);
	t.perms[4] = '\0';
	p = expect(p + 4, ' ');

	if (p)
		p = parse_hex(p, UINT64_MAX, &t.offset);
	p = expect(p, ' ');
	if (p)      /* dev major:minor */
		p = parse_hex(p, UINT32_MAX, &major);
	p = expect(p, ':');
	if (p)
		p = parse_hex(p, UINT32_MAX, &minor);
	t.dev = makedev((unsigned)major, (unsigned)minor);
	p = expect(p, ' ');
	if (p)
		p = parse_dec(p, &t.inode);
	if (!p)
		return -PBP_E_CORRUPT;

	/* End of the fixed fields: end of line, or padding then the path. */
	if (*p != '\0' && *p != '\n' && *p != ' ')
		return -PBP_E_CORRUPT;
	while (*p == ' ')
		p++;
	path = p;
	nl = strchr(path, '\n');
	if (nl && nl[1] != '\0')
		return -PBP_E_CORRUPT;      /* more than one line */
	len = nl ? (size_t)(nl - path) : strlen(path);
	if (len >= sizeof(t.path))
		return -PBP_E_CORRUPT;
	memcpy(t.path, path, len);
	t.path[len] = '\0';
	t.deleted = len > slen && memcmp(t.path + len - slen, suffix, slen) == 0;

	*e = t;
	return 0;
}

int maps_next(FILE *f, struct map_entry *e)
{
	char line[1024];

	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') && !feof(f)) {
			int c;

			/* Longer than an entry's path can be: its rest is not a line of its own. */
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (maps_parse_line(line, e) == 0)
			return 0;
	}
	return -PBP_E_NOENT;
}
