/* SPDX-License-Identifier: MIT */
/*
 * Structures shared by the BPF programs (bpf/) and user space (user/).
 * Everything here crosses the kernel boundary, so it uses fixed-width
 * types only and no pointers.
 */
#ifndef PYBPFPROF_H
#define PYBPFPROF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Frames the kernel copies per sample. Deeper stacks are finished in user space. */
#define PBP_MAX_FRAMES 128

/* Unset offset (the field does not exist in this CPython version). */
#define PBP_NOOFF 0xffff

/* Largest span the kernel copies in one read: its per-CPU buffers hold this much. */
#define PBP_SPAN_MAX 256

/* Largest window of a thread's data stack copied in one read (3.11+): a power of two. */
#define PBP_BULK_MAX 16384

/*
 * The window of the kernel's time budget for walks: in every window of this
 * many ns, each CPU spends at most walk_budget_ns (which user space sets, a
 * share of this) on walks; the rest waits for the next window.
 */
#define PBP_BUDGET_WINDOW_NS 10000000ull

/*
 * The part of a CPython version's layout the kernel needs to walk a frame
 * chain. User space fills it from pyver.c (one copy per target process).
 */
struct pbp_offsets {
	__u16 ts_frame;        /* tstate->frame / ->cframe / ->current_frame */
	__u16 cframe_current;  /* _PyCFrame.current_frame (3.11, 3.12) or PBP_NOOFF */
	__u16 fr_previous;     /* f_back / previous */
	__u16 fr_code;         /* f_code / f_executable */
	__u16 fr_instr;        /* f_lasti (int) / prev_instr / instr_ptr */
	__u16 fr_owner;        /* owner byte (3.12+) or PBP_NOOFF */
	__u16 fr_is_entry;     /* 3.11 only: is_entry byte, else PBP_NOOFF */
	__u16 code_firstlineno;
	/*
	 * The word that tells a code object from one made later at its
	 * address: co_version on 3.12-3.14 (a count each interpreter gives
	 * every code object it makes, so never the same twice), co_name's
	 * address before (a new object's name may be at the old one's).
	 */
	__u16 code_key;
	/*
	 * Spans: the kernel reads the frame's fields from fr_span_lo for
	 * fr_span_len bytes in one copy, and the code object's the same way,
	 * since a copy costs about as much as a field. User space checks that
	 * every field lies inside its span; a length of 0 (or one the kernel
	 * finds inconsistent) means field by field.
	 */
	__u16 fr_span_lo, fr_span_len;
	__u16 code_span_lo, code_span_len;
	__u8 instr_is_int;     /* <= 3.10: f_lasti is a C int inside the frame */
	__u8 owner_cstack;     /* owner value that marks a C-stack shim frame, 0xff none */
	__u8 owner_interp;     /* 3.14: owner value of interpreter-owned frames, 0xff none */
	__u8 exec_tag_bits;    /* 3.14 _PyStackRef: mask of low tag bits to clear off f_executable */
	/*
	 * 3.14+ with --async, once the _asyncio module is found: offset of the
	 * thread state's asyncio_running_task, copied into each sample's .task.
	 * 0: not asked (or not known yet).
	 */
	__u16 ts_running_task;
	/*
	 * 3.11 to 3.13 with --async, once asyncio's layout is found: offset of
	 * a frame's owner byte. The outermost frame whose owner is owner_gen
	 * (a coroutine's: the running task's own, under the loop's frames) is
	 * copied into .task, flagged PBP_F_CORO, so that user space knows the
	 * task at the sample, not when it names it. 0: not asked.
	 */
	__u16 coro_owner;
	__u8 owner_gen;
	__u8 pad_coro;
	/*
	 * --native-leaf on a free-threaded build (no GIL to say a thread left
	 * the interpreter): offset of the thread state's int state, which is 1
	 * (_Py_THREAD_ATTACHED) while it may run Python and 0 once it detached
	 * (Py_BEGIN_ALLOW_THREADS). 0: not asked, nothing read.
	 */
	__u16 ts_attached;
	/*
	 * 3.11+: offset of the thread state's datastack_chunk, which
	 * datastack_top follows (a _PyStackChunk *, then the first free word).
	 * Frames pushed on the data stack lie below datastack_top in that
	 * chunk, so the kernel copies a window of it in one read and walks
	 * the frames found there in the copy. PBP_NOOFF: frames are heap
	 * objects (3.6-3.10), one read each.
	 */
	__u16 ts_datastack;
	/*
	 * 3.12+: the thread state's interp; 3.14+: the interpreter's count of
	 * code objects freed (_code_object_generation). While the count of a
	 * thread's interpreter stands still, no code object of it was freed,
	 * so one the kernel read before at an address is still there: its
	 * fields come from the kernel's cache. PBP_NOOFF: no cache.
	 */
	__u16 ts_interp;
	__u16 is_code_gen;
	/*
	 * 3.13 (a layout the probed table knows): the interpreter's count of
	 * code objects made (func_state.next_version, a __u32 that only grows
	 * and stays 0 once it wrapped). While it stands still no code object
	 * was made, so none can have taken a freed one's address: the same
	 * cache, keyed by this count. PBP_NOOFF: not known.
	 */
	__u16 is_code_new;
	/*
	 * 3.13+: the code object's co_qualname and, in the str it points to,
	 * its cached hash (Py_hash_t, -1 until computed): folded into
	 * code_key (pbp_code_key, pyver_name_hash). PBP_NOOFF: none.
	 */
	__u16 code_hname;
	__u16 str_hash;
	__u16 pad_hash;
};

