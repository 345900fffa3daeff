#!/bin/bash
# `make image`: the container image of the Containerfile, built without a
# container runtime or daemon, then checked from outside.
#
#   scripts/image.sh          build localhost/pybpfprof:VERSION, check it
#   scripts/image.sh --check  check the image already built
#
# buildah (Debian's package) builds it with chroot isolation and vfs storage,
# which need no daemon, no user namespaces and no overlay mounts; its storage
# is its own (PBP_BUILDAH_DIR, default /var/cache/pybpfprof/buildah), apart
# from podman's. Where no image registry can be reached, the base is a
# Debian 12 made by debootstrap (scripts/bookworm-chroot.sh's cached tree),
# trimmed back to minbase and committed in that storage under the name the
# Containerfile asks for (debian:12-slim), so the Containerfile is built as
# it stands. The check: mount the image's root, then with /proc and /sys
# inside, `chroot ROOT ldd` finds every shared library of the binary,
# `--version` prints this tree's version, and `dump` reads a Python of the host.
# Exit 0 when built and checked; else one line starting "image: FAILED:".
set -uo pipefail
cd "$(dirname "$0")/.."

DIR=${PBP_BUILDAH_DIR:-/var/cache/pybpfprof/buildah}
B=(buildah --root "$DIR/storage" --runroot "$DIR/run" --storage-driver vfs)
VERSION=$(sed -n 's/^#define PBP_VERSION "\(.*\)"$/\1/p' user/core/version.h)
IMAGE=localhost/pybpfprof:$VERSION
BASE=docker.io/library/debian:12-slim
LOG=build/image.log

fail() {
	echo "image: FAILED: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || fail "must run as root (chroot isolation, mounts)"
command -v buildah >/dev/null || fail "'buildah' not found (Debian: buildah)"
mkdir -p build "$DIR"
: >"$LOG"

CHECK_ONLY=0
[ "${1:-}" = "--check" ] && CHECK_ONLY=1

if [ "$CHECK_ONLY" = 0 ] && ! "${B[@]}" inspect --type image "$BASE" >/dev/null 2>&1; then
	ROOT=$(scripts/bookworm-chroot.sh) || fail "no Debian 12 tree for the base (scripts/bookworm-chroot.sh)"
	ctr=$("${B[@]}" from scratch) || fail "buildah from scratch"
	mnt=$("${B[@]}" mount "$ctr") || fail "buildah mount"
	tar -C "$ROOT" --exclude=./.pbp-stamp -cf - . | tar -C "$mnt" -xf - ||
		fail "cannot copy $ROOT into the base"
	# Back to minbase, what debian:12-slim is made from: the chroot's python3
	# and man-db would bring libraries (ncurses, ...) that could hide one
	# the runtime stage forgot to install.
	chroot "$mnt" env DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove \
		python3 python3-minimal man-db >>"$LOG" 2>&1 || fail "cannot trim the base (see $LOG)"
	rm -rf "$mnt"/var/lib/apt/lists/* "$mnt"/var/cache/apt/*.bin
	"${B[@]}" umount "$ctr" >/dev/null
	"${B[@]}" config --cmd /bin/bash "$ctr" &&
		"${B[@]}" commit --rm "$ctr" "$BASE" >>"$LOG" 2>&1 || fail "cannot commit $BASE (see $LOG)"
fi

if [ "$CHECK_ONLY" = 0 ]; then
	echo "image: building $IMAGE (log: $LOG) ..."
	"${B[@]}" bud --isolation chroot --pull=never --layers=false -t "$IMAGE" -f Containerfile . >>"$LOG" 2>&1 ||
		fail "buildah bud: $(grep -E '^(Error|error)' "$LOG" | tail -1) (see $LOG)"
fi

# The check, on the image's root as it was built.
ctr=$("${B[@]}" from --pull=never "$IMAGE") || fail "buildah from $IMAGE"
mnt=$("${B[@]}" mount "$ctr") || fail "buildah mount"
py=""
cleanup() {
	[ -n "$py" ] && kill "$py" 2>/dev/null
	umount -R -l "$mnt/sys" "$mnt/proc" 2>/dev/null
	"${B[@]}" umount "$ctr" >/dev/null 2>&1
	"${B[@]}" rm "$ctr" >/dev/null 2>&1
}
trap cleanup EXIT
mount -t proc proc "$mnt/proc" && mount --rbind --make-rslave /sys "$mnt/sys" ||
	fail "cannot mount /proc and /sys in the image's root"
BIN=/usr/local/bin/pybpfprof
missing=$(chroot "$mnt" ldd "$BIN" | grep 'not found')
[ -z "$missing" ] || fail "libraries missing in the runtime stage: $missing"
got=$(chroot "$mnt" "$BIN" --version) || fail "$BIN --version failed in the image"
[ "$got" = "pybpfprof $VERSION" ] || fail "--version says '$got', the tree $VERSION"
# The target says when it is in its function (a loaded machine starts it slowly).
ready=$(mktemp)
python3 -c 'import os, sys
def spin_for_image():
    os.unlink(sys.argv[1])
    while True: sum(range(1000))
spin_for_image()' "$ready" &
py=$!
for _ in $(seq 300); do [ -e "$ready" ] || break; sleep 0.1; done
out=$(chroot "$mnt" "$BIN" dump -p "$py" 2>&1)
grep -q spin_for_image <<<"$out" ||
	fail "dump of a host Python (pid $py) from the image does not show its frame: $(tail -3 <<<"$out")"
echo "image: $IMAGE built and checked: $got, $(chroot "$mnt" ldd "$BIN" | wc -l) libraries resolved, dump read pid $py"
