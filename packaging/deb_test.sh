#!/usr/bin/env bash
# CTest deb_package_test: builds the Debian packages from BUILD_DIR (packaging/build-deb.sh)
# and checks them: file names, control fields, exact contents, the generated unit and config,
# lintian without errors; then installs them into a throwaway root with
# `dpkg --root --force-script-chrootless` (the maintainer scripts act on the root through
# DPKG_ROOT), verifies the installed units there with systemd-analyze, runs the installed
# pschedd, pschedctl and Python package against the reference model, and walks
# remove / purge / reinstall / purge-keeping-state.
# Usage: deb_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: dpkg --root needs root"
  exit 0
fi

work="$(mktemp -d /tmp/psched_deb_test.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '\n== %s (%ds)\n' "$*" "$SECONDS"; }

version="$(dpkg-parsechangelog -l "$src/packaging/changelog" -SVersion)"
arch="$(sed -n 's/^PSCHED_DEB_ARCH:STRING=//p' "$build/CMakeCache.txt")"
deb="$work/debs/psched_${version}_${arch}.deb"
pydeb="$work/debs/python3-psched_${version}_all.deb"

step "make deb"
"$src/packaging/build-deb.sh" "$build" "$work/debs"
[ -f "$deb" ] || fail "missing $deb"
[ -f "$pydeb" ] || fail "missing $pydeb"

step "control fields"
field() { dpkg-deb -f "$1" "$2"; }
expect_field() {  # PACKAGE FIELD VALUE
  local got
  got="$(field "$1" "$2")"
  [ "$got" = "$3" ] || fail "$(basename "$1"): $2 is '$got', expected '$3'"
}
expect_depends() {  # PACKAGE DEPENDENCY...
  local depends
  depends="$(field "$1" Depends)"
  shift
  for want in "$@"; do
    grep -qE "(^|, )$want( \(|,|$| \|)" <<<"$depends" || fail "Depends lacks $want: $depends"
  done
}
expect_field "$deb" Package psched
expect_field "$deb" Version "$version"
expect_field "$deb" Architecture "$arch"
expect_field "$deb" Section misc
expect_field "$deb" Priority optional
expect_field "$deb" Recommends opencl-icd
expect_depends "$deb" libc6 'libgrpc\+\+1\.51' libprotobuf32 libsqlite3-0 libxnnpack0 \
  libsystemd0 ocl-icd-libopencl1 systemd
# x86 builds run their dense convs on oneDNN (executor/cpu/kernel_choice.h).
if [ "$arch" = amd64 ]; then expect_depends "$deb" libdnnl2; fi
expect_field "$pydeb" Package python3-psched
expect_field "$pydeb" Version "$version"
expect_field "$pydeb" Architecture all
expect_field "$pydeb" Section python
expect_depends "$pydeb" python3 python3-grpcio python3-protobuf python3-numpy
for package in "$deb" "$pydeb"; do
  [[ "$(field "$package" Maintainer)" =~ ^[^\<]+\ \<[^@]+@[^\>]+\>$ ]] ||
    fail "$(basename "$package"): Maintainer is not 'Name <address>'"
  [ "$(field "$package" Description | wc -l)" -ge 4 ] ||
    fail "$(basename "$package"): Description has no extended text"
done
dpkg-deb -e "$deb" "$work/control"
[ "$(cat "$work/control/conffiles")" = /etc/pschedd/pschedd.toml ] || fail "conffiles"
for script in postinst prerm postrm; do
  [ -x "$work/control/$script" ] || fail "psched has no executable $script"
done
echo "$(basename "$deb"): $(field "$deb" Depends | tr ',' '\n' | wc -l) dependencies"

