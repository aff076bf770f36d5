#!/usr/bin/env bash
# `make deb`: psched_<version>_<arch>.deb and python3-psched_<version>_all.deb from a
# configured and built BUILD_DIR, into OUT_DIR (default BUILD_DIR/deb).
# Usage: packaging/build-deb.sh BUILD_DIR [OUT_DIR]
# The architecture is the build's (PSCHED_DEB_ARCH, from the compiler's target): a cross
# build dir (CMAKE_TOOLCHAIN_FILE) gives that architecture's package; dpkg-shlibdeps then
# resolves the target's libraries through the DEB_HOST_* variables set here.
set -euo pipefail
build="${1:?usage: build-deb.sh BUILD_DIR [OUT_DIR]}"
out="${2:-$build/deb}"
cache="$build/CMakeCache.txt"
[ -f "$build/CPackConfig.cmake" ] || { echo "build-deb: $build is not configured" >&2; exit 1; }
arch="$(sed -n 's/^PSCHED_DEB_ARCH:STRING=//p' "$cache")"
[ -n "$arch" ] || { echo "build-deb: PSCHED_DEB_ARCH is not set in $cache" >&2; exit 1; }
eval "$(dpkg-architecture -a"$arch" -s 2>/dev/null)"
mkdir -p "$out"
rm -f "$out"/*.deb
cpack --config "$build/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 || {
  cat "$out/cpack.log" >&2
  exit 1
}
rm -rf "$out/_CPack_Packages"
for deb in "$out"/*.deb; do
  echo "$deb"
done
