/* SPDX-License-Identifier: MIT */
/*
 * `pybpfprof top`: where the time goes, live. The recording engine runs as
 * for `record` (same targets, modes and filters); a timer closes a window
 * every interval, and the window's sink keeps a copy of it (the view of the
 * last interval) and merges it into the whole run's aggregate (the
 * cumulative view, and what -o writes at the end). On a terminal the view
 * is full-screen (output/screen.c); otherwise, and with --once, it is a
 * plain table (output/live.c) on stdout.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "aggregate/merge.h"
#include "cli/args.h"
#include "cli/runopts.h"
#include "cli/top.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/text.h"
#include "output/formats.h"
#include "output/live.h"
#include "output/output.h"
#include "output/screen.h"
#include "output/writers.h"
#include "sample/loop.h"
#include "session/report.h"
#include "session/session.h"

#define PLAIN_ROWS 20           /* functions per plain table */
/*
 * A key wakes the loop (sampler_wake_on) and is answered at once. A resize
 * is a signal, not input: it is seen within KEYS_LOOK_NS. Where the
 * terminal cannot wake the loop, keys are looked for every KEYS_EVERY_NS,
 * and so is a launched command's output, lest its pipe fill and stop it.
 */
#define KEYS_LOOK_NS 1000000000ull
#define KEYS_EVERY_NS 100000000ull
#define KEY_TAB '\t'
#define TAIL_BYTES 4096

struct top {
	struct session_opts o;  /* the engine's, as `record` takes them */
	struct session *s;
	/* options */
	bool once;
	bool full;              /* the full screen: both ends are a terminal */
	double interval;
	/* state */
	struct agg *last, *whole;       /* the last interval shown, the whole run */
	struct window shown;            /* the span of last */
	uint64_t lost_before, lost_shown;
	uint64_t start_unix_ns;
	int failed;                     /* a window's sink: -PBP_E_* */
	bool ending;                    /* the run's last window: kept, not shown */
	uint64_t whole_end_ns;          /* the end of the last window merged into whole */
	bool cumulative, paused;
	enum live_sort sort;
	bool filter;                    /* the functions of one thread: */
	uint32_t fpid, ftid;
	/* A launched command under the full screen: its output, read from a pipe. */
	int cmd_fd;                     /* the pipe's end, -1 when none */
	uint64_t keys_next;             /* keys (a resize) looked for then, input or not */
	char tail[TAIL_BYTES];          /* its last bytes, printed when the screen closes */
	size_t tail_len;
	bool tail_cut;
};

enum { OPT_ONCE = 3000, OPT_INTERVAL, OPT_SUBPROC, OPT_NO_SUBPROC, OPT_ASYNC };

