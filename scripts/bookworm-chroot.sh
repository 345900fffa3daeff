#!/bin/bash
# Build, once, a Debian 12 (bookworm) chroot, and cache it outside the repo,
# as scripts/sid-chroot.sh does for sid: the package tests install the .deb
# into it (on an overlay, so the cached tree stays as built).
#
#   scripts/bookworm-chroot.sh          build if needed; print the chroot dir on stdout
#   scripts/bookworm-chroot.sh --force  rebuild even if a cached chroot exists
#
# Environment:
#   PBP_BOOKWORM_CHROOT  where it lives (default /var/cache/pybpfprof/bookworm-chroot)
#   PBP_BOOKWORM_MIRROR  Debian mirror (default: the first one this machine's
#                        apt sources name for Debian's main archive)
#   PBP_BOOKWORM_TIMEOUT seconds debootstrap may take (default 2700: a loaded
#                        2-core machine took over 900)
#
# The caching (lock, temporary dir, swap) is scripts/chroot-cache.sh's, as
# for sid. minbase, plus python3 (a target to profile) and man-db (`man -w`). Built in
# DIR.tmp.XXXXXX and renamed into place once python3 runs in it; DIR/.pbp-stamp
# says when and from where. Its package lists are kept, so that apt inside
# resolves the package's dependencies without an `apt-get update`.
# Exit 0: stdout is the chroot dir. Else one line on stderr starting
# "bookworm-chroot: FAILED:", which the tests turn into a skip.
set -uo pipefail

DIR=${PBP_BOOKWORM_CHROOT:-/var/cache/pybpfprof/bookworm-chroot}
DIR=${DIR%/}
STAMP=.pbp-stamp
LOG=$DIR.log
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

fail() {
	echo "bookworm-chroot: FAILED: $*" >&2
	exit 1
}

usable() {
	[ -f "$1/$STAMP" ] && chroot "$1" /usr/bin/python3 -c 'pass' >/dev/null 2>&1
}

# shellcheck source=scripts/chroot-cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/chroot-cache.sh"
cache_hit

[ "$(id -u)" = 0 ] || fail "must run as root to build $DIR"
command -v debootstrap >/dev/null || fail "'debootstrap' not found (make deps installs it)"
MIRROR=${PBP_BOOKWORM_MIRROR:-$(mirror)}
[ -n "$MIRROR" ] || fail "no Debian mirror in /etc/apt/sources.list*; set PBP_BOOKWORM_MIRROR"
mkdir -p "$(dirname "$DIR")" || fail "cannot create $(dirname "$DIR")"

cache_lock
cache_tmp

START=$(date +%s)
echo "bookworm-chroot: building Debian 12 in $DIR (log: $LOG) ..." >&2
echo "=== $(date -u +%FT%TZ) debootstrap bookworm $MIRROR" >"$LOG"
if ! timeout "${PBP_BOOKWORM_TIMEOUT:-2700}" debootstrap --variant=minbase \
	--include=python3,man-db bookworm "$TMP" "$MIRROR" >>"$LOG" 2>&1; then
	last=$(grep -E '^(E|W):' "$LOG" | tail -1)
	fail "debootstrap of bookworm from $MIRROR failed: ${last:-$(tail -1 "$LOG")} (see $LOG)"
fi
# debootstrap leaves the lists of the suite it fetched; apt needs them to be
# its own: one update, kept in the cache.
chroot "$TMP" env DEBIAN_FRONTEND=noninteractive apt-get update >>"$LOG" 2>&1 ||
	fail "apt-get update inside the chroot failed (see $LOG)"
chroot "$TMP" apt-get clean >>"$LOG" 2>&1
PY=$(chroot "$TMP" /usr/bin/python3 -c 'import sys; print(sys.version.split()[0])' 2>>"$LOG") ||
	fail "python3 does not run in the chroot (see $LOG)"
{
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds: $(($(date +%s) - START))"
	echo "mirror: $MIRROR"
	echo "python3: $PY"
} >"$TMP/$STAMP" || fail "cannot write the stamp"

cache_install
echo "bookworm-chroot: ready in $(($(date +%s) - START))s: $DIR, Python $PY" >&2
echo "$DIR"
