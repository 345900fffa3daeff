#!/bin/sh
# Installs the speedscope viewer (and ajv, to check files against its JSON
# schema) from the npm registry into a cache directory outside the repository,
# for tests/integration/test_formats.py. Idempotent: no network when the
# pinned versions are already there. Prints the directory on stdout.
#
#   PBP_NODE_CACHE  where to install (default /var/cache/pybpfprof/node)
set -eu
DIR="${PBP_NODE_CACHE:-/var/cache/pybpfprof/node}"
# Pinned: the test reaches into speedscope's bundle (see speedscope_import.js).
SPEEDSCOPE=1.25.0
AJV=8.17.1

have() {
	[ -f "$DIR/node_modules/$1/package.json" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
			"$DIR/node_modules/$1/package.json" "$2"
}

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
	echo "speedscope-install: node and npm are needed (Debian: nodejs npm)" >&2
	exit 1
}
if ! have speedscope "$SPEEDSCOPE" || ! have ajv "$AJV"; then
	mkdir -p "$DIR"
	# A package.json of its own keeps npm from looking for one further up.
	[ -f "$DIR/package.json" ] || echo '{"private": true}' > "$DIR/package.json"
	npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
		"speedscope@$SPEEDSCOPE" "ajv@$AJV" >&2
fi
echo "$DIR"
