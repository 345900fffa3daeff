/* SPDX-License-Identifier: MIT */
/*
 * Capabilities. Setting up needs CAP_BPF (load the sampler, make its maps),
 * CAP_PERFMON (perf events on every CPU, tracing programs) and
 * CAP_SYS_PTRACE (read the targets' memory and /proc/PID/maps); root has
 * them all, anyone else must be granted them. Once set up, reading targets
 * is all that is left, so every other capability is dropped, from every set
 * and (where allowed: CAP_SETPCAP) from the bounding set, so that a bug in
 * the code that parses hostile target memory cannot use them.
 *
 * A few things done after set-up can need more, and keep it only when they
 * do, as found by trying each on a probe thread that drops first
 * (capabilities belong to a thread, so the probe's drop is its own):
 *   - BPF map updates (new threads), which kernels before 6.5 refuse without
 *     CAP_BPF when unprivileged BPF is disabled: keep CAP_BPF then;
 *   - renaming the profile into place at the end (output.c opened it, and
 *     gave it its owner, before): CAP_DAC_OVERRIDE when the directory is
 *     writable only through it (root writing into a user's directory),
 *     CAP_FOWNER when it is sticky and not ours;
 *   - a launched command that runs as the invoking user under sudo gets
 *     SIGTERM on Ctrl-C: CAP_KILL;
 *   - -a attaches processes that start later, reading their binaries as set
 *     up did: CAP_DAC_READ_SEARCH, for those under directories root cannot
 *     search without it (someone's 0700 home, a container's root);
 *   - an html profile embeds the targets' source files, read at the end:
 *     CAP_DAC_READ_SEARCH too, for the same places (srcroot.c reads only
 *     what the target itself may read).
 *
 * Raw capget/capset/prctl system calls: the few bits needed here do not
 * warrant libcap.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/privs.h"
#include "core/errors.h"
#include "output/output.h"

typedef uint64_t capmask;

#define BIT(c) ((capmask)1 << (c))

struct capsets {
	capmask eff, prm, inh;
};

static const char *outpath;     /* privs_note_output(): NULL for stdout */
static bool signal_child;       /* privs_note_child() */
static bool attach_later;       /* privs_note_attach() */
static bool read_sources;       /* privs_note_sources() */

static int caps_get(struct capsets *c)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) != 0)
		return -PBP_E_IO;
	c->eff = (capmask)d[1].effective << 32 | d[0].effective;
	c->prm = (capmask)d[1].permitted << 32 | d[0].permitted;
	c->inh = (capmask)d[1].inheritable << 32 | d[0].inheritable;
	return 0;
}

/* Of the calling thread only. */
static int caps_set(const struct capsets *c)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)c->eff, (uint32_t)c->prm, (uint32_t)c->inh },
		{ (uint32_t)(c->eff >> 32), (uint32_t)(c->prm >> 32), (uint32_t)(c->inh >> 32) },
	};

	return syscall(SYS_capset, &h, d) != 0 ? -errno : 0;
}

/* The highest capability this kernel knows. */
static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int n = -1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n > 0 && n < 64 ? n : CAP_LAST_CAP;
}

/* ------------------------------------------------------------ the check */

static const struct {
	int cap;
	const char *name;
} needed[] = {
	{ CAP_BPF, "CAP_BPF" },
	{ CAP_PERFMON, "CAP_PERFMON" },
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
};

int privs_check(void)
{
	struct capsets c;
	char missing[128] = "";
	int n = 0;

	if (geteuid() == 0)
		return 0;
	if (caps_get(&c) != 0)
		return 0;       /* cannot tell: the kernel will say when it refuses */
	/* Granted but not raised (a file capability without +e, say): raise them. */
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		c.eff |= c.prm & BIT(needed[i].cap);
	c.eff |= c.prm & BIT(CAP_SYS_ADMIN);
	caps_set(&c);
	caps_get(&c);
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		int cap = needed[i].cap;

		/* The kernel takes CAP_SYS_ADMIN for CAP_BPF and CAP_PERFMON (all there was before 5.8). */
		if (c.eff & BIT(cap) || (cap != CAP_SYS_PTRACE && c.eff & BIT(CAP_SYS_ADMIN)))
			continue;
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
			 n++ ? ", " : "", needed[i].name);
	}
	if (!n)
		return 0;
	fprintf(stderr, "pybpfprof: missing capabilit%s %s (run as root, or grant CAP_BPF, CAP_PERFMON "
		"and CAP_SYS_PTRACE)\n", n > 1 ? "ies" : "y", missing);
	return EXIT_PERM;
}

