/* SPDX-License-Identifier: MIT */
/*
 * The kernel side's loader: one cpu-clock perf event per online CPU, each
 * with the sampler program attached through a BPF link. Nothing is pinned,
 * so everything is released when this process exits, however it exits.
 */
#include <errno.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "sample/sampler.h"
#include "sample/counters.h"
#include "sample/heldevents.h"
#include "sample/knobs.h"
#include "core/clock.h"
#include "core/errors.h"
#include "proc/pidns.h"
#include "profile.skel.h"

struct sampler {
	struct profile_bpf *skel;
	__u32 epochs;                   /* registrations of processes so far: pbp_proc.epoch */
	struct ring_buffer *rb;         /* samples */
	struct ring_buffer *prb;        /* process and thread events */
	/*
	 * --subprocesses: events drained before samples, so that a new
	 * process's first samples find it known; else after, so that a
	 * target's last samples come before its exit or exec.
	 */
	bool events_first;
	struct held_events held;        /* events_first: exits and execs after the samples before them */
	int efd;                        /* epoll, edge-triggered, on both rings (sampler_wait) */
	struct bpf_link *switch_link, *wakeup_link, *fork_link, *exec_link, *exit_link, *rename_link, *move_link;
	proc_event_fn pcb;
	struct pbp_tstate *tstates;     /* the kernel's array, mapped */
	uint32_t *free_slots;
	uint32_t nfree;
	struct bpf_link **links;
	int *pfds;
	int ncpus;
	sample_fn cb;
	void *ctx;
	uint64_t period;        /* ns of CPU time between samples at the asked rate */
	uint64_t rng;
	double *last_u;         /* per CPU: the last rate offset drawn */
	bool flip;
	struct sampler_limit lim;
	uint64_t started_ns;    /* the events run at lim.hz since */
	uint64_t drain_until;   /* sampler_drain stops taking records then */
	int drained;
	uint64_t read_upto;     /* every sample taken before this was read (sampler_read_upto) */
	int nonline;            /* CPUs with a perf event */
	double busy0;           /* CPU seconds not idle on the host when the events started */
	/*
	 * --native: the last stack copies, each until its sample (which comes
	 * right after it, unless other CPUs' records came between) takes it.
	 */
	struct pbp_ustack *ustk[USTACK_SLOTS];
	uint32_t ustk_next;
	struct counters stats;  /* the kernel's, as last read */
};

static bool verbose_bpf;

/* Keeps a stack copy until its sample: another CPU's records may come between. */
static void keep_ustack(struct sampler *s, const struct pbp_ustack *u, size_t size)
{
	struct pbp_ustack **slot = &s->ustk[s->ustk_next++ % USTACK_SLOTS];
	size_t head = offsetof(struct pbp_ustack, data);

	if (size < head || u->len > PBP_USTACK_MAX || size < head + u->len)
		return;
	if (!*slot && !(*slot = malloc(sizeof(**slot))))
		return;
	memcpy(*slot, u, head + u->len);
}

const struct pbp_ustack *sampler_ustack(struct sampler *s, uint32_t tid, uint64_t ts)
{
	for (int i = 0; i < USTACK_SLOTS; i++)
		if (s->ustk[i] && s->ustk[i]->tid == tid && s->ustk[i]->ts == ts)
			return s->ustk[i];
	return NULL;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!verbose_bpf && level != LIBBPF_WARN)
		return 0;
	if (!verbose_bpf)
		return 0;  /* libbpf's own lines would repeat our one-line error */
	return vfprintf(stderr, fmt, args);
}

void sampler_verbose(bool on)
{
	verbose_bpf = on;
}

static void give_proc_event(void *ctx, const struct pbp_proc_event *ev)
{
	struct sampler *s = ctx;
	char comm[PBP_COMM_LEN + 1];

	memcpy(comm, ev->comm, PBP_COMM_LEN);
	comm[PBP_COMM_LEN] = '\0';
	s->pcb(s->ctx, ev->kind, (pid_t)ev->pid, (pid_t)ev->parent, comm, ev->start);
}

