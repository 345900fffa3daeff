/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_BYTES_H
#define PBP_CORE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The u64 / u32 at byte offset off of b (unaligned is fine; off is not checked). */
uint64_t load_u64(const uint8_t *b, uint32_t off);
uint32_t load_u32(const uint8_t *b, uint32_t off);

#endif /* PBP_CORE_BYTES_H */
