/* SPDX-License-Identifier: MIT */
/* The modes' names (sample/mode.h). */
#include <strings.h>

#include "sample/mode.h"

static const char *const names[] = { [MODE_CPU] = "cpu", [MODE_WALL] = "wall", [MODE_GIL] = "gil" };

#define NMODES ((int)(sizeof(names) / sizeof(names[0])))

int mode_by_name(const char *name)
{
	for (int i = 0; i < NMODES; i++)
		if (strcasecmp(name, names[i]) == 0)
			return i;
	return -1;
}

const char *mode_name(int mode)
{
	return mode >= 0 && mode < NMODES ? names[mode] : "?";
}
