#!/bin/bash
# `make demo`: start scripts/demo_app.py (a small threaded service on Debian's
# /usr/bin/python3), profile it in wall-clock mode for DEMO_SECONDS (10), write
# demo.html at the top of the repository, print where it is and what the
# profile found, and stop the app. Leaves nothing running, whatever happens.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${DEMO_PYTHON:-/usr/bin/python3}
SECONDS_TO_PROFILE=${DEMO_SECONDS:-10}
OUT=${DEMO_OUT:-demo.html}
PROF=build/pybpfprof

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: pybpfprof loads BPF programs: run it as root (sudo make demo)" >&2
	exit 1
fi
[ -x "$PROF" ] || { echo "demo: $PROF is not built (run make)" >&2; exit 1; }
[ -x "$PYTHON" ] || { echo "demo: $PYTHON not found (apt-get install python3)" >&2; exit 1; }

ready=$(mktemp)
app=""
stop_app() {
	if [ -n "$app" ]; then
		# It leads a process group of its own (setsid): take the whole group down.
		kill -TERM -- "-$app" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 -- "-$app" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$app" 2>/dev/null || true
		wait 2>/dev/null || true
		app=""
	fi
	rm -f "$ready"
}
prof=""
# Ctrl-C or SIGTERM: pybpfprof stops early but still writes the profile.
on_signal() {
	[ -n "$prof" ] && kill -INT "$prof" 2>/dev/null && wait "$prof" 2>/dev/null
	exit "$1"
}
trap stop_app EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

# setsid: the app leads a process group of its own. --timeout: it also exits
# by itself should this script be killed outright (and with it: PDEATHSIG).
setsid "$PYTHON" "$PWD/scripts/demo_app.py" --timeout $((SECONDS_TO_PROFILE + 120)) >"$ready" &
app=$!
for _ in $(seq 100); do
	grep -q '^ready ' "$ready" && break
	kill -0 "$app" 2>/dev/null || { echo "demo: the app failed to start" >&2; exit 1; }
	sleep 0.1
done
grep -q '^ready ' "$ready" || { echo "demo: the app did not get ready in 10 s" >&2; exit 1; }
read -r _ pid port <"$ready"
app=$pid    # the same process, unless setsid had to fork: the group's leader either way

echo "demo: profiling scripts/demo_app.py (pid $pid, http://127.0.0.1:$port/items)" \
	"for $SECONDS_TO_PROFILE s:"
echo "demo: $PROF -p $pid -m wall --status -t -d $SECONDS_TO_PROFILE -o $OUT"
# In the background, so that a signal to this script is handled at once.
"$PROF" -p "$pid" -m wall --status -t -d "$SECONDS_TO_PROFILE" -o "$OUT" &
prof=$!
rc=0
wait "$prof" || rc=$?
prof=""
[ "$rc" -eq 0 ] || exit "$rc"

stop_app
echo
echo "demo: flame graph written to $(pwd)/$OUT (open it in a browser)"