/*
 * The key a frame carries: the low 32 bits of the word at code_key, xor
 * those of its name's hash when computed. An object being built at a
 * freed one's address shows its new name beside the old co_version
 * (CPython writes co_name first, and 3.13+ interns it, a dict lookup, in
 * between): the old name's hash, computed before any frame ran the old
 * object (3.13+ intern it as they make it), is not the new name's, nor is
 * -1. A hash not yet computed, or not read, adds nothing: the key is
 * then the word's alone.
 */
static inline __u32 pbp_code_key(__u64 word, __s64 hash)
{
	return (__u32)word ^ (hash == -1 ? 0u : (__u32)(__u64)hash);
}

/* Per target process, keyed by tgid in the "procs" map. */
struct pbp_proc {
	struct pbp_offsets off;
	__u64 gil_locked;      /* address of the GIL's "locked" int, 0 if unknown */
	__u64 gil_holder;      /* address of the GIL's last_holder (tstate *) */
	__u64 gil_lo, gil_hi;  /* the GIL struct: a futex wait inside it is a GIL wait */
	/*
	 * A thread user space has not registered yet (just started, or the
	 * process was caught at its first instruction) is found by the kernel:
	 * the interpreters' thread lists are walked for the state whose
	 * thread_id (pthread_self()) is the thread's TLS base. 0: no lookup.
	 */
	__u64 interp_head;     /* address of _PyRuntime.interpreters.head */
	__u16 is_threads_head, is_next, ts_next, ts_thread_id;
	/*
	 * Told apart from every other registration of a process (its pid
	 * reused, an exec) by the sampler: the kernel's code-object cache
	 * keys entries with it, so none outlives the image it was read in.
	 */
	__u32 epoch;
	__u32 pad_epoch;
	/*
	 * 3.12 (a file with .symtab): address of _Py_next_func_version, the
	 * count of code objects made, a __u32 that only grows (0 once it
	 * wrapped): the code-object cache's count, as is_code_new's on 3.13.
	 * 0: unknown.
	 */
	__u64 code_count;
};

/* Why a thread is off CPU, as the scheduler saw it when it left. */
enum pbp_off_reason {
	PBP_OFF_NONE = 0,      /* on CPU, or never seen switching */
	PBP_OFF_RUNNABLE,      /* preempted: ready, waiting for a CPU */
	PBP_OFF_SLEEP,         /* interruptible sleep */
	PBP_OFF_DISK,          /* uninterruptible sleep */
	PBP_OFF_GIL,           /* futex wait on the target's GIL */
	PBP_OFF_STOPPED,       /* stopped: SIGSTOP, SIGTSTP, a tracer */
};

/*
 * Switches kept with their instants per thread: user space looks at a tick
 * some time after its instant, and a thread may have switched several times
 * in between (4 spinners on 2 CPUs, a loaded machine). Its state at the
 * instant is the one after the newest switch before it.
 */
#define PBP_SWITCH_RING 8

/* One switch in pbp_tstate.recent: its instant and the thread's state after it. */
#define PBP_SWITCH_NS_SHIFT 4
#define PBP_SWITCH_ONCPU 0x8    /* on CPU after it: a switch in */
#define PBP_SWITCH_REASON 0x7   /* off_reason then: the one it left with, or had until a switch in */

