#!/bin/bash
# Build, once, a Debian sid chroot that holds CPython 3.14, and cache it
# outside the repo. The integration tests profile that interpreter through
# `chroot DIR /usr/bin/python3.14 script.py`.
#
#   scripts/sid-chroot.sh          build if needed; print the chroot dir on stdout
#   scripts/sid-chroot.sh --force  rebuild even if a cached chroot exists
#
# Environment:
#   PBP_CHROOT      where the chroot lives (default /var/cache/pybpfprof/sid-chroot)
#   PBP_SID_MIRROR  Debian mirror          (default: the first one this machine's
#                   apt sources name)
#   PBP_SID_DEV=0   do not add libpython3.14-dev (CPython's headers, internal/ too)
#   PBP_SID_EXTRA   more interpreters to add, tested beside 3.14 (default:
#                   "python3.13 python3.13-dbg python3.14-dbg": sid's 3.13.x, a
#                   later patch release than pyenv's 3.13.0, and the Py_DEBUG
#                   builds /usr/bin/python3.13d and python3.14d); "" for none.
#                   A chroot built before they were added gets them with --force.
#   PBP_SID_TIMEOUT seconds debootstrap may take (default 900)
#
# The chroot is built in DIR.tmp.XXXXXX beside DIR and renamed into place only
# once python3.14 runs in it, so a half-built chroot is never used. DIR/.pbp-stamp
# records the build date and what was found. /proc is NOT left mounted inside:
# whoever runs things in the chroot mounts it for as long as it needs it.
# Exit 0: stdout is the chroot dir, one line. Exit non-zero: one line on stderr
# starting "sid-chroot: FAILED:"; callers treat that as "3.14 unavailable".
set -uo pipefail

DIR=${PBP_CHROOT:-/var/cache/pybpfprof/sid-chroot}
DIR=${DIR%/}
PY=/usr/bin/python3.14
STAMP_NAME=.pbp-stamp
LOG=$DIR.log
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

fail() {
	echo "sid-chroot: FAILED: $* (python 3.14 unavailable)" >&2
	exit 1
}

# A chroot is usable iff it carries our stamp and its python3.14 runs.
usable() {
	[ -f "$1/$STAMP_NAME" ] && [ -f "$1$PY" ] &&
		chroot "$1" "$PY" -c 'import sys; print(sys.version)' >/dev/null 2>&1
}

# shellcheck source=scripts/chroot-cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/chroot-cache.sh"
cache_hit
MIRROR=${PBP_SID_MIRROR:-$(mirror)}
[ -n "$MIRROR" ] || fail "no Debian mirror in /etc/apt/sources.list*; set PBP_SID_MIRROR"

[ "$(id -u)" = 0 ] || fail "must run as root to build $DIR"
for tool in chroot flock findmnt; do
	command -v "$tool" >/dev/null || fail "'$tool' not found"
done
mkdir -p "$(dirname "$DIR")" || fail "cannot create $(dirname "$DIR")"

cache_lock

if ! command -v debootstrap >/dev/null; then
	echo "sid-chroot: installing debootstrap" >&2
	{ apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }; } \
		>"$LOG" 2>&1 || fail "could not install debootstrap (see $LOG)"
fi

cache_tmp

START=$(date +%s)
echo "sid-chroot: building Debian sid + python3.14 in $DIR (log: $LOG) ..." >&2
echo "=== $(date -u +%FT%TZ) debootstrap sid $MIRROR" >>"$LOG"
# minbase: essential packages + apt only; python3.14 pulls in its stdlib.
if ! timeout "${PBP_SID_TIMEOUT:-900}" debootstrap --variant=minbase --include=python3.14 \
	sid "$TMP" "$MIRROR" >>"$LOG" 2>&1; then
	last=$(grep -E '^(E|W):' "$LOG" | tail -1)
	fail "debootstrap of sid from $MIRROR failed: ${last:-$(tail -1 "$LOG")} (see $LOG)"
