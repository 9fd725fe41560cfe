#!/usr/bin/env bash
# Runs examples/c/numa_cross_node.c under memshim on a machine with two NUMA nodes: a QEMU guest
# (CPU 0 and 1 GiB on node 0, CPU 1 and 1 GiB on node 1, distance 20) booted from an initramfs with
# busybox, memshim, its shim, the example and the libraries they load. The guest runs
# `memshim run -o /tmp/t -- /numa_cross_node`, then `memshim report /tmp/t` as JSON and text, and
# powers off.
#
# usage: scripts/qemu/numa2.sh OUT.json [OUT.txt]
#   OUT.json  the guest's `memshim report --format json`
#   OUT.txt   the guest's text report (optional; it is printed on stdout in any case)
#
# Needs memshim and libmemshim.so in target/release (cargo build --release --workspace) or in
# MEMSHIM_BIN_DIR, and cc with libnuma-dev. QEMU, a static busybox and Debian's kernel come from
# Debian's packages, downloaded and unpacked into a cache (MEMSHIM_QEMU_CACHE, default
# ~/.cache/memshim/qemu) rather than installed: bookworm's qemu-system-x86 (7.2) cannot be installed
# beside the qemu-utils from backports that the build machines carry (10.0 breaks
# qemu-system-common << 8.0, so apt would remove it), and a test has no business putting a kernel
# into the host's /boot. A qemu-system-x86_64 and a static busybox already on PATH are used as they are.
#
# Settings:
#   MEMSHIM_QEMU_ACCEL    kvm or tcg (default: kvm when /dev/kvm runs a plain VM, else tcg)
#   MEMSHIM_QEMU_TIMEOUT  seconds the guest may take before it is killed (default 600)
#   MEMSHIM_QEMU_KERNEL   a bzImage to boot instead of Debian's (needs NUMA, 8250 console, initramfs)
#   MEMSHIM_QEMU_CACHE    where the downloaded packages are unpacked
set -euo pipefail