static const struct argp_option opts[] = {
	{ "subprocesses", OPT_SUBPROC, NULL, 0,
	  "With -p: the processes' descendants too (a command's are followed by default)", 1 },
	{ "no-subprocesses", OPT_NO_SUBPROC, NULL, 0, "With a command: its own process only", 1 },
	{ "async", OPT_ASYNC, NULL, 0,
	  "Python 3.11+: asyncio tasks as functions 'task NAME' (the running task and those awaiting "
	  "it; in wall mode also each waiting task once a tick, its leaf '[awaiting] WHAT')", 1 },
	{ NULL, 0, NULL, 0, "View:", 3 },
	{ "once", OPT_ONCE, NULL, 0, "Print one interval's table on stdout and exit", 3 },
	{ "interval", OPT_INTERVAL, "SECONDS", 0, "Refresh this often (default 1)", 3 },
	{ "output", 'o', "FILE", 0, "At the end, write the whole run's profile here", 3 },
	{ "format", 'f', "FORMAT", 0,
	  "The -o file's format: collapsed, html, svg, speedscope, gecko (without sample times: top "
	  "keeps none), pprof or pstats (default: from its extension)", 3 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *st)
{
	struct top *t = st->input;
	struct session_opts *r = &t->o;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = r;
		break;
	case OPT_ONCE: t->once = true; break;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 0.1, 3600, &t->interval))
			argp_error(st, "invalid --interval '%s' (0.1 to 3600 seconds)", arg);
		break;
	case 'o': r->outpath = output_path(st, arg); break;
	case 'f':
		r->format = format_by_name(arg);
		if (r->format < 0)
			argp_error(st, "unknown format '%s'", arg);
		break;
	case OPT_SUBPROC: r->subprocesses = 1; break;
	case OPT_NO_SUBPROC: r->subprocesses = -1; break;
	case OPT_ASYNC: r->sampling.async = true; break;
	case ARGP_KEY_ARGS:
		r->cmd = st->argv + st->next;
		break;
	case ARGP_KEY_ARG:
		return ARGP_ERR_UNKNOWN;
	case ARGP_KEY_END:
		runopts_end_targets(st, r);
		output_format_check(st, r->outpath, r->format >= 0);
		if (r->format >= 0 && !r->outpath)
			argp_error(st, "-f goes with -o (top writes no profile on stdout)");
		r->no_output = !r->outpath;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char doc[] =
	"Show where the time goes, live: the samples, the GIL's share and each thread's status "
	"split, and the functions by own and total share, refreshed every second. Full-screen "
	"on a terminal (keys: o, t, n sort by own, total, name; c the last interval or since the "
	"start; Tab the next thread alone, a all threads; space pause; q quit); a plain table "
	"every interval when stdout is not a terminal, or once with --once."
	"\vExamples:\n"
	"  sudo pybpfprof top -p 1234\n"
	"  sudo pybpfprof top -m wall -p 1234 -o run.html\n"
	"  sudo pybpfprof top --once -p 1234\n"
	"  sudo pybpfprof top --async -m wall -p 1234\n"
	"  sudo pybpfprof top -- python3 app.py";

/* ------------------------------------------------------------- showing */

static int term_width(void)
{
	struct winsize ws;

	return ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 0;
}

static void head_of(const struct top *t, struct live_head *h)
{
	uint64_t end = t->cumulative ? t->whole_end_ns : t->shown.end_ns;
	struct session_stats st;

	session_stats(t->s, &st);
	*h = (struct live_head){ .mode = mode_name(st.mode), .hz = st.hz,
				 .run_secs = (double)(end - st.start_ns) / 1e9,
				 .secs = (double)(end - (t->cumulative ? st.start_ns : t->shown.start_ns)) / 1e9,
				 .lost = t->cumulative ? t->lost_before + t->lost_shown : t->lost_shown,
				 .processes = st.processes, .cumulative = t->cumulative,
				 .paused = t->paused, .sort = t->sort, .no_gil = st.no_gil };
}

/* The plain table on stdout, a blank line between two. */
static int show_plain(struct top *t)
{
	struct live_head h;
	struct live_view v;
	int err;

	head_of(t, &h);
	err = live_build(t->cumulative ? t->whole : t->last, false, 0, 0, &v);
	if (err)
		return report_error(NULL, err), err;   /* out of memory: said, as a sink's error is */
	live_sort(&v, t->sort);
	live_print(stdout, &h, &v, PLAIN_ROWS, t->once ? term_width() : 0);
	if (!t->once)
		putchar('\n');
	live_free(&v);
	if (fflush(stdout) == 0)
		return 0;
	/* A reader that quit (EPIPE) ends the run quietly; anything else is said. */
	if (errno != EPIPE)
		fprintf(stderr, "pybpfprof: cannot write stdout: %s\n", strerror(errno));
	return -PBP_E_IO;
}

/* ------------------------------------------------------------- a launched command's output */

