/* SPDX-License-Identifier: MIT */
#ifndef PBP_OUTPUT_SCREEN_H
#define PBP_OUTPUT_SCREEN_H

#include <stdbool.h>

#include "output/live.h"

/*
 * `top`'s full-screen view, drawn with ncurses on the terminal that stdin
 * and stdout are. One screen per process: the functions work on ncurses'
 * global state.
 */

/* Take the terminal (cbreak, no echo, keys without waiting): 0, or -PBP_E_NOENT when it cannot be driven. */
int screen_open(void);
/* Give the terminal back as it was; nothing when not open. Safe from any exit path, twice. */
void screen_close(void);
bool screen_is_open(void);
#define SCREEN_KEY_BACKTAB 0x1000      /* Shift-Tab */
#define SCREEN_KEY_OTHER 0x1001         /* a key with no character: an arrow, a resize */
/* A key pressed ('q', '\t', or one of the two above), or -1 when none is waiting. */
int screen_key(void);
/*
 * Everything, at the terminal's size now: the header, one status bar per
 * thread (as many as fit in a third of the rows), the functions, the keys.
 * thread: which thread the functions are of (v->filtered), NULL for all;
 * note: a line above the keys (a launched command's last output), or NULL.
 */
void screen_draw(const struct live_head *h, const struct live_view *v, const struct live_thread *thread,
		 const char *note);

#endif /* PBP_OUTPUT_SCREEN_H */