fi
usable_py() { chroot "$TMP" "$PY" -c 'import sys; print(sys.version)' 2>>"$LOG"; }
VERSION=$(usable_py) || fail "debootstrap finished but $PY does not run in the chroot (see $LOG)"

# Find out what sid has (apt-cache inside the chroot), and add the CPython
# headers, internal ones included, when the package exists (a few MiB).
cp -L /etc/resolv.conf "$TMP/etc/resolv.conf" 2>/dev/null
# The mirror may serve a sid snapshot whose Release file is past Valid-Until;
# debootstrap does not care, apt refuses it unless told not to.
echo 'Acquire::Check-Valid-Until "false";' >"$TMP/etc/apt/apt.conf.d/99pybpfprof"
mount -t proc proc "$TMP/proc" || fail "cannot mount /proc in $TMP"
in_chroot() { chroot "$TMP" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
PKG_VER="?" DEFAULT_PY3="?" DEV="not installed" EXTRA=""
if in_chroot apt-get update >>"$LOG" 2>&1; then
	PKG_VER=$(in_chroot apt-cache policy python3.14 | awk '/Installed:/ {print $2}')
	DEFAULT_PY3=$(in_chroot apt-cache show python3 2>/dev/null |
		awk '/^Depends:/ {if (match($0, /python3\.[0-9]+/)) print substr($0, RSTART, RLENGTH); exit}')
	if [ "${PBP_SID_DEV:-1}" != 0 ]; then
		if in_chroot apt-cache show libpython3.14-dev >/dev/null 2>&1; then
			if in_chroot apt-get install -y --no-install-recommends libpython3.14-dev >>"$LOG" 2>&1; then
				DEV="libpython3.14-dev $(in_chroot dpkg-query -W -f='${Version}' libpython3.14-dev)"
			else
				echo "sid-chroot: warning: libpython3.14-dev did not install (see $LOG); headers missing" >&2
			fi
		else
			DEV="no libpython3.14-dev in sid"
		fi
	fi
	EXTRA=""
	for pkg in ${PBP_SID_EXTRA-python3.13 python3.13-dbg python3.14-dbg}; do
		if in_chroot apt-get install -y --no-install-recommends "$pkg" >>"$LOG" 2>&1; then
			EXTRA="$EXTRA $pkg=$(in_chroot dpkg-query -W -f='${Version}' "$pkg")"
		else
			echo "sid-chroot: warning: $pkg did not install (see $LOG); its tests will be skipped" >&2
		fi
	done
	in_chroot apt-get clean >>"$LOG" 2>&1
	# The sid package lists are ~100 MB; `apt-get update` in the chroot brings them back.
	find "$TMP/var/lib/apt/lists" -maxdepth 1 -type f -delete
else
	echo "sid-chroot: warning: apt-get update inside the chroot failed (see $LOG); no headers" >&2
fi
umount "$TMP/proc" || umount -l "$TMP/proc"

OFFSETS=$(cd "$TMP" && find usr/include -name pycore_debug_offsets.h 2>/dev/null | head -1)
# Check once more after apt: the interpreter must still run.
VERSION=$(usable_py) || fail "$PY stopped working after installing headers (see $LOG)"
ELAPSED=$(($(date +%s) - START))
{
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds: $ELAPSED"
	echo "mirror: $MIRROR"
	echo "python3.14_package: $PKG_VER"
	echo "python3.14_sys_version: $(echo "$VERSION" | head -1)"
	echo "sid_default_python3: $DEFAULT_PY3"
	echo "dev_headers: $DEV"
	echo "extra_packages:${EXTRA:-}"
	echo "pycore_debug_offsets.h: ${OFFSETS:+/$OFFSETS}"
} >"$TMP/$STAMP_NAME" || fail "cannot write the stamp"

cache_install
echo "sid-chroot: ready in ${ELAPSED}s: $DIR, Python $(echo "$VERSION" | head -1)" >&2
echo "$DIR"
