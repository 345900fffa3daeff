#!/bin/bash
# `make deb`: the Debian package, built by Debian's own tools.
#
#   scripts/deb.sh OUTDIR
#
# Copies the tracked files into OUTDIR/pybpfprof-VERSION/, writes there the
# debian/changelog that dpkg-buildpackage needs, from the one version of the
# tree (PBP_VERSION in user/core/version.h) and the last commit's date, then
# builds the source and binary packages (unsigned) and runs lintian on them:
# an error fails the build; the warnings we accept are overridden, each with
# its reason, in debian/*lintian-overrides. Leaves OUTDIR/pybpfprof_*.deb.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/deb.sh OUTDIR}

fail() { echo "make deb: $*" >&2; exit 1; }
for tool in dpkg-buildpackage dh lintian git; do
	command -v "$tool" >/dev/null || fail "'$tool' not found (make deps installs it)"
done
VERSION=$(sed -n 's/^#define PBP_VERSION "\(.*\)"$/\1/p' user/core/version.h)
[ -n "$VERSION" ] || fail "no PBP_VERSION in user/core/version.h"
MAINT=$(sed -n 's/^Maintainer: //p' debian/control)
DATE=$(git log -1 --format=%aD 2>/dev/null || date -R)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

SRC=$OUT/pybpfprof-$VERSION
rm -rf "$OUT"
mkdir -p "$SRC"
# The working tree's files (tracked, or new and not ignored), edits included:
# what `make` would build. The tests, benches and docs stay out: they need
# root and BPF, so a package build cannot run them (`make test` does), and
# the fuzz seeds include ELF files lintian would take for binaries without
# source.
git ls-files -z --cached --others --exclude-standard | grep -zvE '^(tests|bench|docs)/' |
	tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$SRC"
cat >"$SRC/debian/changelog" <<CHANGELOG
pybpfprof ($VERSION) unstable; urgency=medium

  * Built from commit $COMMIT (version from user/core/version.h).

 -- $MAINT  $DATE
CHANGELOG

LOG=$OUT/build.log
echo "make deb: dpkg-buildpackage in $SRC (log: $LOG)"
(cd "$SRC" && dpkg-buildpackage -us -uc -j"$(nproc)") >"$LOG" 2>&1 ||
	fail "dpkg-buildpackage failed: $(grep -E 'error|Error' "$LOG" | tail -1) (see $LOG)"
CHANGES=$(ls "$OUT"/pybpfprof_"$VERSION"_*.changes)
lintian --fail-on error --info "$CHANGES" | tee "$OUT/lintian.log" ||
	fail "lintian found errors (see $OUT/lintian.log)"
ls "$OUT"/pybpfprof_"$VERSION"_*.deb
