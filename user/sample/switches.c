// SPDX-License-Identifier: MIT
/*
 * Where a thread was at a tick instant. The loop looks some time after the
 * instant (it has to be woken, and on a loaded machine waits for a CPU), and
 * in that time a thread contending for a CPU can switch in and out several
 * times: flipping its present state once per late tick reads 50 % for every
 * such thread, whatever it really had. The kernel records instead each
 * thread's state at the last tick instant it switched across (tick_ns),
 * and its last PBP_SWITCH_RING switches with their instants, for a tick
 * looked at more than a period late (bpf/sched.bpf.h).
 */
#include <stdatomic.h>

#include "sample/switches.h"

/* Copies of the record that may be torn by a switch during the copy: retried. */
#define COPY_TRIES 4

static uint64_t entry_ns(uint64_t e)
{
	return e >> PBP_SWITCH_NS_SHIFT;
}

/* The state a ring entry says the thread was in: oncpu, or off for its reason. */
static void set_state(struct sched_at *out, bool oncpu, uint8_t reason)
{
	out->oncpu = oncpu;
	out->off_reason = oncpu ? PBP_OFF_NONE : reason;
}

/* How many of the ring's n newest switches came after instant (*known: it reaches back to it). */
static uint32_t switches_after(const uint64_t *ring, uint64_t s, uint32_t n, uint64_t instant, bool *known)
{
	uint32_t k;

	for (k = 0; k < n; k++)
		if (entry_ns(ring[(s - 1 - k) % PBP_SWITCH_RING]) <= instant)
			break;
	*known = k < n || s <= PBP_SWITCH_RING;
	return k;
}

void sched_state_at(const volatile struct pbp_tstate *v, uint64_t instant, struct sched_at *out)
{
	uint64_t ring[PBP_SWITCH_RING], s = 0, e, tick_ns = 0;
	uint32_t n;
	bool oncpu = false, tick_oncpu = false;
	uint8_t reason = 0, tick_reason = 0;

	for (int i = 0; i < COPY_TRIES; i++) {
		s = v->switches;
		atomic_thread_fence(memory_order_acquire);
		for (uint32_t k = 0; k < PBP_SWITCH_RING; k++)
			ring[k] = v->recent[k];
		oncpu = v->oncpu;
		reason = v->off_reason;
		tick_ns = v->tick_ns;
		tick_oncpu = v->tick_oncpu;
		tick_reason = v->tick_reason;
		atomic_thread_fence(memory_order_acquire);
		if (v->switches == s)
			break;
	}
	*out = (struct sched_at){ .switches = s, .oncpu_now = oncpu, .after_known = true };
	set_state(out, oncpu, reason);
	if (s == 0)
		return;         /* never switched: as /proc said when it was seen first */
	n = s < PBP_SWITCH_RING ? (uint32_t)s : PBP_SWITCH_RING;
	out->oncpu_now = ring[(s - 1) % PBP_SWITCH_RING] & PBP_SWITCH_ONCPU;
	out->after = switches_after(ring, s, n, instant, &out->after_known);
	if (out->after == 0) {
		e = ring[(s - 1) % PBP_SWITCH_RING];
	} else if (tick_ns == instant) {
		/* The kernel saw the instant pass at the first switch after it. */
		set_state(out, tick_oncpu, tick_reason);
		return;
	} else if (out->after < n) {
		e = ring[(s - 1 - out->after) % PBP_SWITCH_RING];
	} else {
		/*
		 * Every recorded switch came after the instant: it was in the state
		 * the oldest one left, and a switch in says where it had been off CPU.
		 */
		e = ring[(s - n) % PBP_SWITCH_RING];
		set_state(out, !(e & PBP_SWITCH_ONCPU), (uint8_t)(e & PBP_SWITCH_REASON));
		out->guessed = !out->after_known;
		return;
	}
	set_state(out, e & PBP_SWITCH_ONCPU, (uint8_t)(e & PBP_SWITCH_REASON));
}