step "contents"
listing() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sort; }
{
  printf '%s\n' ./etc/pschedd/pschedd.toml ./usr/bin/pschedctl ./usr/bin/pschedd \
    ./usr/lib/systemd/system/pschedd.service ./usr/lib/systemd/system/pschedd.socket \
    ./usr/lib/sysusers.d/pschedd.conf ./usr/lib/tmpfiles.d/pschedd.conf \
    ./usr/share/man/man1/pschedctl.1.gz ./usr/share/man/man8/pschedd.8.gz
  for doc in README.md api.md changelog.gz copyright operations.md packaging.md; do
    echo "./usr/share/doc/psched/$doc"
  done
} | sort >"$work/want-psched"
py=./usr/lib/python3/dist-packages/psched
{
  printf "$py/%s\n" __init__.py _version.py client.py errors.py external_data.py py.typed session.py \
    tensors.py \
    v1/__init__.py
  for proto in "$src"/proto/psched/v1/*.proto; do
    stem="$(basename "$proto" .proto)"
    printf "$py/v1/%s\n" "${stem}_pb2.py" "${stem}_pb2.pyi" "${stem}_pb2_grpc.py"
  done
  printf './usr/share/doc/python3-psched/%s\n' changelog.gz copyright python.md
} | sort >"$work/want-python"
diff -u "$work/want-psched" <(listing "$deb") || fail "psched contents differ (above)"
diff -u "$work/want-python" <(listing "$pydeb") || fail "python3-psched contents differ"
dpkg-deb -x "$deb" "$work/extracted"
unit="$work/extracted/usr/lib/systemd/system/pschedd.service"
exec_start="ExecStart=/usr/bin/pschedd --config /etc/pschedd/pschedd.toml"
exec_start+=" --state-dir /var/lib/pschedd"
grep -qx "$exec_start" "$unit" || fail "ExecStart of the packaged unit: $(grep ExecStart "$unit")"
grep -qx 'Documentation=file:///usr/share/doc/psched/operations.md' "$unit" || fail "Documentation="
! grep -n '@[A-Z]*@' "$unit" || fail "placeholders left in pschedd.service"
cmp "$work/extracted/etc/pschedd/pschedd.toml" <("$build/daemon/pschedd" --print-default-config) ||
  fail "/etc/pschedd/pschedd.toml is not pschedd's default config"
for bin in pschedd pschedctl; do
  ! readelf -S "$work/extracted/usr/bin/$bin" | grep -q '\.debug_info' ||
    fail "$bin is not stripped"
done
cmp <(zcat "$work/extracted/usr/share/doc/psched/changelog.gz") "$src/packaging/changelog" ||
  fail "changelog.gz"
for page in man1/pschedctl.1 man8/pschedd.8; do
  zcat "$work/extracted/usr/share/man/$page.gz" | grep -qF -- '\-\-socket' ||
    fail "$page does not document --socket"
done
echo "contents as expected: $(wc -l <"$work/want-psched") + $(wc -l <"$work/want-python") files"

step "lintian"
lintian_ok=1
lintian --fail-on error --tag-display-limit 0 "$deb" "$pydeb" >"$work/lintian.log" 2>&1 ||
  lintian_ok=0
grep -v "running with root privileges" "$work/lintian.log" || true
[ "$lintian_ok" = 1 ] || fail "lintian reports errors (above)"
echo "lintian: no errors ($(grep -c '^W: ' "$work/lintian.log" || true) warnings)"

step "install into a throwaway root"
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/usr/lib/systemd/system"
touch "$root/var/lib/dpkg/status"
# systemd's own units (targets the pschedd units order against), as on a system with systemd.
cp -a /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
rm -f "$root/usr/lib/systemd/system/pschedd."*
dpkg_root() {
  # The root holds no libraries or python3: dependencies are the host's (--force-depends).
  if ! dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null "$@" \
      >"$work/dpkg.log" 2>&1; then
    cat "$work/dpkg.log"
    fail "dpkg --root $*"
  fi
  grep -v -e "depends on" -e "is not installed" -e "dependency problems" -e "^ *$" \
    "$work/dpkg.log" | sed 's/^/  dpkg: /' || true
}
dpkg_root -i "$deb" "$pydeb"
for package in psched python3-psched; do
  status="$(dpkg-query --root="$root" -W -f='${Status}' "$package")"
  [ "$status" = "install ok installed" ] || fail "$package: $status"
done
grep -q '^pschedd:x:[0-9]*:[0-9]*:psched inference daemon:/var/lib/pschedd:' "$root/etc/passwd" ||
  fail "no pschedd user in the root's /etc/passwd"
grep -qE '^(render|video):x:[0-9]+:(.*,)?pschedd(,|$)' "$root/etc/group" ||
  fail "pschedd is not in the render/video groups"
uid="$(awk -F: '$1 == "pschedd" { print $3 }' "$root/etc/passwd")"
[ "$(stat -c '%u %a' "$root/var/lib/pschedd")" = "$uid 750" ] ||
  fail "/var/lib/pschedd: $(stat -c '%u %a' "$root/var/lib/pschedd"), expected $uid 750"
enabled="$root/etc/systemd/system/sockets.target.wants/pschedd.socket"
[ -L "$enabled" ] || fail "pschedd.socket is not enabled"
[ ! -e "$root/etc/systemd/system/multi-user.target.wants/pschedd.service" ] ||
  fail "pschedd.service is enabled (socket activation starts it)"
echo "user pschedd (uid $uid), /var/lib/pschedd 0750, pschedd.socket enabled"
"$src/systemd/verify_units.sh" --root "$root"

step "the installed pschedd, pschedctl and Python package"
socket="$work/run/pschedd.sock"
"$root/usr/bin/pschedd" --config "$root/etc/pschedd/pschedd.toml" --socket "$socket" \
  --state-dir "$work/state" --log-level warn &
pid=$!
for _ in $(seq 300); do
  "$root/usr/bin/pschedctl" --socket "$socket" status >/dev/null 2>&1 && break
  sleep 0.1
done
"$root/usr/bin/pschedctl" --socket "$socket" status
export PYTHONPATH="$root/usr/lib/python3/dist-packages" PYTHONDONTWRITEBYTECODE=1
origin="$(/usr/bin/python3 -c 'import psched; print(psched.__file__, psched.__version__)')"
[ "$origin" = "$root/usr/lib/python3/dist-packages/psched/__init__.py $version" ] ||
  fail "python3 imported $origin"
kill "$pid"
wait "$pid"
pid=""
if [ -f "${PSCHED_SHARED_DIR:-}/models/reference/squeezenet_v1_1.onnx" ]; then
  # The client tests' reference and example cases, on the installed daemon and package.
  if ! (cd "$src/client/python/tests" && PSCHEDD="$root/usr/bin/pschedd" PSCHED_SOURCE_DIR="$src" \
          /usr/bin/python3 -m unittest -v \
          test_client.ClientTest.test_reference_models_match_pytorch_to_1e4 \
          test_client.ClientTest.test_docs_example_runs) >"$work/unittest.log" 2>&1; then
    cat "$work/unittest.log"
    fail "the installed package fails the client tests"
  fi
  sed 's/^/  /' "$work/unittest.log"
else
  echo "(no ../shared reference models: reference and example cases not run)"
fi

step "reinstall keeps an admin's disabled socket"
rm "$enabled"
dpkg_root -i "$deb"
[ ! -e "$enabled" ] || fail "a reinstall enabled the socket the admin had disabled"
ln -s /usr/lib/systemd/system/pschedd.socket "$enabled"

step "remove keeps config and state; purge removes them"
echo "models" >"$root/var/lib/pschedd/psched.db"
dpkg_root -r psched python3-psched
[ ! -e "$root/usr/bin/pschedd" ] || fail "remove left /usr/bin/pschedd"
[ ! -e "$root/usr/lib/python3/dist-packages/psched" ] || fail "remove left the Python package"
[ -f "$root/etc/pschedd/pschedd.toml" ] || fail "remove took the conffile"
[ -f "$root/var/lib/pschedd/psched.db" ] || fail "remove took the state"
dpkg_root -P psched
[ ! -e "$root/var/lib/pschedd" ] || fail "purge left /var/lib/pschedd"
[ ! -e "$root/etc/pschedd" ] || fail "purge left /etc/pschedd"
[ ! -L "$enabled" ] || fail "purge left the socket's enablement symlink"
grep -q '^pschedd:' "$root/etc/passwd" || fail "purge removed the pschedd user"
[ -z "$(dpkg-query --root="$root" -W -f='${Status}' psched 2>/dev/null)" ] ||
  fail "psched still known to dpkg after purge"

step "purge keeps the state when /var/lib/pschedd/.keep-on-purge exists"
dpkg_root -i "$deb"
echo "models" >"$root/var/lib/pschedd/psched.db"
touch "$root/var/lib/pschedd/.keep-on-purge"
dpkg_root -P psched
[ -f "$root/var/lib/pschedd/psched.db" ] || fail "purge with .keep-on-purge took the state"
[ ! -e "$root/etc/pschedd" ] || fail "purge left /etc/pschedd"

printf '\ndeb_package_test: all checks passed in %d s\n' "$SECONDS"
