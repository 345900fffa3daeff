# shellcheck shell=bash
# Sourced by scripts/sid-chroot.sh and scripts/bookworm-chroot.sh: what
# keeping a chroot built once in a cache directory takes. The caller sets
# DIR (the cache) and FORCE (1: rebuild), and defines fail MESSAGE (exits)
# and usable DIR (true when DIR is a chroot fit to use).

# The main archive's URL from apt's sources: one-line (.list) and deb822
# (.sources) files; the security archive is not a mirror of it.
mirror() {
	local url
	url=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" && $2 !~ /security/ && $2 ~ /^https?:/ {print $2; exit}')
	[ -n "$url" ] || url=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '$1 == "URIs:" && $2 !~ /security/ {print $2; exit}')
	echo "$url"
}

# Unmount everything mounted at or below $1, deepest first.
umount_under() {
	local m
	[ -e "$1" ] || return 0
	findmnt -rn -o TARGET 2>/dev/null | awk -v d="$1" '$0 == d || index($0, d "/") == 1' |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
}

# Cached and working: print DIR and exit 0. No lock, no network (< 0.1 s).
cache_hit() {
	if [ "$FORCE" = 0 ] && usable "$DIR"; then
		echo "$DIR"
		exit 0
	fi
}

# One builder at a time (fd 9 holds DIR.lock until exit); the others wait
# and then use its result. Holding the lock, clear what killed builds left.
cache_lock() {
	local old
	exec 9>"$DIR.lock" || fail "cannot open $DIR.lock"
	flock -w 3600 9 || fail "timed out waiting for another build ($DIR.lock)"
	cache_hit
	for old in "$DIR".tmp.*; do
		[ -d "$old" ] || continue
		umount_under "$old"
		rm -rf --one-file-system "$old"
	done
}

# TMP: a new directory beside DIR to build in, removed at exit unless
# cache_install has put it in place.
cache_tmp() {
	TMP=$(mktemp -d "$DIR.tmp.XXXXXX") || fail "cannot create a temporary dir beside $DIR"
	chmod 755 "$TMP"  # it becomes the chroot's /
	trap 'umount_under "$TMP"; rm -rf --one-file-system "$TMP"' EXIT
	trap 'exit 130' INT TERM
}

# TMP becomes DIR; a stale DIR (no stamp, broken, --force) goes first.
cache_install() {
	local old
	if [ -e "$DIR" ]; then
		umount_under "$DIR"
		old=$(mktemp -d "$DIR.tmp.XXXXXX") && mv -T "$DIR" "$old/old" &&
			rm -rf --one-file-system "$old" || fail "cannot remove the old $DIR"
	fi
	mv -T "$TMP" "$DIR" || fail "cannot rename $TMP to $DIR"
	trap - EXIT
}