/* Per target thread, at its slot in the "tstates" array, kept by sched_switch. */
struct pbp_tstate {
	__u64 switches;        /* context switches in and out: unchanged means the stack is too */
	__u64 futex_addr;      /* futex it sleeps on, 0 if none: tells GIL waits */
	__u64 snap_due;        /* switch-out snapshots: when the budget is back to full */
	__u8 oncpu;
	__u8 off_reason;       /* enum pbp_off_reason of the last time off CPU */
	__u8 tick_oncpu;       /* wall and gil modes: oncpu at the tick instant tick_ns */
	__u8 tick_reason;      /* ... and off_reason then */
	__u8 pad[4];
	/*
	 * The latest tick instant (of the schedule user space set, tick_base_ns +
	 * k * tick_period_ns) a switch of the thread came after: its state then
	 * was the one before that switch. However late user space looks at a
	 * tick, and however often the thread switched meanwhile, the state at
	 * that instant is here (the ring below keeps only the last few).
	 */
	__u64 tick_ns;
	/*
	 * Switch k (k = 1, 2, ... as switches counts them) at [(k - 1) %
	 * PBP_SWITCH_RING]: ns << PBP_SWITCH_NS_SHIFT | PBP_SWITCH_ONCPU if in |
	 * off_reason. Written before switches is bumped: a reader that sees
	 * switches unchanged across its copy has a whole ring.
	 */
	__u64 recent[PBP_SWITCH_RING];
};

/* Per target thread, keyed by tid in the "threads" map. */
struct pbp_thread {
	__u64 tstate;
	__u32 tgid;
	__u32 slot;            /* index into "tstates", which user space reads by mmap */
};

/* Threads whose scheduler state is kept (slots of the "tstates" array). */
#define PBP_MAX_SLOTS 65536

/* One Python frame as the kernel saw it. */
struct pbp_frame {
	__u64 code;            /* code object address (tag bits cleared) */
	__u64 instr;           /* instruction pointer, or f_lasti on <= 3.10 */
	__u32 firstlineno;     /* code->co_firstlineno: tells a reused address apart */
	__u32 code_key;        /* the low 32 bits of the word at code_key: same purpose */
};

enum pbp_sample_flags {
	PBP_F_TRUNCATED = 1 << 0,  /* more than PBP_MAX_FRAMES: resume at .resume */
	PBP_F_FAULT     = 1 << 1,  /* a read faulted: resume at .resume */
	PBP_F_NO_TSTATE = 1 << 2,  /* tid not yet in the threads map */
	PBP_F_HOLDS_GIL = 1 << 3,  /* thread held the GIL at the sample */
	PBP_F_GIL_KNOWN = 1 << 4,  /* the GIL state could be read */
	PBP_F_SWITCH_OUT = 1 << 5, /* taken as the thread left the CPU, at .switches */
	PBP_F_TSTATE_FOUND = 1 << 6, /* not in the threads map: .tstate found by the kernel */
	PBP_F_TASK = 1 << 7,       /* .task is the kernel's copy (ts_running_task was set) */
	PBP_F_REGS = 1 << 8,       /* .ip, .sp, .bp are the thread's user registers */
	PBP_F_USTACK = 1 << 9,     /* a struct pbp_ustack for this sample came just before it */
	PBP_F_ENTRIES = 1 << 10,   /* .entries marks the frames that entered the evaluation loop */
	PBP_F_KSTACK = 1 << 11,    /* --kernel: the thread was in the kernel; .kstack says where */
	PBP_F_CORO = 1 << 12,      /* .task is the outermost coroutine frame's address (coro_owner set) */
	PBP_F_DETACHED = 1 << 13,  /* free-threaded, ts_attached set: its thread state was detached */
};

/*
 * --kernel: the "kstacks" stack-trace map's size, and the kernel frames
 * each of its stacks keeps (the innermost: where the thread was).
 */
#define PBP_KSTACK_ENTRIES 8192
#define PBP_KSTACK_DEPTH 64

/* Ring buffer record: header, then nframes struct pbp_frame, innermost first. */
struct pbp_sample {
	__u64 ts;              /* bpf_ktime_get_ns() */
	__u64 tstate;
	__u64 resume;          /* frame address where the kernel stopped, if flagged */
	__u64 switches;        /* PBP_F_SWITCH_OUT: the thread's switch count after leaving */
	__u64 task;            /* PBP_F_TASK: the running asyncio task (0 none); PBP_F_CORO: a frame */
	/*
	 * PBP_F_REGS: the user-space registers at the sample: where the thread
	 * was in native code (its innermost native frame), and its stack.
	 */
	__u64 ip, sp, bp;
	/*
	 * --native (3.11+): bit i set when frames[i] is the first frame an
	 * activation of the evaluation loop ran (3.11 its is_entry, 3.12+ the
	 * frame a C-stack shim precedes): the Python frames per activation.
	 */
	__u64 entries[PBP_MAX_FRAMES / 64];
	/*
	 * PBP_F_KSTACK: the id of the thread's kernel stack in the "kstacks"
	 * map (bpf_get_stackid), or a negative errno when none could be kept.
	 */
	__s32 kstack;
	__u32 pad;
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u16 nframes;
	__u16 flags;
	struct pbp_frame frames[PBP_MAX_FRAMES];
};

/*
 * --native: the top of the sampled thread's user stack, copied from .sp
 * up, on the "events" ring buffer just before its sample (same CPU, same
 * .ts and .tid): user space unwinds it from .eh_frame.
 */
