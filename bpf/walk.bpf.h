// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The frame walk: the Python frame chain of a thread state copied into a
 * sample, frame by frame (spans read whole where the layout allows), and
 * the GIL's state beside it.
 *
 * Part of profile.bpf.c, the one BPF object: included by it only, after
 * the knobs and in the order it lists.
 */
#ifndef PBP_BPF_WALK_H
#define PBP_BPF_WALK_H

static __always_inline int read_ptr(__u64 *out, __u64 addr)
{
	return bpf_probe_read_user(out, sizeof(*out), (const void *)addr);
}

static __always_inline bool is_shim(const struct pbp_offsets *o, __u64 frame, int *err)
{
	__u8 owner = 0;

	if (o->fr_owner == PBP_NOOFF)
		return false;
	*err = bpf_probe_read_user(&owner, 1, (const void *)(frame + o->fr_owner));
	return owner == o->owner_cstack || owner == o->owner_interp;
}

/* The fields of one frame the walk needs. */
struct frame_fields {
	__u64 code;            /* tag bits cleared */
	__u64 instr;
	__u64 prev;
	bool shim;             /* not a Python function's: an entry shim, or 3.14's base frame */
	bool entry;            /* 3.11: the frame's is_entry */
};

/* The fields a code object gives each frame (struct pbp_frame's). */
struct code_id {
	__u32 firstlineno, code_key;
};

/*
 * Within one walk a code object read once need not be read again: the
 * sampled thread is stopped, and each of its frames holds a reference to
 * its code object, so an address met twice in one walk is the same live
 * object. Where the kernel keeps no cache across samples (3.6-3.11, a 3.12
 * or 3.13 whose count is not known), a frame whose code object this walk
 * read last in its slot (a recursion's, a loop of wrappers') takes the
 * fields from there (code_near).
 */
#define NEAR_SLOTS 4

struct walk_ctx {
	struct pbp_offsets o;
	__u64 frame;
	__u32 n;
	int err;
	/* Offsets of the fields inside the span buffers, when fr_span / co_span. */
	__u32 r_prev, r_code, r_instr, r_owner;
	__u32 r_line, r_key, r_hname;
	bool fr_span, co_span;
	__u32 buf;             /* BUF_SAMPLE or BUF_SWITCH */
	/*
	 * 3.11+: the used part [chunk, top) of the data-stack chunk the walk
	 * is in, the thread state's first (top 0: none, or a copy of it
	 * faulted), and the part of it in bulkbufs, [wlo, whi). Counts of frames taken from the copy
	 * and read alone, and of copies.
	 */
	__u64 chunk, top, wlo, whi;
	__u64 older, older_top;    /* the chunk before: 0 not read yet, 1 none */
	__u32 nbulk, nread, ncopies;
	/*
	 * 3.12+: the code-object cache's key parts (cache: on); frames named
	 * without reading their code object (from the cache, or code_near) and with.
	 */
	__u64 interp, gen;
	__u32 epoch, nhit, nmiss;
	bool cache;
	__u32 tgid;
	__u64 coro;            /* coro_owner set: the outermost coroutine frame yet */
	bool fresh;            /* a code object never seen before: wake user space */
	/* The thread state's bytes [ts_lo, ts_hi) copied into the span buffer's co (ts_span). */
	__u32 ts_lo, ts_hi;
	/* No cache: the code objects this walk read last, by address (code_near). */
	__u64 near_code[NEAR_SLOTS];
	struct code_id near_id[NEAR_SLOTS];
};

/*
 * A walk's state lives in a per-CPU slot (one for the sampler, one for
 * switch-out copies), not on the stack: the stack is 512 bytes for the
 * program and every function it calls, and a walk is three deep in it
 * (program, step, a miss's keep). bpf_loop passes the step a pointer to
 * the slot.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct walk_ctx);
} walks SEC(".maps");

struct walk_ref {
	struct walk_ctx *c;
};

/* Masked offsets stay below PBP_SPAN_MAX whatever user space sent. */
#define SPAN_MASK (PBP_SPAN_MAX - 1)

static __always_inline __u64 span_u64(const __u8 *buf, __u32 rel)
{
	return *(const __u64 *)(buf + (rel & SPAN_MASK));
}

static __always_inline __u32 span_u32(const __u8 *buf, __u32 rel)
{
	return *(const __u32 *)(buf + (rel & SPAN_MASK));
}

