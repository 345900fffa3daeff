/* SPDX-License-Identifier: MIT */
/*
 * `top` on a terminal: ncurses draws the view into its virtual screen and
 * sends only what changed, every interval and after each key. Colour comes
 * from the status table (each status's #rrggbb, taken to the nearest of the
 * terminal's eight colours) unless NO_COLOR is set or the terminal has
 * none; the status marks ('R', 'G', ...) say the same without it.
 */
#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>

#include "output/screen.h"
#include "aggregate/status.h"
#include "core/errors.h"
#include "output/live.h"

#define MIN_BAR 10
#define MAX_BAR 40
#define WHO_WIDTH 22
#define MIN_WHO 8               /* a thread id and the start of its name */

static SCREEN *scr;
static bool colour;

bool screen_is_open(void)
{
	return scr != NULL;
}

/* The nearest of the eight ANSI colours to "#rrggbb": each channel on or off. */
static short basic_colour(const char *hex)
{
	unsigned rgb = (unsigned)strtoul(hex + 1, NULL, 16);
	short c = 0;

	if (((rgb >> 16) & 0xff) >= 0x80)
		c |= COLOR_RED;
	if (((rgb >> 8) & 0xff) >= 0x80)
		c |= COLOR_GREEN;
	if ((rgb & 0xff) >= 0x80)
		c |= COLOR_BLUE;
	return c;
}

/* Pair s + 1 is status s's colour on the terminal's own background. */
static void init_colours(void)
{
	const char *no = getenv("NO_COLOR");

	colour = (!no || !no[0]) && has_colors() && start_color() == OK;
	if (!colour)
		return;
	use_default_colors();
	for (uint32_t s = 0; s < ST__COUNT; s++)
		init_pair((short)(s + 1), basic_colour(status_info(s)->colour), -1);
}

int screen_open(void)
{
	setlocale(LC_CTYPE, "");        /* UTF-8 names drawn as characters */
	scr = newterm(NULL, stdout, stdin);
	if (!scr)
		return -PBP_E_NOENT;
	cbreak();       /* not raw(): Ctrl-C stays SIGINT, which ends the run as for record */
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	init_colours();
	return 0;
}

void screen_close(void)
{
	if (!scr)
		return;
	endwin();
	delscreen(scr);
	scr = NULL;
}

int screen_key(void)
{
	int c = scr ? getch() : ERR;

	if (c == ERR)
		return -1;
	if (c == KEY_BTAB)
		return SCREEN_KEY_BACKTAB;
	return c >= KEY_MIN ? SCREEN_KEY_OTHER : c;
}

/* One line of text at row y, the rest of it cleared; cut at the right edge. */
static void line(int y, attr_t a, const char *s)
{
	move(y, 0);
	clrtoeol();
	attron(a);
	addnstr(s, COLS);
	attroff(a);
}

/* A reversed line across the whole width (our own ASCII text: one byte, one column). */
static void bar_line(int y, const char *s)
{
	char pad[1024];

	snprintf(pad, sizeof(pad), "%-*s", COLS < (int)sizeof(pad) ? COLS : (int)sizeof(pad) - 1, s);
	line(y, A_REVERSE, pad);
}

/*
 * A header of fields ("GIL held 100.0%") two spaces apart, cut before the
 * first field that does not fit whole: cut at the edge, "GIL held 100.0%"
 * read "GIL held 10" on a 40-column screen. Our own ASCII text.
 */
static void whole_fields(char *s, int cols)
{
	char *p, *last = NULL;
	bool clean;

	if (cols <= 0 || strlen(s) <= (size_t)cols)
		return;
	clean = s[cols] == ' ';         /* the last field that fits ends at the edge */
	s[cols] = '\0';
	if (clean)
		return;
	for (p = strstr(s, "  "); p; p = strstr(p + 1, "  "))
		last = p;
	if (last)
		*last = '\0';
}

static void draw_head(const struct live_head *h, const struct live_view *v)
{
	char s[512];

	snprintf(s, sizeof(s), "pybpfprof top  %.0f s  %s mode %u Hz  %d process%s  %s  by %s%s", h->run_secs,
		 h->mode, h->hz, h->processes, h->processes == 1 ? "" : "es",
		 h->cumulative ? "since the start" : "last interval", live_sort_name(h->sort),
		 h->paused ? "  [paused]" : "");
	whole_fields(s, COLS);
	bar_line(0, s);
	snprintf(s, sizeof(s), "samples %llu (%.1f/s)  lost %llu  ",
		 (unsigned long long)v->samples, h->secs > 0 ? (double)v->samples / h->secs : 0.0,
		 (unsigned long long)h->lost);
	if (h->no_gil)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "no GIL: free-threaded");
	else
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "GIL held %.1f%%  waited for %.1f%%",
			 live_pct(v->status[ST_RUNNING], v->samples), live_pct(v->status[ST_GIL_WAIT], v->samples));
	if (v->waiting)         /* --async, wall: on top of the threads', said so */
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "  + %llu of waiting tasks",
			 (unsigned long long)v->waiting);
	whole_fields(s, COLS);
	line(1, A_NORMAL, s);
}

