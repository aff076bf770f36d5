# Sourced by the scripts that run a private pschedd (demo.sh, arm64-e2e.sh): a work dir for
# its socket and state, a cleanup that stops it on any exit, and a wait until it serves.
# The sourcing script defines ctl() (pschedctl on "$socket") and sets pid when it starts
# the daemon.

# session_open NAME: a fresh $work (/tmp/psched-NAME.XXXXXX) with $socket in it, and an
# EXIT trap that stops the daemon and removes $work (kept when PSCHED_DEMO_KEEP is set).
session_open() {
  work="$(mktemp -d "/tmp/psched-$1.XXXXXX")"
  socket="$work/pschedd.sock"
  pid=""
  trap session_close EXIT
}

session_close() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  if [ -n "${PSCHED_DEMO_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}

# session_wait_serving SECONDS [LOG]: until `ctl status` answers; exits with the daemon's
# LOG when it dies first, and with pschedctl's error when it does not answer in time.
session_wait_serving() {
  local log="${2:-}"
  for _ in $(seq $(($1 * 10))); do
    ctl status >/dev/null 2>&1 && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$(basename "$0"): pschedd exited during start-up" >&2
      if [ -n "$log" ]; then cat "$log" >&2; fi
      exit 1
    fi
    sleep 0.1
  done
  ctl status >/dev/null
}
