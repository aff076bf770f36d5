#!/usr/bin/env bash
# Runs `systemd-analyze verify` and the offline hardening score on pschedd's units.
# Usage: verify_units.sh SOURCE_DIR BINDIR   the source units, ExecStart pointing at BINDIR
#        verify_units.sh --root ROOT         the units installed in ROOT (packaging/deb_test.sh;
#                                            ROOT must hold systemd's own units too)
# Exits 0 with a message when systemd-analyze is absent (containers, non-systemd
# distributions).
set -euo pipefail
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze not installed; units not verified"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ "$1" = --root ]; then
  root="$2"
  units=(pschedd.socket pschedd.service)
  scope=(--root="$root")
else
  src="$1"
  bindir="$2"
  sed "s|@BINDIR@|$bindir|g; s|@DOCDIR@|/usr/share/doc/psched|g" "$src/pschedd.service" \
    > "$work/pschedd.service"
  cp "$src/pschedd.socket" "$work/pschedd.socket"
  units=("$work/pschedd.socket" "$work/pschedd.service")
  scope=()
fi
# verify prints problems on stderr and may exit 0 on warnings: fail on any unit complaint.
out="$(cd "$work" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "${scope[@]}" \
        "${units[@]}" 2>&1)" || { echo "$out"; exit 1; }
if grep -E "pschedd\.(service|socket)" <<<"$out" | grep -v "Failed to load .* No such file" ; then
  echo "$out"
  exit 1
fi
echo "units verified"
# The hardening score (issue bar: exposure <= 2.0). --offline reads the unit file alone.
score_line="$(cd "$work" && systemd-analyze security --offline=true --no-pager "${scope[@]}" \
               "${units[1]}" 2>&1 | grep "Overall exposure level")" || {
  echo "systemd-analyze security printed no score"; exit 1; }
echo "$score_line"
score="$(sed -E 's/.*: ([0-9.]+).*/\1/' <<<"$score_line")"
if ! awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
  echo "exposure $score is above 2.0: the unit lost hardening"
  exit 1
fi
