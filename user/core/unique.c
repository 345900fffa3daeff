/* SPDX-License-Identifier: MIT */
#include <stdatomic.h>

#include "core/unique.h"

static _Atomic uint64_t last;

uint64_t unique_next(void)
{
	return atomic_fetch_add(&last, 1) + 1;
}
