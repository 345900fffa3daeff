/* SPDX-License-Identifier: MIT */
/*
 * str and bytes objects read out of a target. Everything read is
 * untrusted: lengths are capped and kinds checked before any copy.
 */
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "cpython/pystr.h"
#include "core/errors.h"
#include "core/text.h"
#include "cpython/pyver.h"
#include "proc/remote.h"

#define PYSTR_MAX_CHARS 4096    /* longer names are cut: nobody reads them */
#define HDR_MAX 128

struct strhdr {
	unsigned kind;          /* 1, 2 or 4 bytes per character */
	bool ascii, compact;
	size_t length;
	size_t data_off;        /* where the characters start, from the object */
};

/*
 * The state bitfield has kept this order on every version we support:
 * interned, kind:3, compact:1, ascii:1; interned is 2 bits, or a byte in a
 * free-threaded build (v->unicode_kind_shift).
 */
static int parse_header(const struct pyver *v, const uint8_t *obj, size_t n, struct strhdr *h)
{
	uint32_t state;
	int64_t length;

	if (v->unicode_state + 4 > n || v->unicode_length + 8 > n)
		return -PBP_E_CORRUPT;
	memcpy(&state, obj + v->unicode_state, 4);
	memcpy(&length, obj + v->unicode_length, 8);
	state >>= v->unicode_kind_shift;
	h->kind = state & 7;
	h->compact = (state >> 3) & 1;
	h->ascii = (state >> 4) & 1;
	if (length < 0 || (h->kind != 1 && h->kind != 2 && h->kind != 4))
		return -PBP_E_CORRUPT;
	if (h->ascii && (h->kind != 1 || !h->compact))
		return -PBP_E_CORRUPT;
	h->length = (size_t)length;
	h->data_off = h->ascii ? v->ascii_size : v->compact_size;
	return 0;
}

static size_t put_utf8(char *out, size_t room, uint32_t c)
{
	char b[4];
	size_t n;

	/* A lone surrogate (surrogateescape'd bytes) is not UTF-8; past 0x10FFFF no code point: '?'. */
	if ((c >= 0xd800 && c < 0xe000) || c >= 0x110000)
		b[0] = '?', n = 1;
	else
		n = utf8_encode(c, b);
	if (n > room)
		return 0;
	memcpy(out, b, n);
	return n;
}

/* chars holds h->length (capped) characters of h->kind bytes each. */
static int to_utf8(const struct strhdr *h, const uint8_t *chars, size_t count, char *out, size_t outlen)
{
	size_t w = 0;

	if (outlen == 0)
		return -PBP_E_NOMEM;
	for (size_t i = 0; i < count; i++) {
		uint32_t c;
		size_t k;

		if (h->kind == 1) {
			c = chars[i];
		} else if (h->kind == 2) {
			uint16_t u;
			memcpy(&u, chars + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, chars + 4 * i, 4);
		}
		k = put_utf8(out + w, outlen - 1 - w, c);
		if (!k)
			break;
		w += k;
	}
	out[w] = '\0';
	return 0;
}

int pystr_decode(const struct pyver *v, const uint8_t *obj, size_t objlen, char *out, size_t outlen)
{
	struct strhdr h;
	size_t count;
	int err = parse_header(v, obj, objlen, &h);

	if (err)
		return err;
	if (!h.compact || h.data_off > objlen)
		return -PBP_E_CORRUPT;
	count = h.length < PYSTR_MAX_CHARS ? h.length : PYSTR_MAX_CHARS;
	if (count > (objlen - h.data_off) / h.kind)
		return -PBP_E_CORRUPT;
	return to_utf8(&h, obj + h.data_off, count, out, outlen);
}

static int str_read(struct remote *r, const struct pyver *v, uint64_t addr, bool fresh,
		    size_t maxchars, char *out, size_t outlen, int64_t *hash)
{
	int (*read)(struct remote *, uint64_t, void *, size_t) =
		fresh ? remote_read : remote_read_cached;
	uint8_t hdr[HDR_MAX], *chars;
	struct strhdr h;
	uint64_t data;
	size_t count, hlen = v->compact_size + 8;
	int err;

	if (hlen > sizeof(hdr))
		return -PBP_E_CORRUPT;
	err = read(r, addr, hdr, hlen);
	if (err)
		return err;
	err = parse_header(v, hdr, hlen, &h);
	if (err)
		return err;
	if (hash && v->unicode_length + 16 > hlen)
		return -PBP_E_CORRUPT;
	if (hash)       /* read before the characters: see pystr_read_hashed */
		memcpy(hash, hdr + v->unicode_length + 8, 8);
	data = addr + h.data_off;
	if (!h.compact)  /* legacy string: the characters live elsewhere */
		memcpy(&data, hdr + v->compact_size, 8);
	count = h.length < maxchars ? h.length : maxchars;
	chars = malloc(count * h.kind + 1);
	if (!chars)
		return -PBP_E_NOMEM;
	err = read(r, data, chars, count * h.kind);
	if (!err)
		err = to_utf8(&h, chars, count, out, outlen);
	free(chars);
	return err;
}

int pystr_read(struct remote *r, const struct pyver *v, uint64_t addr, char *out, size_t outlen)
{
	return str_read(r, v, addr, false, PYSTR_MAX_CHARS, out, outlen, NULL);
}

int pystr_read_hashed(struct remote *r, const struct pyver *v, uint64_t addr, char *out,
		      size_t outlen, int64_t *hash)
{
	return str_read(r, v, addr, false, PYSTR_MAX_CHARS, out, outlen, hash);
}

int pystr_read_fresh(struct remote *r, const struct pyver *v, uint64_t addr, size_t maxchars,
		     char *out, size_t outlen)
{
	return str_read(r, v, addr, true, maxchars, out, outlen, NULL);
}

int pybytes_read(struct remote *r, const struct pyver *v, uint64_t addr, size_t maxlen,
		 uint8_t **out, size_t *outlen)
{
	int64_t size;
	uint8_t *buf;
	int err = remote_read_cached(r, addr + v->bytes_size, &size, sizeof(size));

	if (err)
		return err;
	if (size < 0 || (uint64_t)size > maxlen)
		return -PBP_E_CORRUPT;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -PBP_E_NOMEM;
	err = remote_read_cached(r, addr + v->bytes_sval, buf, (size_t)size);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outlen = (size_t)size;
	return 0;
}