static void keep_tail(struct top *t, const char *buf, size_t n)
{
	if (n >= TAIL_BYTES) {
		buf += n - TAIL_BYTES, n = TAIL_BYTES;
		t->tail_len = 0, t->tail_cut = true;
	} else if (t->tail_len + n > TAIL_BYTES) {
		size_t drop = t->tail_len + n - TAIL_BYTES;

		memmove(t->tail, t->tail + drop, t->tail_len - drop);
		t->tail_len -= drop, t->tail_cut = true;
	}
	memcpy(t->tail + t->tail_len, buf, n);
	t->tail_len += n;
}

/* "command: LINE", its last line, escaped ("" when it said nothing yet). */
static void command_line(const struct top *t, char *out, size_t len)
{
	char line[512];
	size_t end = t->tail_len, start;

	while (end && (t->tail[end - 1] == '\n' || t->tail[end - 1] == '\r'))
		end--;
	for (start = end; start && t->tail[start - 1] != '\n'; start--)
		;
	snprintf(line, sizeof(line), "%.*s", (int)(end - start), t->tail + start);
	out[0] = '\0';
	if (line[0]) {
		snprintf(out, len, "command: ");
		text_escape(out + strlen(out), len - strlen(out), line, TEXT_PLAIN);
	}
}

/*
 * What the command wrote since the last look, without waiting: kept under
 * the full screen, passed on to stderr otherwise. True when it wrote.
 */
static bool read_command(struct top *t)
{
	bool got = false;
	char buf[4096];

	while (t->cmd_fd >= 0) {
		ssize_t n = read(t->cmd_fd, buf, sizeof(buf));

		if (n > 0) {
			if (screen_is_open())
				keep_tail(t, buf, (size_t)n);
			else
				fwrite(buf, 1, (size_t)n, stderr);
			got = true;
		} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			break;
		} else {
			close(t->cmd_fd);       /* every writer gone, or the pipe failed */
			t->cmd_fd = -1;
		}
	}
	return got;
}

/* The screen closed: its last output on stderr, where it would have been. */
static void command_finish(struct top *t)
{
	if (t->tail_len) {
		if (t->tail_cut)
			fputs("[...]\n", stderr);
		fwrite(t->tail, 1, t->tail_len, stderr);
	}
	read_command(t);
	if (t->cmd_fd >= 0)
		close(t->cmd_fd);
	t->cmd_fd = -1;
}

/* Under the full screen the command writes into a pipe, not over the screen. */
static int command_pipe(struct top *t)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) != 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0)
		return report_error(NULL, pbp_err_from_errno(errno, -PBP_E_IO));
	t->cmd_fd = fds[0];
	t->o.command_out = fds[1];
	return 0;
}

/* The full screen: the view of the last interval or the whole run, for every thread or one. */
static int show_screen(struct top *t)
{
	const struct live_thread *thread = NULL;
	char note[256];
	struct live_head h;
	struct live_view v;
	int err;

	head_of(t, &h);
	err = live_build(t->cumulative ? t->whole : t->last, t->filter, t->fpid, t->ftid, &v);
	if (err)
		return report_error(NULL, err), err;
	live_sort(&v, t->sort);
	for (uint32_t i = 0; t->filter && i < v.nthreads; i++)
		if (v.threads[i].pid == t->fpid && v.threads[i].tid == t->ftid)
			thread = &v.threads[i];
	command_line(t, note, sizeof(note));
	screen_draw(&h, &v, thread ? thread : t->filter ? &(struct live_thread){ .pid = t->fpid, .tid = t->ftid } : NULL,
		    note[0] ? note : NULL);
	live_free(&v);
	return 0;
}

static int show(struct top *t)
{
	return screen_is_open() ? show_screen(t) : show_plain(t);
}

/* ------------------------------------------------------------- the window's sink */

/*
 * Every window goes into the whole run's aggregate; unless paused, it is
 * also kept as the last interval and shown.
 */