#define PBP_USTACK_MAX 8192         /* the record's size: what user space may ask for */
#define PBP_USTACK_MAGIC 0xffffffffffffffffull  /* where a sample has its .ts */

/*
 * --native=fp: the same record, shorter, with .magic PBP_UADDRS_MAGIC: its
 * data holds the kernel's own frame-pointer walk of the user stack
 * (bpf_get_stack, BPF_F_USER_STACK), .len / 8 addresses innermost first:
 * .ip, then return addresses. At most PBP_UADDRS_MAX, the kernel's default
 * kernel.perf_event_max_stack (a lower setting bounds it further).
 */
#define PBP_UADDRS_MAGIC 0xfffffffffffffffeull
#define PBP_UADDRS_MAX 127

struct pbp_ustack {
	__u64 magic;           /* PBP_USTACK_MAGIC or PBP_UADDRS_MAGIC: not a struct pbp_sample */
	__u64 ts;
	__u32 tid;
	__u32 len;             /* bytes of data copied from sp (0: none could be) */
	__u8 data[PBP_USTACK_MAX];
};

/* Process and thread lifecycle, on the "procevents" ring buffer. */
#define PBP_COMM_LEN 16        /* the kernel's TASK_COMM_LEN */
enum pbp_proc_event_kind {
	PBP_EV_EXEC = 1,       /* a process called execve: maybe a new Python */
	PBP_EV_EXIT = 2,       /* a target process exited */
	PBP_EV_THREAD = 3,     /* a target process started a thread (wall and gil modes) */
	PBP_EV_FORK = 4,       /* a followed process (or, -a, a target) forked a new one: pid, its parent */
	PBP_EV_RENAME = 5,     /* -a --comm: a process not a target renamed its main thread (its comm) */
	PBP_EV_CGROUP = 6,     /* -a: a target (one of its threads) was moved to another cgroup */
};

struct pbp_proc_event {
	__u32 kind;
	__u32 pid;
	__u32 parent;          /* PBP_EV_FORK: the forking process, else 0 */
	__u32 start;           /* PBP_EV_RENAME: its start time in /proc's clock ticks, low 32 bits */
	/*
	 * PBP_EV_EXEC: the new program's name, as the exec set it (NUL-ended);
	 * PBP_EV_RENAME: the name it gave itself; else empty. -a's --comm filter asks it of every exec on the node,
	 * which would otherwise be an open and a read of /proc each.
	 */
	char comm[PBP_COMM_LEN];
};

/*
 * Processes whose new children are followed (--subprocesses), keyed by
 * tgid in the "followed" map: a bound on a process tree's live processes.
 */
#define PBP_MAX_FOLLOWED 16384

/* Per-CPU counters, index into the "stats" array map. */
enum pbp_stat {
	PBP_STAT_TAKEN,        /* perf event fired on a target thread */
	PBP_STAT_DELIVERED,    /* record reached the ring buffer */
	PBP_STAT_LOST,         /* ring buffer full */
	PBP_STAT_TRUNCATED,    /* deeper than PBP_MAX_FRAMES */
	PBP_STAT_FAULTED,      /* a frame read faulted in the kernel */
	PBP_STAT_NO_TSTATE,
	PBP_STAT_SNAPPED,      /* switch-out snapshot reached the ring buffer */
	PBP_STAT_SNAP_LOST,    /* switch-out snapshot dropped: ring buffer full */
	PBP_STAT_FIRED,        /* perf event fired, on any thread: the achieved rate */
	PBP_STAT_BUDGET,       /* target sample skipped: the CPU's time budget was spent */
	PBP_STAT_RUN_NS,       /* ns spent walking stacks in the sampler */
	PBP_STAT_TSTATE_FOUND, /* a thread's state found by the kernel (not registered yet) */
	PBP_STAT_FOLLOW_FULL,  /* a child not followed: the "followed" map was full */
	PBP_STAT_KSTACK,       /* --kernel: a kernel stack kept in "kstacks" */
	PBP_STAT_KSTACK_COLLIDED, /* --kernel: its slot held another stack (-EEXIST) */
	PBP_STAT_KSTACK_FAILED,   /* --kernel: none taken (-EFAULT: empty, or another error) */
	PBP_STAT_BULK_FRAMES,  /* frames found in a copy of the data stack (3.11+) */
	PBP_STAT_FRAME_READS,  /* frames read one by one (a heap frame, another chunk, <= 3.10) */
	PBP_STAT_BULK_READS,   /* copies of a data-stack window */
	PBP_STAT_CODE_HITS,    /* 3.12+: code objects named from the kernel's cache */
	PBP_STAT_CODE_MISSES,  /* 3.12+: code objects read (not cached, or freed since) */
	PBP_STAT__COUNT,
};

#endif /* PYBPFPROF_H */