/* The bar in its colours: one run of marks per status. */
static void draw_bar(int y, int x, const char *bar)
{
	move(y, x);
	for (const char *p = bar; *p && getcurx(stdscr) < COLS - 1; p++) {
		short pair = 0;

		for (uint32_t s = 0; colour && s < ST__COUNT; s++)
			if (status_info(s)->mark == *p)
				pair = (short)(s + 1);
		if (pair)
			attron(COLOR_PAIR(pair) | A_BOLD);
		addch((chtype)(unsigned char)*p);
		if (pair)
			attroff(COLOR_PAIR(pair) | A_BOLD);
	}
}

/* The busiest status after the bar, when there is room: "sleeping 71%". */
static void draw_main_status(const struct live_thread *t)
{
	int best = 0;
	char s[64];

	for (int i = 1; i < ST__COUNT; i++)
		if (t->status[i] > t->status[best])
			best = i;
	snprintf(s, sizeof(s), " %s %.0f%%", status_info((uint32_t)best)->name,
		 live_pct(t->status[best], t->samples));
	addnstr(s, COLS - getcurx(stdscr));
}

/*
 * A thread's row: its id, name and count first, the name cut to make room on
 * a narrow screen; its bar and busiest status only where a whole bar of
 * MIN_BAR still fits. The text stops short of the last column: ncurses moves
 * the cursor to the next line after it, and the bar would be drawn from there
 * over the row's start.
 */
static int draw_threads(int y, const struct live_view *v, int rows)
{
	int who_w = COLS - 12 < WHO_WIDTH ? COLS - 12 : WHO_WIDTH;
	int bar_w, room;
	char who[256], bar[MAX_BAR + 1], s[512];

	who_w = who_w < MIN_WHO ? MIN_WHO : who_w;
	room = COLS - 1 - (who_w + 11);
	bar_w = COLS - who_w - 11 - 18;
	bar_w = bar_w < MIN_BAR ? MIN_BAR : bar_w > MAX_BAR ? MAX_BAR : bar_w;
	bar_w = bar_w > room ? room : bar_w;
	snprintf(s, sizeof(s), "%-*s %8s  STATUS", who_w, "THREAD", "SAMPLES");
	line(y++, A_BOLD, s);
	for (uint32_t i = 0; i < v->nthreads && (int)i < rows; i++) {
		const struct live_thread *t = &v->threads[i];

		live_thread_text(t, who, sizeof(who), who_w);
		snprintf(s, sizeof(s), "%-*s %8llu  ", who_w, who, (unsigned long long)t->samples);
		line(y, A_NORMAL, s);
		if (bar_w >= MIN_BAR) {
			live_bar(t->status, t->samples, bar, bar_w);
			draw_bar(y, who_w + 11, bar);
			draw_main_status(t);
		}
		y++;
	}
	if (v->nthreads > (uint32_t)rows) {
		snprintf(s, sizeof(s), "(%u more threads)", v->nthreads - (uint32_t)rows);
		line(y++, A_DIM, s);
	}
	return y;
}

/* "R running  N native, no GIL ...": what the marks mean, in their colours. */
static int draw_legend(int y)
{
	move(y, 0);
	clrtoeol();
	for (uint32_t s = 0; s < ST__COUNT && getcurx(stdscr) < COLS - 16; s++) {
		char mark[2] = { status_info(s)->mark, 0 };

		draw_bar(y, getcurx(stdscr), mark);
		printw(" %s  ", status_info(s)->name);
	}
	return y + 1;
}

static void draw_functions(int y, int last, const struct live_head *h, const struct live_view *v,
			   const struct live_thread *thread)
{
	char who[256], s[1280], text[1024];

	if (thread)
		live_thread_text(thread, who, sizeof(who), COLS / 3);
	snprintf(s, sizeof(s), "%6s %7s  FUNCTION  FILE:LINE   (%s%s, by %s)", "%OWN", "%TOTAL",
		 thread ? "thread " : "all threads", thread ? who : "", live_sort_name(h->sort));
	line(y++, A_BOLD, s);
	for (uint32_t i = 0; i < v->norder && y <= last; i++, y++) {
		const struct func_stat *f = &v->ft.f[v->order[i]];

		live_func_text(f, text, sizeof(text), COLS - 17);
		snprintf(s, sizeof(s), "%6.1f %7.1f  %s", live_pct(f->own, v->fsamples),
			 live_pct(f->total, v->fsamples), text);
		line(y, A_NORMAL, s);
	}
	for (; y <= last; y++)
		line(y, A_NORMAL, "");
}

/* The keys, as many whole ones as fit (never one cut mid-word), q always. */
static void draw_keys(int y)
{
	static const char *const keys[] = { "o/t/n by own/total/name", "c cumulative", "Tab/a thread/all",
					    "space pause" };      /* 78 columns with q: all fit in 80 */
	static const char quit[] = "q quit";
	char s[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((int)(len + strlen(keys[i]) + 2 + 1 + strlen(quit)) <= COLS)
			len += (size_t)snprintf(s + len, sizeof(s) - len, " %s ", keys[i]);
	snprintf(s + len, sizeof(s) - len, " %s", quit);
	bar_line(y, s);
}

void screen_draw(const struct live_head *h, const struct live_view *v, const struct live_thread *thread,
		 const char *note)
{
	int y;

	if (!scr)
		return;
	draw_head(h, v);
	y = draw_threads(2, v, (LINES - 6) / 3 > 1 ? (LINES - 6) / 3 : 1);
	y = draw_legend(y);
	draw_functions(y, note ? LINES - 3 : LINES - 2, h, v, thread);
	if (note)
		line(LINES - 2, A_DIM, note);
	draw_keys(LINES - 1);
	refresh();
}