static int on_proc_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct pbp_proc_event *ev = data;

	if (size < sizeof(*ev) || !s->pcb)
		return 0;
	if (s->events_first && held_events_hold(&s->held, ev))
		return 0;
	if (held_events_block(&s->held, ev))
		held_events_release(&s->held, give_proc_event, s);
	give_proc_event(s, ev);
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct pbp_sample *smp = data;

	if (size >= sizeof(uint64_t) && (*(const uint64_t *)data == PBP_USTACK_MAGIC ||
					 *(const uint64_t *)data == PBP_UADDRS_MAGIC))
		keep_ustack(s, data, size);
	else if (size >= offsetof(struct pbp_sample, frames) &&
	    size >= offsetof(struct pbp_sample, frames) + (size_t)smp->nframes * sizeof(struct pbp_frame)) {
		/*
		 * The ring keeps the order records were reserved in, and a sample
		 * is reserved before its thread can go on: every sample of a
		 * process that exited before smp->ts has been read (ts is
		 * bpf_ktime_get_ns, CLOCK_MONOTONIC as mono_ns).
		 */
		if (smp->ts > s->read_upto)
			s->read_upto = smp->ts;
		s->cb(s->ctx, smp);
	}
	/* Past the drain's time: stop after this record (libbpf has consumed it). */
	s->drained++;
	return mono_ns() > s->drain_until ? -EINTR : 0;
}

static int perf_open(int cpu, unsigned hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* A fixed period in ns of CPU time: exactly hz samples per second on CPU. */
		.sample_period = 1000000000ull / hz,
	};

	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * libbpf says only "no BTF" (ESRCH) when it could not read the kernel's
 * BTF, whatever stopped it (it goes on to look in /boot): read it again
 * alone, while the half-loaded object still holds its memory, to tell a
 * resource limit (memory, open files) from a refusal.
 */
static int why_not_loaded(void)
{
	struct btf *btf = btf__parse("/sys/kernel/btf/vmlinux", NULL);
	int e = errno;

	if (btf) {
		btf__free(btf);
		return -PBP_E_BPF;
	}
	return pbp_err_from_errno(e, -PBP_E_BPF);
}

/* /sys/devices/system/cpu/online: "0-3,5,7-8". */
static int online_cpus(bool **online, int *n)
{
	char buf[1024], *p = buf;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	bool ok = f && fgets(buf, sizeof(buf), f);
	int max = libbpf_num_possible_cpus();

	if (f)
		fclose(f);
	if (!ok || max <= 0)
		return -PBP_E_BPF;
	*online = calloc((size_t)max, sizeof(**online));
	if (!*online)
		return -PBP_E_NOMEM;
	*n = max;
	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return -PBP_E_BPF;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b && c < max; c++)
			(*online)[c] = true;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

static int attach_cpus(struct sampler *s, unsigned hz)
{
	bool *online = NULL;
	int n = 0, err;

	err = online_cpus(&online, &n);
	if (err) {
		free(online);
		return err;
	}
	s->ncpus = n;
	s->links = calloc((size_t)n, sizeof(*s->links));
	s->pfds = malloc((size_t)n * sizeof(*s->pfds));
	s->last_u = calloc((size_t)n, sizeof(*s->last_u));
	if (!s->links || !s->pfds || !s->last_u) {
		free(online);
		return -PBP_E_NOMEM;
	}
	for (int i = 0; i < n; i++)
		s->pfds[i] = -1;
	for (int cpu = 0; cpu < n && !err; cpu++) {
		if (!online[cpu])
			continue;
		s->pfds[cpu] = perf_open(cpu, hz);
		if (s->pfds[cpu] < 0) {
			err = errno == ENODEV ? 0 : pbp_err_from_errno(errno, -PBP_E_BPF);
			continue;
		}
		s->nonline++;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_sample, s->pfds[cpu]);
		if (!s->links[cpu])
			err = pbp_err_from_errno(errno, -PBP_E_BPF);
	}
	free(online);
	return err;
}

