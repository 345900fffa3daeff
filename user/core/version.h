/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_VERSION_H
#define PBP_CORE_VERSION_H

/* The one place the version is written: --version and the profiles'
 * exporter fields read it here, and `make deb` reads it with sed for the
 * Debian package's changelog (keep it one quoted string on one line). */
#define PBP_VERSION "0.1.0"

#endif
