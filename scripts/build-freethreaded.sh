#!/bin/bash
# Build, once, a free-threaded CPython 3.14 ("3.14t", ./configure --disable-gil)
# from Debian's own python3.14 source package, inside the sid chroot that
# scripts/sid-chroot.sh builds and caches, and cache the result there.
#
#   scripts/build-freethreaded.sh          build if needed; print the interpreter's
#                                          path inside the chroot on stdout
#   scripts/build-freethreaded.sh --force  rebuild even if a cached build exists
#   scripts/build-freethreaded.sh --check  build nothing: exit 0 and print the path
#                                          if a cached build works, else exit 1
#
# The interpreter and its shared extension modules are built (`make python
# sharedmods`, no PGO/LTO): the test suites' targets need math, _struct,
# _socket, select and _asyncio (asyncio), _ctypes (libffi-dev) and the hashes,
# not only the built-in modules. The build tree itself is the install: the
# interpreter finds its Lib/ and build/lib.*/ beside it. Environment:
#   PBP_CHROOT   the sid chroot (default /var/cache/pybpfprof/sid-chroot)
#   PBP_FT_JOBS  make -j (default 2); the build runs under nice -n 10
#   PBP_FT_SRC   a CPython 3.14 source tree or tarball (.tar.xz/.tar.gz) on the
#                host. Unset: the newest ../shared/cpython/Python-3.14.*.tar.xz
#                beside the project root (that of the main worktree too, so a
#                `git worktree` finds it), else `apt-get source python3.14`
#                (this workplace's Debian mirror serves binary .debs only:
#                its .dsc and .orig.tar.xz are 404)
#
# Result: DIR/opt/python3.14t/src/python (seen as /opt/python3.14t/src/python in
# the chroot) and DIR/opt/python3.14t/.pbp-stamp (package version, build
# seconds, load average before and after). Log: DIR.python3.14t.log.
# Exit non-zero: one line on stderr starting "build-freethreaded: FAILED:".
set -uo pipefail

DIR=${PBP_CHROOT:-/var/cache/pybpfprof/sid-chroot}
DIR=${DIR%/}
PREFIX=/opt/python3.14t
PY=$PREFIX/src/python
STAMP=$DIR$PREFIX/.pbp-stamp
LOG=$DIR.python3.14t.log
JOBS=${PBP_FT_JOBS:-2}
HERE=$(cd "$(dirname "$0")" && pwd)

