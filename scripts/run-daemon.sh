#!/usr/bin/env bash
# `make run`: pschedd in the foreground on a private socket and state dir, for trying
# pschedctl by hand. Usage: scripts/run-daemon.sh BUILD_DIR [extra pschedd flags]
set -euo pipefail
build="${1:-build}"
shift || true
pschedd="$build/daemon/pschedd"
[ -x "$pschedd" ] || { echo "run-daemon: $pschedd is missing; build first" >&2; exit 1; }
dir="${PSCHED_RUN_DIR:-/tmp/pschedd-$(id -un)}"
mkdir -p "$dir"
echo "pschedd: socket $dir/pschedd.sock, state $dir/state (Ctrl-C stops it)"
echo "try:     $build/client/pschedctl --socket $dir/pschedd.sock status"
exec "$pschedd" --socket "$dir/pschedd.sock" --state-dir "$dir/state" "$@"
