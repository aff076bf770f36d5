#!/usr/bin/env bash
# `make install`: pschedd, pschedctl, the systemd units, sysusers/tmpfiles snippets, a default
# config (an existing /etc/pschedd/pschedd.toml is kept), the docs and the psched Python
# package, by the CMake install rules the Debian packages are made from (packaging/).
# Usage: scripts/install.sh BUILD_DIR [PREFIX]. DESTDIR is honoured. Units go to
# $PREFIX/lib/systemd/system; after a real install run: systemd-sysusers;
# systemd-tmpfiles --create; systemctl daemon-reload; systemctl enable --now pschedd.socket
set -euo pipefail
build="${1:?usage: install.sh BUILD_DIR [PREFIX]}"
prefix="${2:-/usr/local}"

for bin in "$build/daemon/pschedd" "$build/client/pschedctl"; do
  [ -x "$bin" ] || { echo "install: $bin is missing; build first" >&2; exit 1; }
done
cmake --install "$build" --prefix "$prefix"
echo "installed pschedd and pschedctl to ${DESTDIR:-}$prefix/bin," \
  "units to ${DESTDIR:-}$prefix/lib/systemd/system"