static size_t tstates_bytes(void)
{
	size_t n = sizeof(struct pbp_tstate) * PBP_MAX_SLOTS;
	long page = sysconf(_SC_PAGESIZE);

	return (n + (size_t)page - 1) / (size_t)page * (size_t)page;
}

static int track_threads(struct sampler *s)
{
	void *m;

	s->switch_link = bpf_program__attach(s->skel->progs.on_switch);
	if (!s->switch_link)
		return pbp_err_from_errno(errno, -PBP_E_BPF);
	s->wakeup_link = bpf_program__attach(s->skel->progs.on_wakeup);
	if (!s->wakeup_link)
		return pbp_err_from_errno(errno, -PBP_E_BPF);
	m = mmap(NULL, tstates_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(s->skel->maps.tstates), 0);
	if (m == MAP_FAILED)
		return pbp_err_from_errno(errno, -PBP_E_BPF);
	s->tstates = m;
	s->free_slots = malloc(sizeof(*s->free_slots) * PBP_MAX_SLOTS);
	if (!s->free_slots)
		return -PBP_E_NOMEM;
	for (uint32_t i = 0; i < PBP_MAX_SLOTS; i++)
		s->free_slots[i] = PBP_MAX_SLOTS - 1 - i;
	s->nfree = PBP_MAX_SLOTS;
	return 0;
}

/*
 * Exits and execs of targets always (a target that execs is a new program);
 * every exec for -a; forks for new threads (wall, gil) and new processes
 * (--subprocesses, and -a's targets forking without exec); renames for -a
 * --comm; -a's targets' moves to another cgroup.
 */
static int track_processes(struct sampler *s, bool forks, bool renames, bool moves)
{
	if ((forks && !(s->fork_link = bpf_program__attach(s->skel->progs.on_fork))) ||
	    (renames && !(s->rename_link = bpf_program__attach(s->skel->progs.on_rename))) ||
	    (moves && !(s->move_link = bpf_program__attach(s->skel->progs.on_cgroup_move))) ||
	    !(s->exit_link = bpf_program__attach(s->skel->progs.on_exit)) ||
	    !(s->exec_link = bpf_program__attach(s->skel->progs.on_exec)))
		return pbp_err_from_errno(errno, -PBP_E_BPF);
	s->prb = ring_buffer__new(bpf_map__fd(s->skel->maps.procevents), on_proc_event, s, NULL);
	if (!s->prb)
		return pbp_err_from_errno(errno, -PBP_E_BPF);
	return 0;
}

/*
 * Each ring wakes the loop through its own epoll set, edge-triggered: the
 * sample ring only when it is a quarter full (the BPF side asks for a wakeup
 * past that), so a busy host wakes it before anything is lost, and a level
 * (still not empty) never makes it spin.
 */
static int watch_rings(struct sampler *s)
{
	int fds[2] = { bpf_map__fd(s->skel->maps.events), bpf_map__fd(s->skel->maps.procevents) };

	s->efd = epoll_create1(EPOLL_CLOEXEC);
	if (s->efd < 0)
		return pbp_err_from_errno(errno, -PBP_E_BPF);
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = (uint32_t)i };

		if (epoll_ctl(s->efd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
			return pbp_err_from_errno(errno, -PBP_E_BPF);
	}
	return 0;
}

/* bpf_loop, which the frame walk needs, came in Linux 5.17. */
static bool kernel_too_old(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;   /* unknown: let the load say */
	return major < 5 || (major == 5 && minor < 17);
}

/* ---------------------------------------------------------------- rate cap */