# The release tarball kept beside the project root (../shared/cpython), the
# newest 3.14 there. A linked worktree's root is elsewhere: the main
# worktree's, where the shared tree sits, is found from git's common dir.
shared_source() {
	local root common cand
	common=$(git -C "$HERE/.." rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
	for root in "$HERE/.." ${common:+"$(dirname "$common")"}; do
		cand=$(ls -1 "$root"/../shared/cpython/Python-3.14.*.tar.xz 2>/dev/null | sort -V | tail -1)
		if [ -n "$cand" ] && [ -f "$cand" ]; then
			echo "$(cd "$(dirname "$cand")" && pwd)/$(basename "$cand")"
			return 0
		fi
	done
	return 1
}

# The reason is kept in DIR.python3.14t.failed too: the test suite's skip
# message quotes it.
fail() {
	echo "build-freethreaded: FAILED: $* (python 3.14t unavailable)" >&2
	echo "$(date -u +%FT%TZ) $*" >"$DIR.python3.14t.failed" 2>/dev/null
	exit 1
}

# Usable iff the stamp exists and the interpreter runs with the GIL disabled
# and has the extension modules the tests' targets import (a build of the
# interpreter alone, as this script once made, is built again).
NEEDS='import sys, ctypes, asyncio, math, hashlib, zlib; hashlib.sha256'
usable() {
	[ -f "$STAMP" ] && [ -x "$DIR$PY" ] &&
		[ "$(chroot "$DIR" "$PY" -c "$NEEDS; print(sys._is_gil_enabled())" 2>/dev/null)" = False ]
}

if [ "${1:-}" != "--force" ] && usable; then
	echo "$PY"
	exit 0
fi
[ "${1:-}" = "--check" ] && exit 1
[ "$(id -u)" = 0 ] || fail "must run as root"
"$HERE/sid-chroot.sh" >/dev/null || fail "no sid chroot (scripts/sid-chroot.sh)"

exec 9>"$DIR.python3.14t.lock" || fail "cannot open the lock"
flock -w 3600 9 || fail "timed out waiting for another build"
if [ "${1:-}" != "--force" ] && usable; then
	echo "$PY"
	exit 0
fi

# Everything runs in a private mount namespace: its /proc mount inside the
# chroot is gone when we exit, and never hides the test sessions' own mounts.
in_chroot() {
	unshare -m --propagation private sh -c \
		'mount -t proc proc "$0/proc" && exec chroot "$0" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"' \
		"$DIR" "$@"
}
step() {
	echo "=== $(date -u +%FT%TZ) $*" >>"$LOG"
}

START=$(date +%s)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$LOG"
echo "build-freethreaded: building CPython 3.14t in $DIR$PREFIX (log: $LOG) ..." >&2

step "apt sources (deb-src) and build tools"
SRC_LIST=$DIR/etc/apt/sources.list.d/pbp-deb-src.list
[ -f "$SRC_LIST" ] || sed -n 's/^deb /deb-src /p' "$DIR/etc/apt/sources.list" >"$SRC_LIST"
# The sid package lists are ~100 MB (`apt-get update` brings them back), and a
# build that stopped half way is never used: neither is kept, whatever happens.
trap 'find "$DIR/var/lib/apt/lists" -maxdepth 1 -type f -delete; rm -rf "$DIR$PREFIX.tmp"' EXIT
in_chroot apt-get update >>"$LOG" 2>&1 || fail "apt-get update in the chroot (see $LOG)"
in_chroot apt-get install -y --no-install-recommends gcc make libc6-dev dpkg-dev quilt pkg-config \
	libffi-dev zlib1g-dev \
	>>"$LOG" 2>&1 || fail "cannot install the build tools (see $LOG)"

rm -rf "$DIR$PREFIX.tmp" && mkdir -p "$DIR$PREFIX.tmp" || fail "cannot create $PREFIX.tmp"
[ -n "${PBP_FT_SRC:-}" ] || PBP_FT_SRC=$(shared_source) || PBP_FT_SRC=
if [ -n "${PBP_FT_SRC:-}" ]; then
	step "source from PBP_FT_SRC=$PBP_FT_SRC"
	mkdir "$DIR$PREFIX.tmp/src" || fail "cannot create $PREFIX.tmp/src"
	if [ -d "$PBP_FT_SRC" ]; then
		cp -a "$PBP_FT_SRC/." "$DIR$PREFIX.tmp/src/" || fail "cannot copy $PBP_FT_SRC"
	else
		tar -xf "$PBP_FT_SRC" -C "$DIR$PREFIX.tmp/src" --strip-components=1 >>"$LOG" 2>&1 ||
			fail "cannot unpack $PBP_FT_SRC"
	fi
	PKG_VER="from $PBP_FT_SRC"
else
	step "apt-get source python3.14"
	if ! in_chroot sh -c "cd $PREFIX.tmp && apt-get source python3.14" >>"$LOG" 2>&1; then
		why=$(grep -E '^E: Failed to fetch .*(404|403)' "$LOG" | head -1 | sed 's/^E: Failed to fetch //; s/ *\[IP:[^]]*\]//')
		fail "apt-get source python3.14: the Debian mirror serves no source package${why:+ ($why)}; set PBP_FT_SRC to a CPython 3.14 source tree or tarball (see $LOG)"
	fi
	SRC=$(cd "$DIR$PREFIX.tmp" && ls -d python3.14-*/ 2>/dev/null | head -1)
	[ -n "$SRC" ] || fail "no source tree after apt-get source (see $LOG)"
	PKG_VER=$(in_chroot dpkg-parsechangelog -l "$PREFIX.tmp/$SRC/debian/changelog" -S Version 2>>"$LOG")
	mv -T "$DIR$PREFIX.tmp/$SRC" "$DIR$PREFIX.tmp/src" || fail "cannot rename the source tree"
fi
grep -q '^#define PY_MINOR_VERSION[[:space:]]*14$' "$DIR$PREFIX.tmp/src/Include/patchlevel.h" 2>/dev/null ||
	fail "the source tree is not CPython 3.14 (Include/patchlevel.h)"

step "configure --disable-gil"
in_chroot sh -c "cd $PREFIX.tmp/src && ./configure --disable-gil --prefix=$PREFIX --without-ensurepip" \
	>>"$LOG" 2>&1 || fail "configure (see $LOG)"

step "make -j$JOBS python pybuilddir.txt sharedmods (nice -n 10)"
MAKE_START=$(date +%s)
in_chroot nice -n 10 make -C "$PREFIX.tmp/src" -j"$JOBS" python pybuilddir.txt sharedmods >>"$LOG" 2>&1 ||
	fail "make (see $LOG)"
MAKE_SECONDS=$(($(date +%s) - MAKE_START))

# Built beside, moved into place only once complete: a half-built tree is never
# used. The interpreter finds Lib/ relative to itself (pybuilddir.txt).
rm -rf "$DIR$PREFIX" && mv -T "$DIR$PREFIX.tmp" "$DIR$PREFIX" || fail "cannot move the build into $PREFIX"
VERSION=$(chroot "$DIR" "$PY" -c 'import sys; print(sys.version.splitlines()[0], sys._is_gil_enabled())' 2>>"$LOG") ||
	fail "$PY does not run (see $LOG)"
case "$VERSION" in *" False") ;; *) fail "$PY runs with the GIL enabled: $VERSION" ;; esac
chroot "$DIR" "$PY" -c "$NEEDS" >>"$LOG" 2>&1 || fail "$PY lacks extension modules the tests need (see $LOG)"
in_chroot apt-get clean >>"$LOG" 2>&1

ELAPSED=$(($(date +%s) - START))
{
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "build_seconds: $ELAPSED"
	echo "make_seconds: $MAKE_SECONDS"
	echo "make_jobs: $JOBS (nice -n 10)"
	echo "loadavg_before: $LOAD_BEFORE"
	echo "loadavg_after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "cpus: $(nproc)"
	echo "source: ${PKG_VER:-?}"
	echo "sys_version: $VERSION"
} >"$STAMP" || fail "cannot write the stamp"
rm -f "$DIR.python3.14t.failed"
echo "build-freethreaded: ready in ${ELAPSED}s (make ${MAKE_SECONDS}s): $PY" >&2
echo "$PY"
