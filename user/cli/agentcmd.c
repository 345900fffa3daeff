/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof agent`: the whole host, all the time, for a fleet's profile
 * store. The recording engine runs as with -a; every second its aggregate
 * closes into a slice of the history (agent/history.c), which the HTTP
 * server reads for a pull and the push timer reads, per service, at every
 * interval. Nothing is stopped or reloaded between windows.
 */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/history.h"
#include "agent/log.h"
#include "agent/metrics.h"
#include "agent/profiles.h"
#include "agent/push.h"
#include "agent/server.h"
#include "agent/service.h"
#include "aggregate/aggregate.h"
#include "cli/agentcmd.h"
#include "cli/args.h"
#include "cli/runopts.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/stagecpu.h"
#include "pybpfprof.h"
#include "sample/loop.h"
#include "session/report.h"
#include "session/session.h"

#define SLICE_NS 1000000000ull          /* the history's grain: a pull's seconds are whole slices */
#define MIN_HISTORY_NS 60000000000ull
/* SIGTERM: the last window is pushed within this; a transfer is cut at most a second later (libcurl's progress calls) */
#define STOP_FLUSH_NS 3000000000ull
/* --rescan's default: /proc looked at again (execs are seen at once), as Alloy's discovery does */
#define REDISCOVER_NS 60000000000ull
#define ENV_PREFIX "PYBPFPROF_"
#define MAX_ENV_ARGS 64

struct agent {
	struct session_opts o;  /* the engine's, as -a with the agent's filters */
	struct session *s;
	enum pbp_mode mode;     /* as sampled: read by the server's thread */
	unsigned hz;
	/* options */
	double interval;
	const char *listen, *service_template, *node, *host_root;
	bool cmdline_labels;    /* the process label: the command line, not the script's name */
	struct push_opts push;
	struct server_opts serve;
	size_t max_memory;
	struct sockaddr_storage listen_sa;
	/* state */
	struct history *hist;
	struct services *svc;
	struct pusher *pusher;
	struct server *srv;
	uint64_t pushed_until;  /* wall ns: the end of the last window pushed */
	uint64_t history_ns;
	char node_buf[HOST_NAME_MAX + 1];
	/* what /metrics reads, published by the loop once a slice */
	pthread_mutex_t lock;
	uint64_t samples, lost, slices, windows, reads;
	uint64_t name_reads, names_checked, names_unsampled, lists_spared, labels_made, labels_kept;
	uint32_t processes;
};

enum { OPT_INTERVAL = 2000, OPT_LISTEN, OPT_PUSH, OPT_TENANT, OPT_BASIC_AUTH, OPT_BEARER, OPT_QUEUE,
       OPT_MAXMEM, OPT_SERVICE, OPT_NODE, OPT_HOST_ROOT, OPT_LOG_LEVEL, OPT_LISTEN_TOKEN, OPT_TLS_CERT,
       OPT_TLS_KEY, OPT_CMDLINE_LABELS, OPT_RESCAN };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Agent:", 4 },
	{ "interval", OPT_INTERVAL, "SECONDS", 0, "Push a window per service this often (default 15)", 4 },
	{ "listen", OPT_LISTEN, "[ADDR:]PORT", 0,
	  "Serve /debug/pprof/profile (?seconds= 1 to max(60, 2 x --interval)), /metrics and /healthz "
	  "here (ADDR default 127.0.0.1; a pod IP or 0.0.0.0 must be asked for)", 4 },
	{ "listen-token-file", OPT_LISTEN_TOKEN, "FILE", 0,
	  "With --listen: every request but /healthz must carry the token in FILE as a bearer token "
	  "(FILE re-read when it changes)", 4 },
	{ "tls-cert-file", OPT_TLS_CERT, "FILE", 0,
	  "With --listen: serve HTTPS with this PEM certificate (chain); reloaded when it changes", 4 },
	{ "tls-key-file", OPT_TLS_KEY, "FILE", 0, "The PEM private key of --tls-cert-file", 4 },
	{ "push", OPT_PUSH, "URL", 0, "Push to this Grafana Pyroscope server (URL/ingest)", 4 },
	{ "tenant", OPT_TENANT, "ID", 0, "With --push: the X-Scope-OrgID header", 4 },
	{ "basic-auth", OPT_BASIC_AUTH, "USER:PASSWORD", 0, "With --push: HTTP basic authentication", 4 },
	{ "bearer-token-file", OPT_BEARER, "FILE", 0,
	  "With --push: send the token in FILE (read before each push) as a bearer token", 4 },
	{ "queue-size", OPT_QUEUE, "N", 0,
	  "With --push: windows kept while the server is away; the oldest go first (default 64)", 4 },
	{ "max-memory", OPT_MAXMEM, "MB", 0,
	  "Memory for the history and the push queue together (default 256)", 4 },
	{ "service-name", OPT_SERVICE, "TEMPLATE", 0,
	  "A process's service: {namespace} {pod} {container} {container_id} {comm} {script} {pid} "
	  "(default {namespace}/{container} in Kubernetes, else {script})", 4 },
	{ "node", OPT_NODE, "NAME", 0, "The node label (default $NODE_NAME, else the host name)", 4 },
	{ "host-root", OPT_HOST_ROOT, "DIR", 0,
	  "Where the node's / is mounted, for the container runtimes' bundles (default /)", 4 },
	{ "rescan", OPT_RESCAN, "SECONDS", 0,
	  "Look again this often for processes missed, targets gone and sampled ones' labels, "
	  "twice as often for their thread names (default 60)", 4 },
	{ "log-level", OPT_LOG_LEVEL, "LEVEL", 0, "error, warn, info (default) or debug", 4 },
	{ "cmdline-labels", OPT_CMDLINE_LABELS, NULL, 0,
	  "Label pulled profiles' processes with their command lines (default: the script or module "
	  "name; arguments may hold secrets)", 4 },
	{ 0 },
};

static error_t parse_push(int key, char *arg, struct argp_state *st, struct agent *g)
{
	unsigned long long n;

	switch (key) {
	case OPT_PUSH:
		if (!push_url_valid(arg))
			argp_error(st, "invalid --push URL '%s' (http:// or https://)", arg);
		g->push.url = arg;
		break;
	case OPT_TENANT: g->push.tenant = arg; break;
	case OPT_LISTEN_TOKEN: g->serve.token_file = arg; break;
	case OPT_TLS_CERT: g->serve.cert_file = arg; break;
	case OPT_TLS_KEY: g->serve.key_file = arg; break;
	case OPT_BASIC_AUTH:
		if (!strchr(arg, ':'))
			argp_error(st, "invalid --basic-auth (USER:PASSWORD)");
		g->push.basic_auth = arg;
		break;
	case OPT_BEARER: g->push.bearer_token_file = arg; break;
	case OPT_QUEUE:
		if (parse_uint(arg, 1, 100000, &n))
			argp_error(st, "invalid --queue-size '%s' (1 to 100000 windows)", arg);
		g->push.queue_size = (uint32_t)n;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* What locks --listen goes with it, the TLS files together, and needs a libmicrohttpd with TLS. */
static void check_listen_opts(struct argp_state *st, const struct agent *g)
{
	const struct server_opts *o = &g->serve;

	if (!g->listen && (o->token_file || o->cert_file || o->key_file))
		argp_error(st, "--listen-token-file, --tls-cert-file and --tls-key-file go with --listen");
	if (!o->cert_file != !o->key_file)
		argp_error(st, "--tls-cert-file and --tls-key-file go together");
	if (o->cert_file && !server_tls_supported())
		argp_error(st, "--tls-cert-file: this libmicrohttpd was built without TLS");
}

/* The arguments made from the environment. */
static char env_store[8192];

/* Set while one environment variable is checked alone: errors are caught, end checks skipped. */
static FILE *env_check_err;

static error_t parse_opt(int key, char *arg, struct argp_state *st)
{
	struct agent *g = st->input;
	unsigned long long n;
	double secs;
	int level;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &g->o;
		if (env_check_err)
			st->err_stream = env_check_err;
		break;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 1, 3600, &g->interval))
			argp_error(st, "invalid --interval '%s' (1 to 3600 seconds)", arg);
		break;
	case OPT_RESCAN:
		if (parse_seconds(arg, 1, 3600, &secs))
			argp_error(st, "invalid --rescan '%s' (1 to 3600 seconds)", arg);
		g->o.rescan_ns = (uint64_t)(secs * 1e9);
		break;
	case OPT_LISTEN:
		if (server_parse_listen(arg, &g->listen_sa, &(socklen_t){ 0 }))
			argp_error(st, "invalid --listen '%s' ([ADDR:]PORT, ADDR an IP address)", arg);
		g->listen = arg;
		break;
	case OPT_MAXMEM:
		if (parse_uint(arg, 16, 1 << 20, &n))
			argp_error(st, "invalid --max-memory '%s' (16 to 1048576 MB)", arg);
		g->max_memory = (size_t)n << 20;
		break;
	case OPT_SERVICE:
		if (services_bad_placeholder(arg))
			argp_error(st, "invalid --service-name: unknown placeholder at '%s'",
				   services_bad_placeholder(arg));
		g->service_template = arg;
		break;
	case OPT_NODE: g->node = arg; break;
	case OPT_CMDLINE_LABELS: g->cmdline_labels = true; break;
	case OPT_HOST_ROOT: g->host_root = arg; break;
	case OPT_LOG_LEVEL:
		level = log_level_by_name(arg);
		if (level < 0)
			argp_error(st, "invalid --log-level '%s' (error, warn, info or debug)", arg);
		log_set_level((enum log_level)level);
		break;
	case ARGP_KEY_ARG:
		argp_error(st, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (env_check_err)
			break;
		if (!g->listen && !g->push.url)
			argp_error(st, "give --listen, --push or both");
		if (!g->push.url && (g->push.tenant || g->push.basic_auth || g->push.bearer_token_file))
			argp_error(st, "--tenant, --basic-auth and --bearer-token-file go with --push");
		check_listen_opts(st, g);
		break;
	default:
		return parse_push(key, arg, st, g);
	}
	return 0;
}

static const char doc[] =
	"Profile every Python process on this host continuously, as a node agent: serve the last "
	"seconds as pprof (pull: Parca, Grafana Alloy's pyroscope.scrape), push a window per service "
	"to Grafana Pyroscope, or both; until SIGTERM.\n\n"
	"Every option can also come from the environment: --queue-size as PYBPFPROF_QUEUE_SIZE=N, "
	"a flag as PYBPFPROF_VERBOSE=1; the command line wins."
	"\vExamples:\n"
	"  sudo pybpfprof agent --listen 4100\n"
	"  sudo pybpfprof agent --push http://pyroscope:4040 --interval 15\n"
	"  curl -o p.pb.gz 'http://127.0.0.1:4100/debug/pprof/profile?seconds=10'";

/* ------------------------------------------------------------- environment */

/* PYBPFPROF_QUEUE_SIZE for "queue-size". */
static void env_name(const char *opt, char *out, size_t len)
{
	size_t o = (size_t)snprintf(out, len, "%s", ENV_PREFIX);

	for (; *opt && o + 1 < len; opt++)
		out[o++] = *opt == '-' ? '_' : (char)toupper((unsigned char)*opt);
	out[o] = '\0';
}

/* A flag's variable is true for 1, true, yes or on (any case). */
static bool env_true(const char *v)
{
	return !strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on");
}

static const struct argp *agent_argp;

/*
 * A variable's value alone through the parser first, its complaint caught:
 * a bad one is blamed on the variable, as a pod spec sets it, not on an
 * option nobody typed. Exits with EXIT_USAGE then.
 */
static void env_check(char *arg, const char *var, const char *value)
{
	static struct agent scratch;
	char *argv[] = { "pybpfprof agent", arg, NULL }, *buf = NULL, *nl;
	size_t len = 0;

	scratch = (struct agent){ .o = { .all = true } };
	env_check_err = open_memstream(&buf, &len);
	if (!env_check_err)
		return;         /* the real parse still says what is wrong, as an option */
	argp_parse(agent_argp, 2, argv, ARGP_NO_EXIT | ARGP_NO_HELP, NULL, &scratch);
	fclose(env_check_err);
	env_check_err = NULL;
	if (scratch.o.comm_re)
		regfree(&scratch.o.comm_regex);
	if (len) {
		nl = strchr(buf, '\n');
		if (nl)
			*nl = '\0';
		/* "pybpfprof agent: invalid --interval 'abc' (...)": the part after the name */
		fprintf(stderr, "pybpfprof agent: %s=%s: %s\n", var,
			strstr(var, "AUTH") ? "(hidden)" : value,      /* a password is not logged */
			strncmp(buf, argv[0], strlen(argv[0])) == 0 ? buf + strlen(argv[0]) + 2 : buf);
		free(buf);
		exit(EXIT_USAGE);
	}
	free(buf);
}

/* Each option set in the environment, as "--name=value", put before the command line's. */
static int env_args(const struct argp_option *o, char **out, int n, char *store, size_t *used, size_t cap)
{
	for (; o->name || o->key || o->doc; o++) {
		char var[64];
		const char *v;
		int w;

		if (!o->name)
			continue;
		env_name(o->name, var, sizeof(var));
		v = getenv(var);
		if (!v || !v[0] || n >= MAX_ENV_ARGS || (!o->arg && !env_true(v)))
			continue;
		w = o->arg ? snprintf(store + *used, cap - *used, "--%s=%s", o->name, v)
			   : snprintf(store + *used, cap - *used, "--%s", o->name);
		if (w < 0 || (size_t)w >= cap - *used)
			break;
		env_check(store + *used, var, v);
		out[n++] = store + *used;
		*used += (size_t)w + 1;
	}
	return n;
}

/* ------------------------------------------------------------- sinks and timers */

static void describe(void *ctx, pid_t pid, const struct cgroup_info *cg, struct proc_meta *m)
{
	struct agent *g = ctx;

	services_describe(g->svc, pid, cg, m);
}

/* The process root's text by default: a command line's arguments may be passwords or tokens. */
static void script_name(void *ctx, pid_t pid, char *out, size_t len)
{
	(void)ctx;
	service_script_of(pid, out, len);
}

/* A closed slice: into the history; the figures /metrics shows are published. */
static int keep_slice(void *ctx, struct agg *a, const struct window *w)
{
	struct agent *g = ctx;
	struct session_counts st;
	uint64_t samples = agg_total(a);
	int err = history_take(g->hist, a, w->start_unix_ns, w->start_unix_ns + (w->end_ns - w->start_ns));

	if (err)
		alog(LOG_ERROR, "slice lost", "error=\"%s\"", pbp_strerror(err));
	session_counts(g->s, &st);
	pthread_mutex_lock(&g->lock);
	g->samples += samples;
	g->lost = st.lost;
	g->slices++;
	g->processes = (uint32_t)st.processes;
	g->reads = st.reads;
	g->name_reads = st.name_reads;
	g->names_checked = st.names_checked;
	g->names_unsampled = st.names_unsampled;
	g->lists_spared = st.lists_spared;
	g->labels_made = st.labels_made;
	g->labels_kept = st.labels_kept;
	pthread_mutex_unlock(&g->lock);
	return 0;
}

/*
 * The slice and push timers keep their phase (next += period, not now +
 * period): both count from the run's start, so a push due with a slice
 * runs after it (table order) and its window ends on a slice's end.
 */
static bool close_slice(void *ctx, struct timer *t, uint64_t now)
{
	struct agent *g = ctx;

	stagecpu_enter(STAGE_SLICES);
	session_close(g->s, now, false);
	stagecpu_leave();
	t->next += t->period;
	return true;
}

/* "SERVICE{node=NODE}": the node is the one series label beside the service that Pyroscope needs. */
static void series_name(const struct agent *g, const char *service, char *out, size_t len)
{
	char node[HOST_NAME_MAX + 1];

	snprintf(node, sizeof(node), "%s", g->node);
	for (char *p = node; *p; p++)
		if (strchr(",{}=\"", *p) || (unsigned char)*p < 0x20)
			*p = '_';
	snprintf(out, len, "%s{node=%s}", service, node);
}

struct push_round {
	struct agent *g;
	uint64_t since, until;
	uint32_t services;
};

static int push_service(const char *service, void *ctx)
{
	struct push_round *pr = ctx;
	struct agent *g = pr->g;
	struct profile_filter f = { .service = service };
	struct profile_kind k = { mode_name(g->mode), g->hz, true };
	struct span got;
	char *body, name[512];
	size_t len;
	int err = profile_build(g->hist, pr->since, pr->until, &f, &k, &body, &len, &got);

	if (err)
		return err;
	series_name(g, service, name, sizeof(name));
	pr->services++;
	/* Rounded, not floored and ceiled: one window's until is the next one's from. */
	return push_enqueue(g->pusher, name, (got.start_ns + 500000000ull) / 1000000000ull,
			    (got.end_ns + 500000000ull) / 1000000000ull, body, len);
}

/* The window since the last push, one profile per service in it. */
static void push_window(struct agent *g)
{
	struct push_round pr = { g, g->pushed_until, wall_ns(), 0 };
	int err = history_services(g->hist, pr.since, pr.until, push_service, &pr);
	struct push_stats ps;
	struct session_counts st;

	if (err)
		alog(LOG_ERROR, "window not queued", "error=\"%s\"", pbp_strerror(err));
	push_stats(g->pusher, &ps);
	session_counts(g->s, &st);
	alog(LOG_INFO, "window queued", "services=%u processes=%d queued=%u pushed_total=%llu dropped_total=%llu",
	     pr.services, st.processes, ps.queued, (unsigned long long)ps.pushes,
	     (unsigned long long)ps.dropped);
	g->pushed_until = pr.until;
	pthread_mutex_lock(&g->lock);
	g->windows++;
	pthread_mutex_unlock(&g->lock);
}

static bool push_due(void *ctx, struct timer *t, uint64_t now)
{
	(void)now;
	push_window(ctx);
	t->next += t->period;
	return true;
}

static bool rediscover(void *ctx, struct timer *t, uint64_t now)
{
	struct agent *g = ctx;

	(void)t, (void)now;
	session_rediscover(g->s);
	return true;
}

/* ------------------------------------------------------------- endpoints */

static int profile_error(char **body, size_t *len, int status, const char *msg)
{
	*body = strdup(msg);
	*len = *body ? strlen(msg) : 0;
	return status;
}

static int serve_profile(void *ctx, const char *seconds, const char *service, const char *pid, char **body,
			 size_t *len)
{
	struct agent *g = ctx;
	struct profile_filter f = { .service = service };
	struct profile_kind k = { mode_name(g->mode), g->hz, false };
	double max = (double)g->history_ns / 1e9, secs = g->interval;
	uint64_t now = wall_ns();
	struct span got;
	char msg[160];

	if (seconds && parse_seconds(seconds, 1, max, &secs)) {
		snprintf(msg, sizeof(msg), "invalid seconds '%.40s' (1 to %.0f)\n", seconds, max);
		return profile_error(body, len, 400, msg);
	}
	if (pid && parse_pid(pid, &f.pid))
		return profile_error(body, len, 400, "invalid pid\n");
	if (profile_build(g->hist, now - (uint64_t)(secs * 1e9), now, &f, &k, body, len, &got))
		return profile_error(body, len, 500, "out of memory\n");
	return 200;
}

/* /metrics, one row each but the per-stage CPU family; rows[] in serve_metrics is sized by this. */
enum {
	M_SAMPLES, M_LOST, M_PROCESSES, M_WINDOWS, M_READS, M_NAME_READS, M_NAMES_CHECKED, M_NAMES_UNSAMPLED,
	M_LISTS_SPARED, M_LABELS_MADE, M_LABELS_KEPT,
	M_HISTORY_BYTES, M_HISTORY_DROPPED, M_PUSHES,
	M_PUSH_ERRORS, M_PUSH_REJECTED, M_PUSH_BYTES, M_PUSH_DROPPED, M_QUEUE_WINDOWS, M_QUEUE_BYTES, M_CPU,
	M_RSS, M_HTTP_LATE, M_HTTP_SHED, M__COUNT
};

static const struct metric metric_rows[] = {
	[M_SAMPLES] = { "pybpfprof_samples_total", "counter", "Samples taken into profiles.", 0, NULL },
	[M_LOST] = { "pybpfprof_lost_samples_total", "counter", "Samples the kernel could not hand over.", 0, NULL },
	[M_PROCESSES] = { "pybpfprof_processes", "gauge", "Python processes being profiled.", 0, NULL },
	[M_WINDOWS] = { "pybpfprof_windows_total", "counter", "Push windows closed.", 0, NULL },
	[M_READS] = { "pybpfprof_process_reads_total", "counter",
		      "Reads of the profiled processes' memory (an idle process has none after it is found).", 0,
		      NULL },
	[M_NAME_READS] = { "pybpfprof_thread_name_reads_total", "counter",
			   "Reads of a process's threading registries for its threads' names.", 0, NULL },
	[M_NAMES_CHECKED] = { "pybpfprof_thread_names_checked_total", "counter",
			      "Names of sampled threads found unchanged by a read of their Thread alone.", 0, NULL },
	[M_NAMES_UNSAMPLED] = { "pybpfprof_thread_names_unsampled_total", "counter",
				"Names of threads not sampled since they were read, not looked at again.", 0, NULL },
	[M_LISTS_SPARED] = { "pybpfprof_thread_lists_spared_total", "counter",
			     "Thread-list reads not made: the new threads that asked for them had ended.", 0, NULL },
	[M_LABELS_MADE] = { "pybpfprof_labels_made_total", "counter",
			    "Processes' labels made from /proc (when found, then only after a cgroup move).", 0,
			    NULL },
	[M_LABELS_KEPT] = { "pybpfprof_labels_kept_total", "counter",
			    "Sampled processes' labels found unchanged at a periodic look, not made again.", 0,
			    NULL },
	[M_HISTORY_BYTES] = { "pybpfprof_history_bytes", "gauge", "Bytes the history of slices holds.", 0, NULL },
	[M_HISTORY_DROPPED] = { "pybpfprof_history_slices_dropped_total", "counter",
				"Slices dropped early to stay within --max-memory.", 0, NULL },
	[M_PUSHES] = { "pybpfprof_pushes_total", "counter", "Profiles the push server accepted.", 0, NULL },
	[M_PUSH_ERRORS] = { "pybpfprof_push_errors_total", "counter", "Push attempts that failed (retried or not).",
			    0, NULL },
	[M_PUSH_REJECTED] = { "pybpfprof_push_rejected_total", "counter", "Profiles the push server refused for good.",
			      0, NULL },
	[M_PUSH_BYTES] = { "pybpfprof_push_bytes_total", "counter", "Bytes of profiles pushed.", 0, NULL },
	[M_PUSH_DROPPED] = { "pybpfprof_push_dropped_windows_total", "counter",
			     "Profiles dropped unsent (queue full, or over an hour old).", 0, NULL },
	[M_QUEUE_WINDOWS] = { "pybpfprof_queue_windows", "gauge", "Profiles waiting to be pushed.", 0, NULL },
	[M_QUEUE_BYTES] = { "pybpfprof_queue_bytes", "gauge", "Bytes of profiles waiting to be pushed.", 0, NULL },
	[M_CPU] = { "process_cpu_seconds_total", "counter", "CPU time of the agent.", 0, NULL },
	[M_RSS] = { "process_resident_memory_bytes", "gauge", "Resident memory of the agent.", 0, NULL },
	[M_HTTP_LATE] = { "pybpfprof_http_late_closed_total", "counter",
			  "Connections closed for not sending their request head within 5 s.", 0, NULL },
	[M_HTTP_SHED] = { "pybpfprof_http_shed_total", "counter",
			  "Connections waiting for their head closed to make room for others.", 0, NULL },
};
_Static_assert(sizeof(metric_rows) / sizeof(metric_rows[0]) == M__COUNT, "a metric without its row");

/* 'stage="naming"' for each stage, made once: the rows point at them. */
static char stage_labels[STAGE__COUNT][32];

static int serve_metrics(void *ctx, char **body, size_t *len)
{
	struct agent *g = ctx;
	struct history_stats hs;
	struct push_stats ps = { 0 };
	struct metric rows[M__COUNT + STAGE__COUNT];
	uint64_t late = 0, shed = 0, stage_ns[STAGE__COUNT];
	size_t n = 0;

	history_stats(g->hist, &hs);
	if (g->pusher)
		push_stats(g->pusher, &ps);
	stagecpu_flush();       /* this thread's time up to now, this scrape included */
	stagecpu_read(stage_ns);
#define ROW(m, v) (rows[n] = metric_rows[m], rows[n++].value = (double)(v))
	pthread_mutex_lock(&g->lock);
	ROW(M_SAMPLES, g->samples);
	ROW(M_LOST, g->lost);
	ROW(M_PROCESSES, g->processes);
	ROW(M_WINDOWS, g->windows);
	ROW(M_READS, g->reads);
	ROW(M_NAME_READS, g->name_reads);
	ROW(M_NAMES_CHECKED, g->names_checked);
	ROW(M_NAMES_UNSAMPLED, g->names_unsampled);
	ROW(M_LISTS_SPARED, g->lists_spared);
	ROW(M_LABELS_MADE, g->labels_made);
	ROW(M_LABELS_KEPT, g->labels_kept);
	pthread_mutex_unlock(&g->lock);
	ROW(M_HISTORY_BYTES, hs.bytes);
	ROW(M_HISTORY_DROPPED, hs.dropped);
	ROW(M_PUSHES, ps.pushes);
	ROW(M_PUSH_ERRORS, ps.errors);
	ROW(M_PUSH_REJECTED, ps.rejected);
	ROW(M_PUSH_BYTES, ps.bytes);
	ROW(M_PUSH_DROPPED, ps.dropped);
	ROW(M_QUEUE_WINDOWS, ps.queued);
	ROW(M_QUEUE_BYTES, ps.queued_bytes);
	ROW(M_CPU, metrics_cpu_seconds());
	ROW(M_RSS, metrics_rss_bytes());
	if (g->srv) {
		server_stats(g->srv, &late, &shed);
		ROW(M_HTTP_LATE, late);
		ROW(M_HTTP_SHED, shed);
	}
#undef ROW
	for (int i = 0; i < STAGE__COUNT; i++)
		rows[n++] = (struct metric){ "pybpfprof_agent_cpu_seconds_total", "counter",
					     "CPU time of the agent by stage (its threads' clocks, read around each "
					     "stage run).", (double)stage_ns[i] / 1e9, stage_labels[i] };
	return metrics_format(rows, n, body, len);
}

/* ------------------------------------------------------------- run */

/* History: a pull's longest reach and two push windows; 3/4 of --max-memory, the queue the rest. */
static int agent_init(struct agent *g)
{
	uint64_t twice = (uint64_t)(2 * g->interval * 1e9);

	if (!g->node) {
		g->node = getenv("NODE_NAME");
		if (!g->node || !g->node[0]) {
			gethostname(g->node_buf, sizeof(g->node_buf) - 1);
			g->node = g->node_buf;
		}
	}
	g->history_ns = twice > MIN_HISTORY_NS ? twice : MIN_HISTORY_NS;
	g->hist = history_new(g->history_ns, g->max_memory / 4 * 3);
	g->svc = services_new(g->service_template, g->host_root, g->node);
	g->push.queue_bytes = g->max_memory / 4;
	pthread_mutex_init(&g->lock, NULL);
	if (!g->hist || !g->svc)
		return report_error(NULL, -PBP_E_NOMEM);
	g->o.describe = describe;
	g->o.process_name = g->cmdline_labels ? NULL : script_name;
	g->o.describe_ctx = g;
	return session_new(&g->o, &g->s);
}

/* The one line for a server that did not start; its exit code. */
static int listen_error(const struct agent *g, int err, const char *file)
{
	if (file && err == -PBP_E_IO)
		fprintf(stderr, "pybpfprof: cannot read %s: %s\n", file, strerror(errno));
	else if (file && err == -PBP_E_INVAL)
		fprintf(stderr, "pybpfprof: %s: %s\n", file, file == g->serve.token_file ? "no token in it"
			: "not a PEM certificate (chain) and its private key");
	else if (err == -PBP_E_NOMEM || err == -PBP_E_MFILE)
		return report_error(NULL, err);
	else
		fprintf(stderr, "pybpfprof: cannot listen on %s: %s\n", g->listen, pbp_strerror(err));
	return exit_code_for(err);
}

/* After the BPF side is up: the server answers only once there is something to serve. */
static int agent_start(struct agent *g)
{
	struct server_ops ops = { serve_profile, serve_metrics, g };
	struct session_stats st;
	const char *what;
	int err;

	session_stats(g->s, &st);
	g->mode = st.mode;
	g->hz = st.hz;
	g->push.sample_rate = g->hz;
	for (int i = 0; i < STAGE__COUNT; i++)
		snprintf(stage_labels[i], sizeof(stage_labels[i]), "stage=\"%s\"", stagecpu_name((enum stage)i));
	stagecpu_enable();      /* before the threads start: each says what it is */
	if (g->push.url && (err = push_start(&g->push, &g->pusher)) != 0)
		return report_error(NULL, err);
	if (g->listen && (err = server_start(&g->listen_sa, &ops, &g->serve, &g->srv, &what)) != 0)
		return listen_error(g, err, what);
	g->pushed_until = st.start_unix_ns;
	session_add_sink(g->s, &(struct window_sink){ .take = keep_slice, .ctx = g });
	session_keep_locations(g->s);   /* keep_slice merges: a second's slice names the same frames */
	session_add_timer(g->s, &(struct timer){ .period = SLICE_NS, .next = st.start_ns + SLICE_NS,
						 .fn = close_slice, .ctx = g });
	session_add_timer(g->s, &(struct timer){ .period = g->o.rescan_ns, .next = st.start_ns + g->o.rescan_ns,
						 .fn = rediscover, .ctx = g, .slack = SLICE_NS });
	if (g->pusher)
		session_add_timer(g->s, &(struct timer){ .period = (uint64_t)(g->interval * 1e9),
							 .next = st.start_ns + (uint64_t)(g->interval * 1e9),
							 .fn = push_due, .ctx = g });
	alog(LOG_INFO, "agent started", "mode=%s hz=%u interval_s=%g rescan_s=%g listen=%s push=%s node=%s",
	     mode_name(g->mode), g->hz, g->interval, (double)g->o.rescan_ns / 1e9, g->listen ? g->listen : "-",
	     g->push.url ? g->push.url : "-", g->node);
	return 0;
}

/* SIGTERM: the open slice closes, the last window is pushed within STOP_FLUSH_NS. */
static void agent_finish(struct agent *g)
{
	struct session_stats st;

	session_close_run(g->s, false);
	if (g->pusher) {
		push_window(g);
		push_stop(g->pusher, mono_ns() + STOP_FLUSH_NS);
		g->pusher = NULL;
	}
	session_stats(g->s, &st);
	alog(LOG_INFO, "agent stopped", "samples=%llu taken=%llu delivered=%llu lost=%llu fired=%llu",
	     (unsigned long long)g->samples, (unsigned long long)st.kernel[PBP_STAT_TAKEN],
	     (unsigned long long)st.kernel[PBP_STAT_DELIVERED], (unsigned long long)st.kernel[PBP_STAT_LOST],
	     (unsigned long long)st.kernel[PBP_STAT_FIRED]);
}

static void agent_free(struct agent *g)
{
	server_stop(g->srv);    /* first: its thread reads the history */
	push_stop(g->pusher, mono_ns());
	history_free(g->hist);
	services_free(g->svc);
	pthread_mutex_destroy(&g->lock);
}

int agent_main(int argc, char **argv)
{
	static const struct argp_child children[] = { { &runopts_argp, 0, NULL, 0 }, { 0 } };
	struct argp argp = { opts, parse_opt, NULL, doc, children, NULL, NULL };
	static struct agent g;
	char *args[MAX_ENV_ARGS + 1 + 256];
	size_t used = 0;
	int n = 1, code;

	g = (struct agent){ .o = { .format = -1, .sampling = { .mode = MODE_CPU, .hz = HOST_HZ },
				   .all = true, .quiet = true, .stats = STATS_NONE, .no_output = true,
				   .rescan_ns = REDISCOVER_NS },
			    .interval = 15, .max_memory = (size_t)256 << 20,
			    .push = { .queue_size = 64 } };
	if (argc > 256)
		return fprintf(stderr, "pybpfprof: too many arguments\n"), EXIT_USAGE;
	args[0] = argv[0];
	agent_argp = &argp;
	n = env_args(opts, args, n, env_store, &used, sizeof(env_store));
	n = env_args(runopts_argp.options, args, n, env_store, &used, sizeof(env_store));
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	argp_parse(&argp, n, args, 0, NULL, &g);
	code = agent_init(&g);
	if (!code)
		code = session_start(g.s);
	if (!code)
		code = agent_start(&g);
	if (!code) {
		session_run(g.s);
		agent_finish(&g);
	}
	agent_free(&g);
	code = session_stop(g.s, code);
	session_free(g.s);
	return code;
}