/*
 * Up to this rate the interrupts cost little on any host and nothing is
 * measured; above, a probe event at this rate measures their cost first.
 */
#define PROBE_HZ 1000
#define PROBE_RUN_NS 20000000ull        /* 20 ms on the CPU */
#define PROBE_MAX_NS 300000000ull       /* however busy the CPU is */
#define GAP_MIN_NS 1000                 /* one loop turn takes ~50 ns */
#define GAP_MAX_NS 1000000              /* longer: preempted, not interrupted */
#define TURN_MAX_NS 250                 /* a slower clock read hides gaps: assume the worst */
#define UNSEEN_IRQ_NS 50000             /* the worst seen, a small VM under load */
#define DEFAULT_BUDGET_PCT 25           /* the kernel's default perf_cpu_time_max_percent */

static unsigned read_sysctl(const char *path, unsigned dflt)
{
	FILE *f = fopen(path, "re");
	unsigned v;

	if (!f)
		return dflt;
	if (fscanf(f, "%u", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

/*
 * What one interrupt costs on this CPU, all of it: the hrtimer, perf, the
 * program's early return, and under a hypervisor the exits the guest
 * cannot see (on a small VM, 40 us; on bare metal, about 1). A loop that
 * only reads the clock sees every interrupt as a gap in its readings; the
 * mean gap is the cost. Interrupts too cheap to show count as GAP_MIN_NS.
 */
static unsigned irq_cost_ns(void)
{
	cpu_set_t old, one;
	uint64_t t0, last, ran = 0, sum = 0, n = 0, turns = 0;
	int cpu = sched_getcpu(), fd = -1;
	bool pinned = cpu >= 0 && sched_getaffinity(0, sizeof(old), &old) == 0;

	CPU_ZERO(&one);
	if (pinned) {
		CPU_SET(cpu, &one);
		pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	if (pinned)
		fd = perf_open(cpu, PROBE_HZ);
	t0 = last = mono_ns();
	while (fd >= 0 && ran < PROBE_RUN_NS && last - t0 < PROBE_MAX_NS) {
		uint64_t t = mono_ns(), gap = t - last;

		last = t;
		if (gap >= GAP_MAX_NS)
			continue;
		ran += gap;
		turns++;
		if (gap >= GAP_MIN_NS)
			sum += gap, n++;
	}
	if (fd >= 0)
		close(fd);
	if (pinned)
		sched_setaffinity(0, sizeof(old), &old);
	if (!turns || ran / turns > TURN_MAX_NS)
		return UNSEEN_IRQ_NS;
	/* Fewer gaps than interrupts: most were shorter than GAP_MIN_NS. */
	if (n * 2 < PROBE_HZ * ran / 1000000000ull || !n)
		return GAP_MIN_NS;
	return (unsigned)(sum / n);
}

/*
 * The rate the host sustains: kernel.perf_event_max_sample_rate, and the
 * measured interrupt cost kept within half the CPU share the kernel grants
 * perf (perf_cpu_time_max_percent; the other half is the program's, per
 * window, in BPF). Measured with a perf event of our own, before any
 * event runs at the asked rate.
 */
static void cap_rate(struct sampler *s, unsigned hz)
{
	struct sampler_limit *l = &s->lim;
	uint64_t by_cost;

	*l = (struct sampler_limit){ .asked = hz, .hz = hz };
	l->max_rate = read_sysctl("/proc/sys/kernel/perf_event_max_sample_rate", 100000);
	l->budget_pct = read_sysctl("/proc/sys/kernel/perf_cpu_time_max_percent", DEFAULT_BUDGET_PCT);
	if (l->budget_pct == 0 || l->budget_pct >= 100)   /* the kernel's check is off; ours is not */
		l->budget_pct = DEFAULT_BUDGET_PCT;
	if (l->max_rate && l->hz > l->max_rate) {
		l->hz = l->max_rate;
		l->why = CAP_KERNEL;
	}
	if (l->hz <= PROBE_HZ)
		return;
	l->irq_ns = irq_cost_ns();
	by_cost = 1000000000ull * l->budget_pct / 200 / l->irq_ns;
	if (by_cost < PROBE_HZ)
		by_cost = PROBE_HZ;
	if (l->hz > by_cost) {
		l->hz = (unsigned)by_cost;
		l->why = CAP_COST;
	}
}

void sampler_limit(struct sampler *s, struct sampler_limit *out)
{
	*out = s->lim;
}

/* CPU seconds the host's CPUs spent not idle (/proc/stat), -1 if unknown. */
static double busy_secs(void)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "re");
	int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			   &v[3], &v[4], &v[5], &v[6], &v[7]) : 0;

	if (f)
		fclose(f);
	if (n != 8 || hz <= 0)
		return -1;
	/* user nice system [idle iowait] irq softirq steal */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
}

/*
 * The rate the events achieved per CPU since they started at lim.hz: a
 * cpu-clock event counts only while its CPU is not idle, so per busy CPU
 * second. 0 when the host was too idle to tell. And the program's share
 * of each CPU, by its own measure (interrupts excluded).
 */
void sampler_achieved(struct sampler *s, double *per_cpu_hz, double *prog_share)
{
	uint64_t st[PBP_STAT__COUNT];
	double busy = busy_secs() - s->busy0;
	double secs = (double)(mono_ns() - s->started_ns) / 1e9 * (s->nonline ? s->nonline : 1);

	sampler_stats(s, st);
	*per_cpu_hz = s->busy0 >= 0 && busy >= 0.5 ? (double)st[PBP_STAT_FIRED] / busy : 0;
	*prog_share = secs > 0 ? (double)st[PBP_STAT_RUN_NS] / 1e9 / secs : 0;
}

int sampler_open(struct sampler **out, const struct sampler_opts *o)
{
	struct sampler *s;
	unsigned hz = o->hz;
	int err;

	*out = NULL;
	if (kernel_too_old())
		return -PBP_E_OLDKERNEL;
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return -PBP_E_NOBTF;
	libbpf_set_print(libbpf_print);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -PBP_E_NOMEM;
	s->efd = -1;
	s->cb = o->cb;
	s->pcb = o->pcb;
	s->events_first = o->follow;
	s->ctx = o->ctx;
	cap_rate(s, hz);
	hz = s->lim.hz;
	s->period = 1000000000ull / hz;
	s->rng = (uint64_t)getpid() ^ (uint64_t)(uintptr_t)s;
	s->skel = profile_bpf__open();
	if (!s->skel) {
		err = pbp_err_from_errno(errno, -PBP_E_BPF);
		goto fail;
	}
	knobs_set(s->skel, o, s->period, s->lim.budget_pct);
	err = profile_bpf__load(s->skel);
	if (err) {
		err = pbp_err_from_errno(-err, -PBP_E_BPF);
		if (err == -PBP_E_BPF)
			err = why_not_loaded();
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_event, s, NULL);
	if (!s->rb) {
		err = pbp_err_from_errno(errno, -PBP_E_BPF);
		goto fail;
	}
	err = watch_rings(s);
	if (!err)
		err = attach_cpus(s, hz);
	s->started_ns = mono_ns();
	s->busy0 = busy_secs();
	if (!err && o->sched)
		err = track_threads(s);
	if (!err)
		err = track_processes(s, o->sched || o->follow || o->execs, o->renames, o->execs);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	sampler_close(s);
	return err;
}

void sampler_set_ticks(struct sampler *s, uint64_t base, uint64_t period)
{
	s->skel->bss->tick_base_ns = base;
	s->skel->bss->tick_period_ns = period;
}

void sampler_pause(struct sampler *s)
{
	for (int i = 0; i < s->ncpus; i++)
		if (s->pfds[i] >= 0)
			ioctl(s->pfds[i], PERF_EVENT_IOC_DISABLE, 0);
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	ring_buffer__free(s->prb);
	if (s->efd >= 0)
		close(s->efd);
	bpf_link__destroy(s->switch_link);
	bpf_link__destroy(s->wakeup_link);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->rename_link);
	bpf_link__destroy(s->move_link);
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->exit_link);
	if (s->tstates)
		munmap(s->tstates, tstates_bytes());
	free(s->free_slots);
	for (int i = 0; i < s->ncpus; i++) {
		bpf_link__destroy(s->links[i]);
		if (s->pfds[i] >= 0)
			close(s->pfds[i]);
	}
	free(s->links);
	free(s->pfds);
	free(s->last_u);
	profile_bpf__destroy(s->skel);
	for (int i = 0; i < USTACK_SLOTS; i++)
		free(s->ustk[i]);
	counters_free(&s->stats);
	free(s);
}