/*
 * The span length as the verifier needs it bounded; span_check() has
 * already refused any length this clamp would change.
 */
static __always_inline __u32 span_len(__u16 len)
{
	__u32 n = len;

	return n > PBP_SPAN_MAX ? PBP_SPAN_MAX : n;
}

/* Returns 0, or <0 if the copy faulted and nothing was taken from it. */
static __always_inline int frame_by_span(struct walk_ctx *c, struct spanbuf *b,
					 struct frame_fields *ff)
{
	if (bpf_probe_read_user(b->fr, span_len(c->o.fr_span_len),
				(const void *)(c->frame + c->o.fr_span_lo)))
		return -1;
	ff->prev = span_u64(b->fr, c->r_prev);
	ff->code = span_u64(b->fr, c->r_code) & ~(__u64)c->o.exec_tag_bits;
	if (c->o.instr_is_int)
		ff->instr = (__u64)(__s64)(__s32)span_u32(b->fr, c->r_instr);
	else
		ff->instr = span_u64(b->fr, c->r_instr);
	ff->shim = false;
	if (c->o.fr_owner != PBP_NOOFF) {
		__u8 owner = b->fr[c->r_owner & SPAN_MASK];

		ff->shim = owner == c->o.owner_cstack || owner == c->o.owner_interp;
	}
	return 0;
}

/*
 * The chunk before the walk's one: its used part, [chunk, chunk + data +
 * 8 * top), where a _PyStackChunk keeps top (in words) once a newer chunk
 * is pushed. Two reads (the link, then the older chunk's header), once per
 * chunk the walk enters: a deep stack spans a few chunks of 16 KiB or more.
 */
#define CHUNK_DATA 24           /* offsetof(_PyStackChunk, data): previous, size, top */

static __always_inline void older_chunk(struct walk_ctx *c)
{
	__u64 prev = 0, hdr[3] = {};

	c->older = 1;           /* none */
	if (read_ptr(&prev, c->chunk) || !prev ||
	    bpf_probe_read_user(hdr, sizeof(hdr), (const void *)prev))
		return;
	/* hdr: previous, size (bytes, the header's included), top (words of data used) */
	if (hdr[1] > (1ull << 30) || hdr[2] > hdr[1] / 8 || CHUNK_DATA + hdr[2] * 8 > hdr[1])
		return;
	c->older = prev;
	c->older_top = prev + CHUNK_DATA + hdr[2] * 8;
}

/* The span [lo, hi) lies in the walk's chunk, or in the one before it, which it then enters. */
static __always_inline bool in_chunk(struct walk_ctx *c, __u64 lo, __u64 hi)
{
	if (lo >= c->chunk && hi <= c->top)
		return true;
	if (!c->older)
		older_chunk(c);
	if (c->older <= 1 || lo < c->older || hi > c->older_top)
		return false;
	c->chunk = c->older;
	c->top = c->older_top;
	c->older = 0;
	return true;
}

/*
 * A frame on the data stack, from the copy of a window of it: a window
 * ends at the first frame outside the last one and reaches down at most
 * BULK_WINDOW bytes, never below its chunk, whose words up to top have all
 * been written (a copy does not fault on a page never touched). One copy
 * per chunk usually holds every frame the walk takes.
 *
 * window_take moves the window to the span [lo, hi): 0, or <0 when the
 * span is elsewhere (a generator's frame, a shim on the C stack) or the
 * copy faulted (then no frame of this walk is taken from a copy). A global
 * function: the verifier checks it once, for any values, and not once per
 * step with the window's every bound; it runs once per chunk, not per frame.
 */
#define BULK_WINDOW (PBP_BULK_MAX - 8)   /* what a mask by PBP_BULK_MAX - 1 leaves whole */

__noinline int window_take(struct walk_ctx *c, __u64 lo, __u64 hi)
{
	__u64 start, len;
	struct bulkbuf *b;

	if (!c || !in_chunk(c, lo, hi))
		return -1;
	b = bpf_map_lookup_elem(&bulkbufs, &c->buf);
	if (!b)
		return -1;
	start = hi - c->chunk > BULK_WINDOW ? hi - BULK_WINDOW : c->chunk;
	len = hi - start;
	c->ncopies++;
	/* The mask changes nothing (len <= BULK_WINDOW): it bounds len for the verifier. */
	if (bpf_probe_read_user(b->data, len & (PBP_BULK_MAX - 1), (const void *)start)) {
		c->top = 0;
		return -1;
	}
	c->wlo = start;
	c->whi = start + len;
	return 0;
}