bool privs_can_ptrace(void)
{
	struct capsets c;

	return caps_get(&c) == 0 && (c.eff & BIT(CAP_SYS_PTRACE));
}

/* ------------------------------------------------------------ the drop */

void privs_note_output(const char *path)
{
	outpath = path && strcmp(path, "-") != 0 ? path : NULL;
}

void privs_note_child(void)
{
	signal_child = true;
}

void privs_note_sources(void)
{
	read_sources = true;
}

void privs_note_attach(void)
{
	attach_later = true;
}

/* What the probe thread found. */
struct probe {
	capmask keep;           /* in: what it drops to */
	bool bpf_ok;            /* a map operation is not refused for want of CAP_BPF */
	bool dir_ok;            /* the output's directory is writable as is */
	bool sticky_ok;         /* and, if sticky, ours: renaming in it needs no CAP_FOWNER */
};

/*
 * Before 6.5 every bpf() command checked for CAP_BPF when unprivileged BPF
 * is disabled, map operations on an fd already held included; later kernels
 * check at program load and map creation only. Ask with a command on no
 * map: EPERM is that check, EBADF means it is past it.
 */
static bool bpf_ops_allowed(void)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = (uint32_t)-1;
	return syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr)) == 0 || errno != EPERM;
}

/* Can the temporary be renamed into place in the output's directory, as this thread is? */
static bool output_dir_ok(const char *path)
{
	char dir[4096];

	path_dir(path, dir, sizeof(dir));
	return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
}

/*
 * A sticky directory lets only the owner of a file or of the directory move
 * or replace it, else CAP_FOWNER; the temporary may have been given to
 * another user (the file's owner, or the invoking one under sudo).
 */
static bool output_sticky_ok(const char *path)
{
	char dir[4096];
	struct stat ds;

	path_dir(path, dir, sizeof(dir));
	return stat(dir, &ds) != 0 || !(ds.st_mode & S_ISVTX) || ds.st_uid == geteuid();
}

static void *probe_thread(void *arg)
{
	struct probe *pr = arg;
	struct capsets c;

	if (caps_get(&c) == 0) {
		c.eff &= pr->keep;
		c.prm &= pr->keep;
		c.inh = 0;
		if (caps_set(&c) != 0)
			return NULL;    /* found nothing: keep what it would have tested */
	}
	pr->bpf_ok = bpf_ops_allowed();
	pr->dir_ok = !outpath || output_dir_ok(outpath);
	pr->sticky_ok = !outpath || output_sticky_ok(outpath);
	return NULL;
}

void privs_drop_after_setup(void)
{
	struct probe pr = { .keep = BIT(CAP_SYS_PTRACE) };
	uid_t sudo_uid;
	gid_t sudo_gid;
	pthread_t th;
	struct capsets c;
	int last = last_cap();

	if (caps_get(&c) != 0)
		return;
	sudo_ids(&sudo_uid, &sudo_gid);
	if (signal_child && sudo_uid != (uid_t)-1)
		pr.keep |= BIT(CAP_KILL);
	if (attach_later || read_sources)
		pr.keep |= BIT(CAP_DAC_READ_SEARCH);
	if (pthread_create(&th, NULL, probe_thread, &pr) != 0 || pthread_join(th, NULL) != 0)
		return;         /* without the probe, nothing is known to be unneeded */
	if (!pr.bpf_ok)
		pr.keep |= last >= CAP_BPF ? BIT(CAP_BPF) : BIT(CAP_SYS_ADMIN);
	if (!pr.dir_ok)
		pr.keep |= BIT(CAP_DAC_OVERRIDE);
	if (!pr.sticky_ok)
		pr.keep |= BIT(CAP_FOWNER);

	/* The bounding set first: dropping from it takes CAP_SETPCAP, which goes next. */
	for (int cap = 0; cap <= last; cap++) {
		if (pr.keep & BIT(cap) || prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
			break;  /* EPERM: not ours to drop (no CAP_SETPCAP) */
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	c.eff &= pr.keep;
	c.prm &= pr.keep;
	c.inh = 0;
	if (caps_set(&c) != 0)
		fprintf(stderr, "pybpfprof: warning: cannot drop capabilities: %s\n", strerror(errno));
}

/*
 * The command is not ours to empower: a non-root pybpfprof given its
 * capabilities as ambient ones (setpriv, a systemd unit's AmbientCapabilities)
 * would pass them through exec. (Root's command runs as root anyway; under
 * sudo it has become the invoking user already.)
 */
void privs_for_command(void)
{
	struct capsets c;

	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (caps_get(&c) == 0 && c.inh) {
		c.inh = 0;
		caps_set(&c);
	}
}
