#!/bin/sh
# Installs the Debian packages pybpfprof needs to build and test. Idempotent:
# does nothing (and needs no network) when everything is already there.
set -eu
PKGS="clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool make gcc pkg-config \
      python3 python3-pytest python3-pytest-xdist debootstrap libclang-rt-14-dev \
      xxd chromium fonts-dejavu-core \
      protobuf-c-compiler libprotobuf-c-dev golang-go nodejs \
      libmicrohttpd-dev libcurl4-openssl-dev libcjson-dev prometheus python3-yaml \
      valgrind strace sudo podman runc libncurses-dev tmux libdw-dev python3-dev python3-numpy libunwind-dev \
      debhelper lintian"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm (the speedscope test fetches the viewer with it): Debian's package,
# unless the installed node brings its own, as NodeSource's does.
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "pybpfprof: missing Debian packages:$missing (run 'sudo make deps')" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