/*
 * The frame's fields from the window, moved first if it does not hold the
 * frame. Inlined in the step: a frame the window holds (nearly every one)
 * costs loads from the copy and no call. Returns 0, or <0: read it alone.
 */
static __always_inline int frame_by_bulk(struct walk_ctx *c, struct frame_fields *ff)
{
	__u64 lo = c->frame + c->o.fr_span_lo, hi = lo + span_len(c->o.fr_span_len);
	struct bulkbuf *b;
	__u32 at;

	if (!c->top || ((lo < c->wlo || hi > c->whi) && window_take(c, lo, hi)))
		return -1;
	b = bpf_map_lookup_elem(&bulkbufs, &c->buf);
	if (!b)
		return -1;
	at = (__u32)(lo - c->wlo);
	ff->prev = *(__u64 *)(b->data + ((at + c->r_prev) & (PBP_BULK_MAX - 1)));
	ff->code = *(__u64 *)(b->data + ((at + c->r_code) & (PBP_BULK_MAX - 1))) &
		   ~(__u64)c->o.exec_tag_bits;
	ff->instr = *(__u64 *)(b->data + ((at + c->r_instr) & (PBP_BULK_MAX - 1)));
	ff->shim = false;
	if (c->o.fr_owner != PBP_NOOFF) {
		__u8 owner = b->data[(at + c->r_owner) & (PBP_BULK_MAX - 1)];

		ff->shim = owner == c->o.owner_cstack || owner == c->o.owner_interp;
	}
	c->nbulk++;
	return 0;
}

/* One read per field: no span, or the span touched a page a field does not. */
static __always_inline int frame_by_field(const struct pbp_offsets *o, __u64 frame,
					  struct frame_fields *ff)
{
	int err = 0;

	ff->shim = is_shim(o, frame, &err);
	if (!err && !ff->shim) {
		err = read_ptr(&ff->code, frame + o->fr_code);
		ff->code &= ~(__u64)o->exec_tag_bits;
		if (o->instr_is_int) {
			__s32 lasti = 0;

			err |= bpf_probe_read_user(&lasti, sizeof(lasti),
						   (const void *)(frame + o->fr_instr));
			ff->instr = (__u64)(__s64)lasti;
		} else {
			err |= read_ptr(&ff->instr, frame + o->fr_instr);
		}
	}
	if (!err)
		err = read_ptr(&ff->prev, frame + o->fr_previous);
	return err;
}

/*
 * The key (pbp_code_key): the word's low bits and the name's hash. The
 * name is read at the sample, its thread stopped: an object complete, its
 * name's hash set if the interpreter set it. A name that cannot be read
 * adds nothing, as an uncomputed hash would: the frame is kept.
 */
static __always_inline __u32 code_key_of(const struct pbp_offsets *o, __u64 word, __u64 name)
{
	__s64 hash = -1;

	if (o->str_hash != PBP_NOOFF && name &&
	    bpf_probe_read_user(&hash, sizeof(hash), (const void *)(name + o->str_hash)))
		hash = -1;
	return pbp_code_key(word, hash);
}

static __always_inline int code_by_span(struct walk_ctx *c, struct spanbuf *b, __u64 code,
					struct pbp_frame *f)
{
	__u64 name = 0;

	if (bpf_probe_read_user(b->co, span_len(c->o.code_span_len),
				(const void *)(code + c->o.code_span_lo)))
		return -1;
	f->firstlineno = span_u32(b->co, c->r_line);
	if (c->o.code_hname != PBP_NOOFF)
		name = span_u64(b->co, c->r_hname);
	f->code_key = code_key_of(&c->o, span_u64(b->co, c->r_key), name);
	return 0;
}

static __always_inline int code_by_field(const struct pbp_offsets *o, __u64 code,
					 struct pbp_frame *f)
{
	__u64 key = 0, name = 0;
	__u32 line = 0;
	int err;

	err = bpf_probe_read_user(&line, sizeof(line), (const void *)(code + o->code_firstlineno));
	err |= read_ptr(&key, code + o->code_key);
	if (o->code_hname != PBP_NOOFF && read_ptr(&name, code + o->code_hname))
		name = 0;
	f->firstlineno = line;
	f->code_key = code_key_of(o, key, name);
	return err;
}


