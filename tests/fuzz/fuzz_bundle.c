/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for bundle_parse(): arbitrary bytes as a container's
 * OCI config.json (the runtime writes it, but its annotations come from the
 * pod).
 *
 *   make fuzz            (all harnesses; see the Makefile)
 *   build/fuzz/fuzz_bundle -max_total_time=60 /tmp/fb tests/fuzz/corpus/bundle
 *
 * The input is handed over in an exact-size heap copy, not NUL-terminated,
 * so ASan catches any read past len. Besides ASan/UBSan it aborts when the
 * result is not 0 or -PBP_E_CORRUPT, a field is not NUL-terminated inside
 * its array or not valid UTF-8, the runtime is not one of the table's, a
 * failure or a bundle of no runtime leaves anything behind, or parsing the
 * same bytes twice disagrees.
 *
 * Seeds (tests/fuzz/corpus/bundle/): containerd's and CRI-O's config.json
 * (trimmed), a pause container's, no annotations, a cut file, invalid UTF-8
 * and escapes in values, over-long values, values of other JSON types.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/text.h"
#include "proc/bundle.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

/* NUL-terminated within size, and whole UTF-8 sequences up to the NUL. */
static void check_field(const char *s, size_t size)
{
	const unsigned char *p = (const unsigned char *)s;

	MUST(memchr(s, '\0', size) != NULL);
	while (*p) {
		size_t n = utf8_seq_len(p);

		MUST(n > 0);
		p += n;
	}
}

static void check(const struct kube_meta *m, int r)
{
	MUST(r == 0 || r == -PBP_E_CORRUPT);
	check_field(m->namespace_, sizeof(m->namespace_));
	check_field(m->pod, sizeof(m->pod));
	check_field(m->container, sizeof(m->container));
	check_field(m->pod_uid, sizeof(m->pod_uid));
	check_field(m->runtime, sizeof(m->runtime));
	MUST(!strcmp(m->runtime, "") || !strcmp(m->runtime, "containerd") || !strcmp(m->runtime, "cri-o"));
	/* a name only with the runtime whose keys gave it */
	if (r != 0 || !m->runtime[0])
		MUST(!m->namespace_[0] && !m->pod[0] && !m->container[0] && !m->pod_uid[0]);
	if (r != 0)
		MUST(!m->runtime[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_meta a, b;
	char *copy = malloc(size ? size : 1);
	int r;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&a, 0x5a, sizeof(a));
	r = bundle_parse(copy, size, &a);
	check(&a, r);
	memset(&b, 0xa5, sizeof(b));
	MUST(bundle_parse(copy, size, &b) == r);
	MUST(memcmp(&a, &b, sizeof(a)) == 0);
	free(copy);
	return 0;
}