/*
 * A fixed period aliases with a periodic workload: a loop whose iteration
 * divides the period is always caught at the same phase. Each call draws a
 * new rate within +-10% of the asked one for every CPU, in pairs (+u, then
 * -u) so that over equal stretches of time the mean rate is exactly hz.
 */
void sampler_jitter(struct sampler *s)
{
	for (int i = 0; i < s->ncpus; i++) {
		double u;
		uint64_t p;

		if (s->pfds[i] < 0)
			continue;
		if (s->flip) {
			u = -s->last_u[i];
		} else {
			s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
			u = ((double)(s->rng >> 11) / (double)(1ull << 53) - 0.5) / 5;
			s->last_u[i] = u;
		}
		p = (uint64_t)((double)s->period / (1.0 + u));
		ioctl(s->pfds[i], PERF_EVENT_IOC_PERIOD, &p);
	}
	s->flip = !s->flip;
}

static int map_put(struct bpf_map *m, const void *key, const void *val)
{
	return bpf_map_update_elem(bpf_map__fd(m), key, val, BPF_ANY) ? pbp_err_from_errno(errno, -PBP_E_BPF) : 0;
}

static int sampler_add_proc(struct sampler *s, pid_t pid, const struct pbp_proc *p)
{
	struct pbp_proc kp = *p;
	__u32 key = (__u32)pid;

	kp.epoch = ++s->epochs;
	return map_put(s->skel->maps.procs, &key, &kp);
}