static __always_inline __u32 code_slot_of(__u64 code)
{
	return (__u32)((code >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (CODE_SLOTS - 1);
}

/*
 * 3.12+: the fields of the code object at code, if this CPU read them
 * while its interpreter's count was what the walk read at its start. A
 * code object is immutable, and the count rises as one is freed (3.14+)
 * or made (3.12, 3.13), before another can be at a freed one's address: an
 * address whose object was freed and reused since never matches. The
 * count was read before any field, so a slot kept during the walk holds
 * fields read after it. A hit, every frame of a steady stack, is inlined in
 * the step (a few loads and compares, no call); keeping a slot, a miss's
 * work, is a global function, verified once.
 */
static __always_inline int code_cached(struct walk_ctx *c, __u64 code, struct code_id *out)
{
	__u32 i = code_slot_of(code);
	struct code_slot *e = bpf_map_lookup_elem(&codecache, &i);

	if (!e || e->code != code || e->gen != c->gen || e->interp != c->interp ||
	    e->tgid != c->tgid || e->epoch != c->epoch)
		return -1;
	out->firstlineno = e->firstlineno;
	out->code_key = e->code_key;
	return 0;
}

__noinline int code_keep(struct walk_ctx *c, __u64 code, __u32 firstlineno, __u32 code_key)
{
	__u32 i = code_slot_of(code);
	struct code_slot *e = bpf_map_lookup_elem(&codecache, &i);

	if (!c || !e)
		return -1;
	e->code = code;
	e->interp = c->interp;
	e->gen = c->gen;
	e->tgid = c->tgid;
	e->epoch = c->epoch;
	e->firstlineno = firstlineno;
	e->code_key = code_key;
	return 0;
}

static __always_inline __u32 near_slot_of(__u64 code)
{
	return (__u32)(code >> 4) & (NEAR_SLOTS - 1);
}

/* No cache: the fields of the code object at code, if this walk read it last in its slot. */
static __always_inline int code_near(struct walk_ctx *c, __u64 code, struct code_id *out)
{
	__u32 i = near_slot_of(code);

	if (!code || c->near_code[i] != code)
		return -1;
	*out = c->near_id[i];
	return 0;
}

static __always_inline void code_near_keep(struct walk_ctx *c, __u64 code, const struct pbp_frame *f)
{
	__u32 i = near_slot_of(code);

	c->near_code[i] = code;
	c->near_id[i].firstlineno = f->firstlineno;
	c->near_id[i].code_key = f->code_key;
}

/* Two words, by name: an index computed from i is one the verifier cannot bound. */
_Static_assert(PBP_MAX_FRAMES == 128, "set_entry knows two words of .entries");
static __always_inline void set_entry(struct pbp_sample *s, __u32 i)
{
	__u64 bit = 1ull << (i & 63);

	if (i < 64)
		s->entries[0] |= bit;
	else if (i < PBP_MAX_FRAMES)
		s->entries[1] |= bit;
}

/*
 * --native: which frames began an activation of the evaluation loop. 3.12+:
 * the frame copied last, when a shim comes after it (the loop's entry frame:
 * owned by the C stack on 3.12 and 3.13, by the interpreter on 3.14; 3.14's
 * base frame under a thread's first frame is the interpreter's too, and
 * marks that first frame, which begins the outermost group anyway); 3.11: the
 * frame about to be copied, when its is_entry byte says so.
 */
static __always_inline void mark_entry(struct walk_ctx *c, struct pbp_sample *s,
				       struct frame_fields *ff)
{
	__u8 entry = 0;

	if (ff->shim && c->n > 0)
		set_entry(s, c->n - 1);
	if (!ff->shim && c->o.fr_is_entry != PBP_NOOFF &&
	    bpf_probe_read_user(&entry, 1, (const void *)(c->frame + c->o.fr_is_entry)) == 0 && entry)
		set_entry(s, c->n);
	if (c->o.fr_is_entry != PBP_NOOFF || c->o.fr_owner != PBP_NOOFF)
		s->flags |= PBP_F_ENTRIES;
}

/*
 * 3.11 to 3.13 keep no running task where the kernel can read it: the
 * outermost coroutine frame stands for it (the walk goes outwards, so the
 * last one seen), one byte read a frame, and only when --async asks.
 */
static __always_inline void note_coro(struct walk_ctx *c)
{
	__u8 owner = 0;

	if (c->o.coro_owner && c->o.coro_owner != PBP_NOOFF &&
	    bpf_probe_read_user(&owner, 1, (const void *)(c->frame + c->o.coro_owner)) == 0 &&
	    owner == c->o.owner_gen)
		c->coro = c->frame;
}

/*
 * One frame of the walk: 0 to go on, 1 to stop. A frame is counted only
 * when all its reads succeeded. Most come from the data-stack window and
 * the code cache, read nothing and call nothing; one read alone costs a
 * copy of its span (a span copy that faults, as it may on a page the
 * fields themselves do not reach, is retried field by field, so spans
 * never lose a frame the old reads would have got), and a code object
 * not cached a copy of its own.
 */
static __always_inline long walk_frame(struct walk_ctx *c)
{
	struct frame_fields ff = {};
	struct code_id id = {};
	struct pbp_sample *s;
	struct spanbuf *b;
	struct pbp_frame *f;

	if (!c->frame)
		return 1;
	s = bpf_map_lookup_elem(&scratch, &c->buf);
	b = bpf_map_lookup_elem(&spanbufs, &c->buf);
	if (!s || !b)
		return 1;
	if (c->fr_span && frame_by_bulk(c, &ff) == 0)
		goto found;
	c->nread++;
	if (!c->fr_span || frame_by_span(c, b, &ff))
		c->err = frame_by_field(&c->o, c->frame, &ff);
	if (c->err)
		return 1;
found:
	if (entry_marks)
		mark_entry(c, s, &ff);
	if (!ff.shim) {
		if (c->n >= PBP_MAX_FRAMES)
			return 1;
		f = &s->frames[c->n & (PBP_MAX_FRAMES - 1)];
		f->code = ff.code;
		f->instr = ff.instr;
		/*
		 * A hit needs no first sight: the miss that filled the slot
		 * looked at this very key (the same address, first line and
		 * name) and set its bit, which nothing clears. That spares a
		 * random line of "seen" per frame.
		 */
		if (c->cache ? code_cached(c, ff.code, &id) == 0 : code_near(c, ff.code, &id) == 0) {
			f->firstlineno = id.firstlineno;
			f->code_key = id.code_key;
			c->nhit++;
		} else {
			if (!c->co_span || code_by_span(c, b, ff.code, f))
				c->err = code_by_field(&c->o, ff.code, f);
			if (c->err)
				return 1;
			c->nmiss++;
			if (c->cache)
				code_keep(c, ff.code, f->firstlineno, f->code_key);
			else
				code_near_keep(c, ff.code, f);
			c->fresh |= first_sight(seen_key(c->tgid, f));
		}
		c->n++;
		note_coro(c);
	}
	c->frame = ff.prev;
	return 0;
}

/*
 * A step of bpf_loop, which the verifier checks once whatever the count:
 * two frames a step, as a step's call and return cost about what a frame
 * from the window does.
 */
#define WALK_PER_STEP 2
_Static_assert(WALK_PER_STEP == 2, "walk_step walks two frames");

static long walk_step(__u32 i, void *vref)
{
	struct walk_ctx *c = ((struct walk_ref *)vref)->c;

	if (walk_frame(c))
		return 1;
	return walk_frame(c);
}

/* A field of width bytes at off lies inside the span [lo, lo + len): its place there. */
static __always_inline bool in_span(__u16 off, __u32 width, __u16 lo, __u16 len, __u32 *rel)
{
	if (off == PBP_NOOFF || off < lo || (__u32)(off - lo) + width > len)
		return false;
	*rel = off - lo;
	return true;
}

/*
 * User space checked the spans; checking again here costs a few compares
 * per sample and keeps a wrong one from reading stale buffer bytes.
 */
static __always_inline void span_check(struct walk_ctx *c)
{
	const struct pbp_offsets *o = &c->o;
	__u16 lo = o->fr_span_lo, len = o->fr_span_len;

	c->fr_span = len > 0 && len <= PBP_SPAN_MAX &&
		in_span(o->fr_previous, 8, lo, len, &c->r_prev) &&
		in_span(o->fr_code, 8, lo, len, &c->r_code) &&
		in_span(o->fr_instr, o->instr_is_int ? 4 : 8, lo, len, &c->r_instr) &&
		(o->fr_owner == PBP_NOOFF || in_span(o->fr_owner, 1, lo, len, &c->r_owner));
	lo = o->code_span_lo;
	len = o->code_span_len;
	c->co_span = len > 0 && len <= PBP_SPAN_MAX &&
		in_span(o->code_firstlineno, 4, lo, len, &c->r_line) &&
		in_span(o->code_key, 8, lo, len, &c->r_key) &&
		(o->code_hname == PBP_NOOFF || in_span(o->code_hname, 8, lo, len, &c->r_hname));
}

/*
 * The thread state's fields a walk reads (its frame, data stack,
 * interpreter, running task) lie within a few hundred bytes of each other:
 * one copy of the span they cover, into the span buffer's co (free until
 * the walk's first code object), not a read each. A field that would make
 * the span longer than PBP_SPAN_MAX stays out of it, and is read alone, as
 * is every field when the copy faults (ts_hi stays 0).
 */
static __always_inline void widen(__u32 *lo, __u32 *hi, __u16 off, __u32 width)
{
	__u32 l = off < *lo ? off : *lo, h = off + width > *hi ? off + width : *hi;

	if (off == PBP_NOOFF || h - l > PBP_SPAN_MAX)
		return;
	*lo = l;
	*hi = h;
}

static __always_inline void ts_span(struct walk_ctx *c, struct spanbuf *b, __u64 tstate, bool ds,
				    bool interp)
{
	const struct pbp_offsets *o = &c->o;
	__u32 lo = o->ts_frame, hi = o->ts_frame + 8;

	if (ds)
		widen(&lo, &hi, o->ts_datastack, 16);
	if (interp)
		widen(&lo, &hi, o->ts_interp, 8);
	if (o->ts_running_task)
		widen(&lo, &hi, o->ts_running_task, 8);
	/* 8 <= hi - lo <= PBP_SPAN_MAX: the mask changes nothing, and bounds it for the verifier. */
	if (bpf_probe_read_user(b->co, ((hi - lo - 1) & (PBP_SPAN_MAX - 1)) + 1, (const void *)(tstate + lo)))
		return;
	c->ts_lo = lo;
	c->ts_hi = hi;
}

static __always_inline int ts_ptr(struct walk_ctx *c, struct spanbuf *b, __u64 tstate, __u32 off,
				  __u64 *out)
{
	if (off >= c->ts_lo && off + 8 <= c->ts_hi) {
		*out = span_u64(b->co, off - c->ts_lo);
		return 0;
	}
	return read_ptr(out, tstate + off);
}

static __always_inline __u64 first_frame(struct walk_ctx *c, struct spanbuf *b, __u64 tstate)
{
	__u64 frame = 0;

	c->err = ts_ptr(c, b, tstate, c->o.ts_frame, &frame);
	if (!c->err && frame && c->o.cframe_current != PBP_NOOFF)
		c->err = read_ptr(&frame, frame + c->o.cframe_current);
	return frame;
}

/*
 * The thread's data-stack chunk and its top (neighbours in every version
 * that has them). A chunk larger than any CPython makes is not believed.
 */
static __always_inline void data_stack(struct walk_ctx *c, struct spanbuf *b, __u64 tstate)
{
	__u64 ds[2] = {};

	if (ts_ptr(c, b, tstate, c->o.ts_datastack, &ds[0]) ||
	    ts_ptr(c, b, tstate, c->o.ts_datastack + 8, &ds[1]) ||
	    !ds[0] || ds[1] <= ds[0] || ds[1] - ds[0] > (1ull << 30))
		return;
	c->chunk = ds[0];
	c->top = ds[1];
}

/*
 * The thread's interpreter and its count, read before any code object is:
 * the code-object cache's key for this walk. 3.14+ counts code objects
 * freed; 3.13 (in the interpreter) and 3.12 (one count for the process, at
 * code_count) count those made, a __u32 that stays 0 once it wrapped: then
 * it no longer moves, and there is no cache. Not read, no cache.
 */
static __always_inline void code_gen(struct walk_ctx *c, struct spanbuf *b, __u64 tstate,
				     __u64 code_count)
{
	__u64 interp = 0, gen = 0;
	__u32 made = 0;

	if (ts_ptr(c, b, tstate, c->o.ts_interp, &interp) || !interp)
		return;
	if (c->o.is_code_gen != PBP_NOOFF) {
		if (read_ptr(&gen, interp + c->o.is_code_gen))
			return;
	} else {
		if (!code_count)
			code_count = interp + c->o.is_code_new;
		if (bpf_probe_read_user(&made, sizeof(made), (const void *)code_count) || !made)
			return;
		gen = made;
	}
	c->interp = interp;
	c->gen = gen;
	c->cache = true;
}

/* On a fault or at the bound, .resume names the first frame not copied, for user space. */
static __always_inline bool walk(struct pbp_sample *s, const struct pbp_proc *p, __u64 tstate,
				 __u32 buf)
{
	const struct pbp_offsets *o = &p->off;
	struct walk_ctx *c = bpf_map_lookup_elem(&walks, &buf);
	struct spanbuf *b = bpf_map_lookup_elem(&spanbufs, &buf);
	struct walk_ref ref = { .c = c };
	bool ds, interp;

	if (!c || !b)
		return false;
	__builtin_memset(c, 0, sizeof(*c));
	c->o = *o;
	c->buf = buf;
	c->tgid = s->tgid;
	c->epoch = p->epoch;
	span_check(c);
	ds = c->fr_span && !o->instr_is_int && o->ts_datastack != PBP_NOOFF;
	interp = c->epoch && o->ts_interp != PBP_NOOFF &&
		 (o->is_code_gen != PBP_NOOFF || p->code_count ||
		  (o->is_code_new != PBP_NOOFF && o->is_code_new));
	ts_span(c, b, tstate, ds, interp);
	if (o->ts_running_task) {
		__u64 task = 0;

		/* With the stack, the task it belongs to: user space names it later. */
		if (ts_ptr(c, b, tstate, o->ts_running_task, &task) == 0) {
			s->task = task;
			s->flags |= PBP_F_TASK;
		}
	}
	c->frame = first_frame(c, b, tstate);
	if (!c->err && ds)
		data_stack(c, b, tstate);
	if (!c->err && interp)
		code_gen(c, b, tstate, p->code_count);
	if (!c->err)
		bpf_loop((MAX_WALK + WALK_PER_STEP - 1) / WALK_PER_STEP, walk_step, &ref, 0);
	stat_add(PBP_STAT_CODE_HITS, c->nhit);
	stat_add(PBP_STAT_CODE_MISSES, c->nmiss);
	stat_add(PBP_STAT_BULK_FRAMES, c->nbulk);
	stat_add(PBP_STAT_FRAME_READS, c->nread);
	stat_add(PBP_STAT_BULK_READS, c->ncopies);
	if (c->err)
		s->flags |= PBP_F_FAULT;
	else if (c->frame)
		s->flags |= PBP_F_TRUNCATED;
	s->resume = c->frame;
	s->nframes = c->n;
	if (c->coro) {
		s->task = c->coro;
		s->flags |= PBP_F_CORO;
	}
	return c->fresh;
}

/*
 * The GIL's last_holder and locked are neighbours in every version's GIL
 * struct (3.6's statics may lie apart): one copy of both, not a read each.
 */
static __always_inline int gil_state(const struct pbp_proc *p, __s32 *locked, __u64 *holder)
{
	struct { __u64 holder; __s32 locked; } pair;

	if (p->gil_locked != p->gil_holder + 8)
		return bpf_probe_read_user(locked, sizeof(*locked), (const void *)p->gil_locked) ||
		       read_ptr(holder, p->gil_holder);
	if (bpf_probe_read_user(&pair, 12, (const void *)p->gil_holder))
		return -1;
	*holder = pair.holder;
	*locked = pair.locked;
	return 0;
}

static __always_inline void read_gil(struct pbp_sample *s, const struct pbp_proc *p)
{
	__s32 locked = 0;
	__u64 holder = 0;

	/* Free-threaded, --native-leaf: no GIL, but a detached thread left Python all the same. */
	if (p->off.ts_attached && s->tstate) {
		if (bpf_probe_read_user(&locked, sizeof(locked), (const void *)(s->tstate + p->off.ts_attached)) == 0 &&
		    locked == 0)
			s->flags |= PBP_F_DETACHED;
		return;
	}
	if (!p->gil_locked || gil_state(p, &locked, &holder))
		return;
	s->flags |= PBP_F_GIL_KNOWN;
	/* locked -1: not created yet (3.6 until a second thread), its one Python thread runs freely. */
	if (s->tstate && (locked < 0 || (locked && holder == s->tstate)))
		s->flags |= PBP_F_HOLDS_GIL;
}

#endif /* PBP_BPF_WALK_H */
