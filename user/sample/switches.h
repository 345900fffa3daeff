/* SPDX-License-Identifier: MIT */
#ifndef PBP_SAMPLE_SWITCHES_H
#define PBP_SAMPLE_SWITCHES_H

#include <stdbool.h>
#include <stdint.h>

#include "pybpfprof.h"

/* A thread's scheduler state at a tick instant, from the kernel's record of its switches. */
struct sched_at {
	uint64_t switches;      /* its switches, counted when looked at */
	uint32_t after;         /* of them, how many came after the instant (when after_known) */
	bool after_known;       /* false: more than the ring keeps, after is its size */
	bool oncpu;             /* on CPU at the instant */
	bool oncpu_now;         /* on CPU when looked at */
	bool guessed;           /* the state at the instant is a guess: neither record reaches it */
	uint8_t off_reason;     /* enum pbp_off_reason at the instant, when off CPU */
};

/*
 * The state at instant (CLOCK_MONOTONIC ns, the kernel's clock) of the
 * thread whose kernel record is v, which the kernel goes on writing: its
 * present state if it has not switched since; else the kernel's record of
 * its state at that tick instant (tick_ns) when it is this one; else the
 * state after the newest switch of the ring at or before the instant.
 * With none (all came after it), the state before the oldest: exact when
 * the ring holds every switch the thread made, else a guess (guessed).
 */
void sched_state_at(const volatile struct pbp_tstate *v, uint64_t instant, struct sched_at *out);

#endif /* PBP_SAMPLE_SWITCHES_H */