int sampler_follow(struct sampler *s, pid_t pid)
{
	__u32 key = (__u32)pid, parent = 0;

	return map_put(s->skel->maps.followed, &key, &parent);
}

void sampler_drain_events(struct sampler *s)
{
	if (s->prb)
		ring_buffer__consume(s->prb);
}

void sampler_del_proc(struct sampler *s, pid_t pid)
{
	__u32 key = (__u32)pid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.procs), &key);
}

/* A slot in the kernel's per-thread state array (-1 when not tracking). */
static int sampler_slot_alloc(struct sampler *s)
{
	uint32_t slot;

	if (!s->tstates || !s->nfree)
		return -1;
	slot = s->free_slots[--s->nfree];
	memset(&s->tstates[slot], 0, sizeof(s->tstates[slot]));
	return (int)slot;
}

static void sampler_slot_free(struct sampler *s, int slot)
{
	if (s->tstates && slot >= 0 && slot < PBP_MAX_SLOTS)
		s->free_slots[s->nfree++] = (uint32_t)slot;
}

/* The kernel's live view of a slot, NULL when not tracking. */
static const volatile struct pbp_tstate *sampler_tstate(struct sampler *s, int slot)
{
	return s->tstates && slot >= 0 && slot < PBP_MAX_SLOTS ? &s->tstates[slot] : NULL;
}

