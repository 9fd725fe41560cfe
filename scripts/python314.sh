#!/usr/bin/env bash
# Puts a CPython 3.14 (the default build: GIL, release) into ~/.cache/memshim/python3.14 so the
# Python-frames tests have a 3.14 to walk, and prints the interpreter's path on stdout (the rest goes
# to stderr). Nothing is installed into the system: Debian's own python3.14 packages are taken from
# unstable with a private apt list, and unpacked.
#
# Why not build it from source: the source tarball (pool/main/p/python3.14/*.orig.tar.xz) is not
# served by the package mirror these machines reach, while the binary packages are. Unstable's
# binaries need a newer glibc (2.38+) than bookworm's 2.36, so unstable's libc6 (and the few
# libraries the interpreter links, whose sonames the system's older copies also claim) are unpacked
# beside it and the interpreter is pointed at them with patchelf: its program interpreter becomes
# that ld.so and its RPATH that library folder. A process run from this python3.14 therefore runs on
# glibc 2.4x; the shim, built against 2.36, only needs what every later glibc still provides.
#
# apt checks each package against unstable's signed index (its sha256 included), and the script
# prints the version and sha256 of what it unpacked.
#
# usage: scripts/python314.sh
#
# Settings:
#   MEMSHIM_PY314_PREFIX  where to unpack (default ~/.cache/memshim/python3.14)
#
# Needs: apt-get, dpkg-deb, patchelf (apt-get install patchelf), and network access to Debian.
set -euo pipefail

prefix=${MEMSHIM_PY314_PREFIX:-$HOME/.cache/memshim/python3.14}
python=$prefix/bin/python3.14
mirror=${MEMSHIM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() {
  echo "python314: $*" >&2
  exit 1
}

works() {
  [ -x "$python" ] && "$python" -c '
import sys, sysconfig, os, zlib, ctypes
assert sys.version_info[:2] == (3, 14)
# The shim walks only the default build: anything else here must be replaced.
assert not sysconfig.get_config_var("Py_GIL_DISABLED") and not hasattr(sys, "gettotalrefcount")
assert os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
ctypes.CDLL(None).getpid
' 2>/dev/null
}

if works; then
  echo "$python"
  exit 0
fi

command -v patchelf >/dev/null 2>&1 || die "patchelf is missing: apt-get install patchelf"
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb is missing"
started=$SECONDS

work=$(dirname "$prefix")/python3.14-apt
rm -rf "$work"
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/root"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" >"$work/sources.list"
apt_opts=(
  -o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=-
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
  -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -o Debug::NoLocking=1
  -o APT::Architecture=amd64 -o APT::Architectures::=amd64
)
echo "python314: reading Debian unstable's index" >&2
apt-get "${apt_opts[@]}" update -qq >&2 || die "apt-get update failed for $mirror sid"
version=$(apt-cache "${apt_opts[@]}" show python3.14-minimal 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
[ -n "$version" ] || die "unstable has no python3.14-minimal"
case $version in 3.14.*) ;; *) die "unstable's python3.14-minimal is $version" ;; esac
# The interpreter (its binary links libpython statically), the standard library, the headers that
# the tests' C extension and the layout check compile against, and the libraries it runs on.
pkgs=(python3.14-minimal="$version" libpython3.14-minimal="$version" libpython3.14-stdlib="$version"
  libpython3.14-dev="$version" libc6 libexpat1 zlib1g libffi8)
(cd "$work/debs" && apt-get "${apt_opts[@]}" download -qq "${pkgs[@]}" >&2) ||
  die "apt-get download failed: ${pkgs[*]}"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
  echo "python314: $(basename "$deb") sha256 $(sha256sum "$deb" | cut -d' ' -f1)" >&2
done

rm -rf "$prefix"
mkdir -p "$prefix"
r=$work/root
# The interpreter finds its standard library from where it lies (prefix/bin -> prefix/lib), so
# Debian's /usr goes to the prefix as it is.
mv "$r/usr/bin" "$r/usr/lib" "$r/usr/include" "$prefix/"
# Debian's pyconfig.h only includes the multiarch one through the system's include path, where
# bookworm has none for 3.14: put the real one where sysconfig's include path names it.
multi=$prefix/include/x86_64-linux-gnu/python3.14/pyconfig.h
[ -f "$multi" ] && cp "$multi" "$prefix/include/python3.14/pyconfig.h"
# unstable's C library and the interpreter's libraries, apart from the system's. (libc6 keeps them in
# /usr/lib since Debian merged /usr; an older one kept them in /lib.)
libs=$prefix/glibc
mv "$prefix/lib/x86_64-linux-gnu" "$libs"
if [ -d "$r/lib/x86_64-linux-gnu" ]; then cp -a "$r/lib/x86_64-linux-gnu/." "$libs/"; fi
[ -e "$libs/ld-linux-x86-64.so.2" ] || die "unstable's libc6 has no ld-linux-x86-64.so.2"
# DT_RPATH, unlike DT_RUNPATH, also serves the libraries that the extension modules load.
patchelf --set-interpreter "$libs/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$libs" "$python"
rm -rf "$work"
works || die "$python was unpacked but does not run, or lacks zlib, ctypes or its headers"
echo "python314: python3.14 $version in $((SECONDS - started)) s" >&2
echo "$python"