static int keep_window(void *ctx, const struct agg *a, const struct window *w)
{
	struct top *t = ctx;
	struct session_stats st;
	int err = agg_merge(t->whole, a, NULL, NULL);

	if (err)
		return report_error(NULL, err), err;
	t->whole_end_ns = w->end_ns;
	if (t->paused || (t->ending && !t->once))
		return 0;
	session_stats(t->s, &st);
	t->lost_before += t->lost_shown;
	t->lost_shown = st.kernel[PBP_STAT_LOST] - t->lost_before;
	agg_reset(t->last);
	t->shown = *w;
	if ((err = agg_merge(t->last, a, NULL, NULL)) != 0)
		return report_error(NULL, err), err;
	return show(t);
}

/* --once: the run ends after one interval, and its one window is shown as it closes. */
static bool close_window(void *ctx, struct timer *tm, uint64_t now)
{
	struct top *t = ctx;

	if (t->once)
		return false;
	tm->next += tm->period;
	/* A failed window is said by its sink; stdout gone (a reader that quit): the run ends. */
	t->failed = session_close(t->s, now, false);
	return !t->failed;
}

/* ------------------------------------------------------------- keys */

/* The thread after the one shown alone (the first when none is), in the view's order. */
static void next_thread(struct top *t, int step)
{
	struct live_view v;
	uint32_t at = 0;

	if (live_build(t->cumulative ? t->whole : t->last, false, 0, 0, &v) != 0 || !v.nthreads) {
		live_free(&v);
		return;
	}
	for (uint32_t i = 0; t->filter && i < v.nthreads; i++)
		if (v.threads[i].pid == t->fpid && v.threads[i].tid == t->ftid)
			at = (i + v.nthreads + (uint32_t)step) % v.nthreads;
	if (!t->filter && step < 0)
		at = v.nthreads - 1;
	t->filter = true;
	t->fpid = v.threads[at].pid;
	t->ftid = v.threads[at].tid;
	live_free(&v);
}

/* One key: false for q. */
static bool on_key(struct top *t, int key)
{
	switch (key) {
	case 'q': case 'Q': return false;
	case 'o': t->sort = LIVE_BY_OWN; break;
	case 't': t->sort = LIVE_BY_TOTAL; break;
	case 'n': t->sort = LIVE_BY_NAME; break;
	case 'c': t->cumulative = !t->cumulative; break;
	case ' ': case 'p': t->paused = !t->paused; break;
	case KEY_TAB: next_thread(t, 1); break;
	case SCREEN_KEY_BACKTAB: next_thread(t, -1); break;
	case 'a': t->filter = false; break;
	}
	return true;
}

/* Every key waiting, then the screen again (a terminal resized is a key too). */
static bool read_keys(void *ctx, struct timer *tm, uint64_t now)
{
	struct top *t = ctx;
	bool any = false;
	int key;

	(void)tm;
	t->keys_next = now + KEYS_LOOK_NS;
	while ((key = screen_key()) >= 0) {
		if (!on_key(t, key))
			return false;
		any = true;
	}
	if (any)
		show(t);
	return true;
}

/*
 * Due at once when the terminal has input (it woke the loop), else at
 * keys_next. A terminal hung up stays readable: SIGHUP ends the run, and
 * the loop must not spin meanwhile.
 */
static uint64_t keys_due(void *ctx)
{
	const struct top *t = ctx;
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) == POLLIN)
		return TIMER_NOW;
	return t->keys_next;
}

/* What a launched command wrote: its last line on the screen. */
static bool read_output(void *ctx, struct timer *tm, uint64_t now)
{
	struct top *t = ctx;

	(void)tm, (void)now;
	if (read_command(t) && screen_is_open())
		show(t);
	return true;
}

/* The full screen's timers: keys woken by the terminal where it can, a command's output polled. */
static void add_terminal_timers(struct top *t)
{
	struct session *s = t->s;

	if (screen_is_open() && session_wake_on(s, STDIN_FILENO) == 0)
		session_add_timer(s, &(struct timer){ .due = keys_due, .fn = read_keys, .ctx = t });
	else if (screen_is_open())
		session_add_timer(s, &(struct timer){ .period = KEYS_EVERY_NS, .next = TIMER_NOW, .fn = read_keys,
						      .ctx = t });
	if (t->cmd_fd >= 0)
		session_add_timer(s, &(struct timer){ .period = KEYS_EVERY_NS, .next = TIMER_NOW, .fn = read_output,
						      .ctx = t });
}