static int sampler_set_thread(struct sampler *s, pid_t tid, pid_t tgid, uint64_t tstate, int slot)
{
	struct pbp_thread t = { .tstate = tstate, .tgid = (__u32)tgid, .slot = (__u32)(slot < 0 ? PBP_MAX_SLOTS : slot) };
	__u32 key = (__u32)tid;

	return map_put(s->skel->maps.threads, &key, &t);
}

static void sampler_del_thread(struct sampler *s, pid_t tid)
{
	__u32 key = (__u32)tid;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.threads), &key);
}

/*
 * Samples ask for no wakeup (see watch_rings): read the rings directly. A
 * drain takes at most DRAIN_MAX_NS, so that a flood of records, or records
 * slow to handle, never keeps the loop from its ticks and its deadline;
 * what is left waits for the next drain. Returns the records taken.
 */
#define DRAIN_MAX_NS 20000000ull

int sampler_drain(struct sampler *s)
{
	uint64_t start;
	int n;

	s->drained = 0;
	s->drain_until = mono_ns() + DRAIN_MAX_NS;
	if (s->events_first)
		sampler_drain_events(s);        /* a new process's samples find it known */
	start = mono_ns();
	n = ring_buffer__consume(s->rb);
	if (n >= 0 && start > s->read_upto)
		s->read_upto = start;   /* the ring emptied: nothing older waits in it */
	if (n >= 0 && s->held.n)
		held_events_release(&s->held, give_proc_event, s);
	/* A target's samples before its exit or exec: not while some wait still (the drain was cut). */
	if (!s->events_first && n >= 0)
		sampler_drain_events(s);
	return n < 0 ? s->drained : n;
}

uint64_t sampler_read_upto(const struct sampler *s)
{
	return s->read_upto;
}

/* Sleep up to ns, less if an event comes or the sample ring fills; then drain. */
int sampler_wait(struct sampler *s, uint64_t ns)
{
	static bool no_pwait2;  /* older kernels, and valgrind, lack it */
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	struct epoll_event ev[3];          /* the rings, and a terminal (sampler_wake_on) */

	if (!no_pwait2 && epoll_pwait2(s->efd, ev, 3, &ts, NULL) < 0 && errno == ENOSYS)
		no_pwait2 = true;
	if (no_pwait2)
		epoll_wait(s->efd, ev, 3, (int)((ns + 999999) / 1000000));
	return sampler_drain(s);
}

/* Edge-triggered as the rings are: a wait ends once per arrival, whoever reads it later. */
int sampler_wake_on(struct sampler *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = 2 };

	return epoll_ctl(s->efd, EPOLL_CTL_ADD, fd, &ev) != 0 ? pbp_err_from_errno(errno, -PBP_E_IO) : 0;
}

void sampler_stats(struct sampler *s, uint64_t out[PBP_STAT__COUNT])
{
	counters_read(&s->stats, bpf_map__fd(s->skel->maps.stats), out);
}

uint64_t sampler_stat(struct sampler *s, enum pbp_stat which)
{
	return counters_one(&s->stats, bpf_map__fd(s->skel->maps.stats), which);
}

/*
 * Ids are never deleted: a slot keeps the stack it got first (the kernel
 * does not take it over), so an id read once means that stack for the run.
 */
uint32_t sampler_kstack(struct sampler *s, int32_t id, uint64_t *ips)
{
	uint32_t key = (uint32_t)id, n = 0;

	if (id < 0 || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.kstacks), &key, ips) != 0)
		return 0;
	/* The value is zero-filled past the stack's last frame. */
	while (n < PBP_KSTACK_DEPTH && ips[n])
		n++;
	return n;
}

const struct sampler_ops bpf_sampler_ops = {
	.add_proc = sampler_add_proc,
	.slot_alloc = sampler_slot_alloc,
	.slot_free = sampler_slot_free,
	.tstate = sampler_tstate,
	.set_thread = sampler_set_thread,
	.del_thread = sampler_del_thread,
	.ustack = sampler_ustack,
	.kstack = sampler_kstack,
};
