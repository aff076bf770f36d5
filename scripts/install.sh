#!/usr/bin/env bash
# `make install`: installs pschedd, pschedctl, the systemd units, sysusers/tmpfiles snippets,
# a default config and the docs. Usage: scripts/install.sh BUILD_DIR [PREFIX]
# DESTDIR is honoured for packaging. Units go to $PREFIX/lib/systemd/system; after a real
# install run: systemd-sysusers; systemd-tmpfiles --create; systemctl daemon-reload;
# systemctl enable --now pschedd.socket
set -euo pipefail
build="${1:?usage: install.sh BUILD_DIR [PREFIX]}"
prefix="${2:-/usr/local}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${DESTDIR:-}"

for bin in "$build/daemon/pschedd" "$build/client/pschedctl"; do
  [ -x "$bin" ] || { echo "install: $bin is missing; build first" >&2; exit 1; }
done

install -d "$dest$prefix/bin" "$dest$prefix/lib/systemd/system" "$dest$prefix/lib/sysusers.d" \
           "$dest$prefix/lib/tmpfiles.d" "$dest$prefix/share/doc/psched" "$dest/etc/pschedd"
install -m 0755 "$build/daemon/pschedd" "$build/client/pschedctl" "$dest$prefix/bin/"
sed "s|@BINDIR@|$prefix/bin|g; s|file:///usr/local/share|file://$prefix/share|g" \
  "$root/systemd/pschedd.service" > "$dest$prefix/lib/systemd/system/pschedd.service"
chmod 0644 "$dest$prefix/lib/systemd/system/pschedd.service"
install -m 0644 "$root/systemd/pschedd.socket" "$dest$prefix/lib/systemd/system/"
install -m 0644 "$root/systemd/pschedd.sysusers.conf" "$dest$prefix/lib/sysusers.d/pschedd.conf"
install -m 0644 "$root/systemd/pschedd.tmpfiles.conf" "$dest$prefix/lib/tmpfiles.d/pschedd.conf"
if [ ! -e "$dest/etc/pschedd/pschedd.toml" ]; then
  "$build/daemon/pschedd" --print-default-config > "$dest/etc/pschedd/pschedd.toml"
fi
for doc in api.md operations.md; do
  [ -f "$root/docs/$doc" ] && install -m 0644 "$root/docs/$doc" "$dest$prefix/share/doc/psched/"
done
echo "installed pschedd and pschedctl to $dest$prefix/bin, units to $dest$prefix/lib/systemd/system"