die() {
  echo "numa2: $*" >&2
  exit 1
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: $0 OUT.json [OUT.txt]"; fi
out_json=$1
out_txt=${2:-}
started=$SECONDS

repo=$(cd "$(dirname "$0")/../.." && pwd)
release=${MEMSHIM_BIN_DIR:-$repo/target/release}
for f in memshim libmemshim.so; do
  [ -f "$release/$f" ] || die "$release/$f is missing: run cargo build --release --workspace first"
done
cache=${MEMSHIM_QEMU_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/memshim/qemu}
timeout_s=${MEMSHIM_QEMU_TIMEOUT:-600}
[[ $timeout_s =~ ^[0-9]+$ ]] || die "MEMSHIM_QEMU_TIMEOUT=$timeout_s is not a number of seconds"
# The shim's unwinder choice reaches the guest, so that CI's run with libgcc's unwinder covers it too.
unwind=${MEMSHIM_UNWIND:-}
[[ $unwind =~ ^[a-z]*$ ]] || die "MEMSHIM_UNWIND=$unwind is not a word"
# The marker that frames each part of what the guest sends back; nothing else prints it.
mark=@@memshim-numa2

work=$(mktemp -d "${TMPDIR:-/tmp}/memshim-numa2.XXXXXX")
trap 'rm -rf "$work"' EXIT

# A busybox that runs without any library: the initramfs has no loader for it to rely on.
static_busybox() {
  local b deps
  b=$(command -v busybox 2>/dev/null) || return 1
  deps=$(LC_ALL=C ldd "$b" 2>&1 || true)
  [[ $deps == *'not a dynamic executable'* ]] || return 1
  echo "$b"
}

# Downloads Debian packages by name and unpacks them under $cache/root; the kernel package's
# vmlinuz alone goes to $cache/vmlinuz (its modules are not needed: Debian builds NUMA, the 8250
# serial console and initramfs support into the kernel).
fetch() {
  command -v apt-get >/dev/null || die "no apt-get: install qemu-system-x86_64 and a static busybox, and set MEMSHIM_QEMU_KERNEL"
  local want=("$@") pkgs kernel=
  [ -n "${MEMSHIM_QEMU_KERNEL:-}" ] || [ -f "$cache/vmlinuz" ] || kernel=yes
  # apt's own answer to "what would installing these add", so that exactly the missing libraries
  # come along; nothing is installed.
  closure() { apt-get install -s --no-install-recommends "${want[@]}" 2>/dev/null | awk '/^Inst /{print $2}'; }
  # A fresh machine may have no package lists yet.
  apt-cache show --no-all-versions linux-image-amd64 >/dev/null 2>&1 || apt-get update -qq
  pkgs=$(closure) || die "apt cannot resolve ${want[*]}"
  if [ -z "$pkgs" ] && [ ${#want[@]} -gt 0 ]; then die "apt has nothing to fetch for ${want[*]}"; fi
  rm -rf "$cache.new"
  mkdir -p "$cache.new/debs"
  if [ -d "$cache/root" ]; then mv "$cache/root" "$cache.new/root"; fi
  if [ -f "$cache/vmlinuz" ]; then mv "$cache/vmlinuz" "$cache.new/vmlinuz"; fi
  (
    cd "$cache.new/debs"
    # -o APT::Sandbox::User=root: apt's download user cannot write to a root-owned cache.
    if [ -n "$pkgs" ]; then
      # shellcheck disable=SC2086  # one word per package
      apt-get download -qq -o APT::Sandbox::User=root $pkgs
    fi
    if [ -n "$kernel" ]; then
      local image
      image=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ && i == "" {i = $2} END {print i}')
      [ -n "$image" ] || die "apt knows no linux-image-amd64"
      apt-get download -qq -o APT::Sandbox::User=root "$image"
    fi
  )
  mkdir -p "$cache.new/root"
  for deb in "$cache.new"/debs/*.deb; do
    [ -e "$deb" ] || continue
    case $deb in
      */linux-image-*)
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache.new" --wildcards './boot/vmlinuz-*'
        mv "$cache.new"/boot/vmlinuz-* "$cache.new/vmlinuz"
        rmdir "$cache.new/boot"
        ;;
      *) dpkg-deb -x "$deb" "$cache.new/root" ;;
    esac
  done
  rm -rf "$cache.new/debs" "$cache"
  mv "$cache.new" "$cache"
}

qemu=$(command -v qemu-system-x86_64 2>/dev/null || true)
busybox=$(static_busybox || true)
need=()
if [ -z "$qemu" ] && [ ! -x "$cache/root/usr/bin/qemu-system-x86_64" ]; then need+=(qemu-system-x86); fi
if [ -z "$busybox" ] && [ ! -x "$cache/root/bin/busybox" ]; then need+=(busybox-static); fi
if [ ${#need[@]} -gt 0 ] || { [ -z "${MEMSHIM_QEMU_KERNEL:-}" ] && [ ! -f "$cache/vmlinuz" ]; }; then
  echo "numa2: fetching Debian's ${need[*]:-} packages and kernel (what is missing of them) into $cache"
  fetch "${need[@]}"
fi
qemu_args=()
if [ -n "$qemu" ]; then
  run_qemu=("$qemu")
else
  # The unpacked QEMU's libraries and firmware are not where it was built to look for them. Its
  # libraries are for QEMU alone: ldd below must see the programs' libraries as the host has them.
  run_qemu=(env "LD_LIBRARY_PATH=$cache/root/usr/lib/x86_64-linux-gnu:$cache/root/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    "$cache/root/usr/bin/qemu-system-x86_64")
  qemu_args+=(-L "$cache/root/usr/share/qemu" -L "$cache/root/usr/share/seabios")
fi
busybox=${busybox:-$cache/root/bin/busybox}
kernel=${MEMSHIM_QEMU_KERNEL:-$cache/vmlinuz}
[ -f "$kernel" ] || die "no kernel at $kernel"

accel=${MEMSHIM_QEMU_ACCEL:-}
if [ -z "$accel" ]; then
  accel=tcg
  # KVM only when it starts a VM whose plain kvm64 CPU it fully supports: a nested /dev/kvm that
  # lacks even SSE3 (seen on a sandboxed build machine) starts VMs whose Linux hangs at boot.
  if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    probe=$(echo quit | timeout 20 "${run_qemu[@]}" "${qemu_args[@]}" -accel kvm -cpu kvm64 -M pc -S -nodefaults \
      -display none -monitor stdio 2>&1 >/dev/null) && [ -z "$probe" ] && accel=kvm
    [ "$accel" = kvm ] || echo "numa2: not using KVM: ${probe:-it cannot start a VM}"
  fi
fi
case $accel in
  kvm) qemu_args+=(-accel kvm -cpu host) ;;
  tcg) qemu_args+=(-accel tcg -cpu max) ;;
  *) die "MEMSHIM_QEMU_ACCEL=$accel: kvm or tcg" ;;
esac

# The initramfs: the programs at fixed paths and every library they load at the path ldd found it.
stage=$work/initramfs
mkdir -p "$stage"/{bin,dev,proc,sys,tmp,opt/memshim}
cp "$busybox" "$stage/bin/busybox"
cp -L "$release/memshim" "$release/libmemshim.so" "$stage/opt/memshim/"
# Debug sections are half the size of the binaries and not needed to run them.
if command -v strip >/dev/null; then strip --strip-debug "$stage"/opt/memshim/*; fi
"${CC:-cc}" -g -O0 "$repo/examples/c/numa_cross_node.c" -o "$stage/numa_cross_node" -lnuma -pthread
objs=("$stage/opt/memshim/memshim" "$stage/opt/memshim/libmemshim.so" "$stage/numa_cross_node")
# Loaded with dlopen, so ldd of the programs does not list them: the shim's fast unwinder when the
# host has it, and libgcc's.
for soname in libunwind.so.8 libgcc_s.so.1; do
  # awk reads to the end: one that exits at its first match can leave ldconfig writing its next
  # chunk into a closed pipe, and that SIGPIPE (status 141) ends this script under pipefail (CI
  # failed so, now and then, when the machine was busy).
  path=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64/ && p == "" {p = $NF} END {print p}')
  if [ -n "$path" ]; then objs+=("$path"); fi
done
for obj in "${objs[@]}"; do
  case $obj in "$stage"/*) ;; *) mkdir -p "$stage$(dirname "$obj")" && cp -L "$obj" "$stage$obj" ;; esac
  deps=$(LC_ALL=C ldd "$obj")
  [[ $deps != *'not found'* ]] || die "a library of $obj is missing: $deps"
  while read -r lib; do
    mkdir -p "$stage$(dirname "$lib")"
    cp -L "$lib" "$stage$lib"
  done < <(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' <<<"$deps")
done
cat >"$stage/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/opt/memshim HOME=/tmp
${unwind:+export MEMSHIM_UNWIND=$unwind}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# Kernel messages stay off the console from here on; the reports travel on the second serial port
# (ttyS1), which carries nothing else.
echo 1 >/proc/sys/kernel/printk
# Automatic NUMA balancing would unmap and migrate the example's pages while it checks them (the
# first-touched buffer it reads from the other node moves under it): the placement is the test.
echo 0 >/proc/sys/kernel/numa_balancing 2>/dev/null || true
exec 3>/dev/ttyS1
for n in /sys/devices/system/node/node*; do echo "$mark node \${n##*node} cpus \$(cat \$n/cpulist)" >&3; done
cd /tmp
memshim run -o /tmp/t -- /numa_cross_node
echo "$mark status \$?" >&3
echo "$mark json-begin" >&3
memshim report /tmp/t --format json >&3
echo "$mark json-end" >&3
echo "$mark text-begin" >&3
memshim report /tmp/t --format text --color never >&3
echo "$mark text-end" >&3
exec 3>&-
poweroff -f
EOF
chmod +x "$stage/init"
(cd "$stage" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$work/initramfs.cpio"

echo "numa2: booting the two-node guest ($accel, ${timeout_s} s at most${unwind:+, MEMSHIM_UNWIND=$unwind})"
booted=$SECONDS
rc=0
timeout -k 10 "$timeout_s" "${run_qemu[@]}" "${qemu_args[@]}" \
  -M pc -smp 2,sockets=2,cores=1,threads=1 -m 2G \
  -object memory-backend-ram,id=mem0,size=1G -object memory-backend-ram,id=mem1,size=1G \
  -numa node,nodeid=0,cpus=0,memdev=mem0 -numa node,nodeid=1,cpus=1,memdev=mem1 \
  -numa dist,src=0,dst=1,val=20 \
  -kernel "$kernel" -initrd "$work/initramfs.cpio" \
  -append "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init" \
  -nographic -nodefaults -no-reboot -monitor none \
  -serial "file:$work/console.log" -serial "file:$work/data.log" </dev/null || rc=$?
guest_s=$((SECONDS - booted))
# The console without carriage returns and the firmware's terminal escapes.
tr -d '\r' <"$work/console.log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' || true
echo
[ $rc -eq 0 ] || die "qemu exited with $rc after ${guest_s} s$([ $rc -eq 124 ] && echo ': the guest did not finish in time')"

tr -d '\r' <"$work/data.log" >"$work/data"
part() { sed -n "/^$mark $1-begin\$/,/^$mark $1-end\$/p" "$work/data" | sed '1d;$d'; }
status=$(sed -n "s/^$mark status //p" "$work/data")
[ "$status" = 0 ] || die "memshim run in the guest exited with '${status:-nothing}'; what the guest sent: $(cat "$work/data")"
part json >"$out_json"
[ -s "$out_json" ] || die "the guest sent no JSON report"
part text >"$work/report.txt"
if [ -n "$out_txt" ]; then cp "$work/report.txt" "$out_txt"; fi
grep "^$mark node " "$work/data" | sed "s/^$mark /guest /"
cat "$work/report.txt"
echo "numa2: the guest ran in ${guest_s} s ($accel); the script took $((SECONDS - started)) s"