/* -o: the whole run's profile, as `record` writes it. */
static int write_whole(struct top *t)
{
	struct session_stats st;
	struct window w;
	int err;

	session_stats(t->s, &st);
	w = (struct window){ .start_ns = st.start_ns, .end_ns = st.end_ns, .start_unix_ns = t->start_unix_ns };
	if (session_one_root(t->s))
		agg_drop_single_root(t->whole);
	err = session_write(t->s, t->whole, &w, false);
	return err ? exit_code_for(err) : 0;
}

/* The launched command has its end of the pipe: ours goes. */
static void close_command_out(struct top *t)
{
	if (t->o.command_out > 0)
		close(t->o.command_out);
	t->o.command_out = 0;
}

static int run(struct top *t)
{
	struct session *s = t->s;
	uint64_t period = (uint64_t)(t->interval * 1e9);
	struct session_stats st;
	int code = session_start(s);

	close_command_out(t);
	if (code)
		return code;
	session_stats(s, &st);
	t->start_unix_ns = st.start_unix_ns;
	t->shown = (struct window){ .start_ns = st.start_ns, .end_ns = st.start_ns, .start_unix_ns = st.start_unix_ns };
	t->whole_end_ns = st.start_ns;
	session_add_sink(s, &(struct window_sink){ .write = keep_window, .ctx = t });
	session_add_timer(s, &(struct timer){ .period = period, .next = st.start_ns + period, .fn = close_window,
					      .ctx = t });
	/* Full screen when both ends are a terminal that ncurses can drive; else the plain table. */
	if (t->full && screen_open() == 0)
		show(t);        /* the frame at once, filled in after the first interval */
	t->keys_next = st.start_ns + KEYS_LOOK_NS;
	add_terminal_timers(t);
	session_run(s);
	screen_close();         /* before anything more is said on the terminal */
	command_finish(t);
	t->ending = true;
	/* A command that never ran (or ran no Python) is said before --once's
	   table, which would show nothing: the error alone, as record says it. */
	if (!t->failed && (code = session_check_profiled(s)) != 0)
		return code;
	if (t->failed || (t->failed = session_close_run(s, false)) != 0)
		return exit_code_for(t->failed);
	return t->o.outpath ? write_whole(t) : 0;
}

int top_main(int argc, char **argv)
{
	static const struct argp_child children[] = { { &runopts_argp, 0, NULL, 0 }, { 0 } };
	struct argp argp = { opts, parse_opt, "[-- COMMAND [ARG...]]", doc, children, NULL, NULL };
	static struct top t;
	int code;

	t = (struct top){ .o = { .format = -1, .sampling = { .mode = MODE_CPU, .hz = 99 }, .quiet = true,
				 .stats = STATS_NONE },
			  .interval = 1.0, .cmd_fd = -1 };
	argp_parse(&argp, argc, argv, 0, NULL, &t);
	t.full = !t.once && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	t.last = agg_new();
	t.whole = agg_new();
	code = t.last && t.whole ? 0 : report_error(NULL, -PBP_E_NOMEM);
	/* Before the session takes its options: the command's output goes into the pipe. */
	if (!code && t.full && t.o.cmd)
		code = command_pipe(&t);
	if (!code)
		code = session_new(&t.o, &t.s);
	if (!code)
		code = run(&t);
	close_command_out(&t);
	screen_close();         /* a run that failed early */
	command_finish(&t);
	code = session_stop(t.s, code);
	agg_free(t.last);
	agg_free(t.whole);
	session_free(t.s);
	return code;
}
