#!/usr/bin/env bash
# Install what protolab needs, idempotently, on Debian bookworm as root:
#   1. Debian packages (protocol servers, tools, fio's build dependencies);
#   2. fio built from Debian's source package (pinned), with protolab's patches (patches/fio), the libiscsi, nfs
#      and nbd engines, into .deps/fio — apt is pointed at a private sources
#      list and state directory, so the machine's apt configuration is untouched;
#   3. the guest image for virtual machines (the guest's tools, then scripts/build-guest.sh);
#   4. a virtualenv .venv with pinned Python dependencies and protolab itself (made while fio compiles).
# Each step is skipped when its result is already there.
#
#   install-deps.sh          everything (make deps)
#   install-deps.sh test     everything, and what only the test suite needs (make test)
#   install-deps.sh demo     everything but the guest image and its packages (make demo): protolab builds it, with
#                            this script's guest mode, the first time a study needs a guest (protolab.vm.image)
#   install-deps.sh guest    only the guest image's packages, tools and image (what protolab runs then)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
FIO_VERSION=3.33-3
DEPS="$top/.deps"
say() { printf '[install] %s\n' "$*"; }

APT_PACKAGES=(
  # protocol servers and clients of the lab
  tgt nfs-ganesha nfs-ganesha-vfs eatmydata rpcbind nbdkit libnbd-bin libiscsi-bin libnfs-utils
  # network, storage and process tools
  iproute2 ethtool btrfs-progs e2fsprogs util-linux procps kmod openssh-client
  # the relay to a remote fio server's socket where an ssh server cannot forward it (tests/lab/test_ssh_agents.py)
  netcat-openbsd
  # [method] breakdown: the sampled captures (tcpdump) and Wireshark's dissectors matching requests to replies (tshark;
  # wireshark-common's debconf question is answered before the install: no setuid dumpcap, protolab runs as root)
  tcpdump tshark
  # fio's build dependencies (engines: libiscsi, nfs, nbd, io_uring, libaio)
  # (C only: gcc, not build-essential's g++; dpkg-dev for 'apt-get source')
  gcc make libc6-dev dpkg-dev patch pkg-config libiscsi-dev libnfs-dev libnbd-dev libaio-dev liburing-dev zlib1g-dev
  # the pool's device model: a FUSE daemon built here (src/protolab/lab/blockdev)
  libfuse3-dev
  # python
  python3 python3-venv
)
# Only virtual machines need these: QEMU with its iSCSI/NFS block drivers, and the guest image's kernel (a 70 MB
# package whose install builds the host an initramfs too), busybox and cpio. The demo mode leaves them to the guest
# mode, which protolab runs the first time a study needs a guest (scripts/build-guest.sh --check says so while
# QEMU is missing); on a bare machine they were a third of the demo's package download.
# SMB3 too: only the guests' kernel CIFS client reaches it (fio and QEMU have no SMB), so Samba's smbd and pdbedit
# come with them; each lab runs its own smbd with everything under its workdir (lab.servers.samba), and Debian's own
# smbd, nmbd and samba-ad-dc are left stopped and disabled when this script installs samba.
GUEST_PACKAGES=(qemu-system-x86 qemu-block-extra linux-image-amd64 busybox-static cpio samba)
# Only `make test` needs these: the report is tested in a real browser (chromium); an ssh server for the load
# hosts reached over ssh (tests/lab/test_ssh_agents.py); smbclient, the SMB client of tests/lab/test_samba_lab.py.
# (tcpdump, which scripts/capture-wire.py uses too, is among APT_PACKAGES: method.breakdown needs it.)
TEST_PACKAGES=(chromium openssh-server smbclient)

install_apt() {
  local mode=${1:-} missing=() wanted=()
  [ "$mode" = guest ] || wanted+=("${APT_PACKAGES[@]}")
  [ "$mode" = demo ] || wanted+=("${GUEST_PACKAGES[@]}")
  [ "$mode" = test ] && wanted+=("${TEST_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then say "Debian packages: all present"; return; fi
  say "Debian packages: installing ${missing[*]}"
  # Packages such as tgt and rpcbind start their daemon on install; protolab
  # runs its own servers inside the lab's namespaces, so forbid that while we
  # install (policy-rc.d is removed again afterwards if we created it).
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; made_policy=1
  fi
  trap '[ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d' RETURN
  export DEBIAN_FRONTEND=noninteractive
  if printf '%s\n' "${missing[@]}" | grep -qx tshark; then
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if printf '%s\n' "${missing[@]}" | grep -qx samba; then quiet_samba; fi
  say "Debian packages: done"
}

# Debian's samba enables smbd, nmbd and samba-ad-dc (and starts them where no policy-rc.d forbids it); protolab runs
# its own smbd in each lab, so the machine's are stopped and disabled -- only when this script installed samba: a
# Samba the machine had before is the administrator's.
quiet_samba() {
  local u
  for u in smbd nmbd samba-ad-dc; do
    if [ -d /run/systemd/system ]; then systemctl stop "$u" >/dev/null 2>&1 || true; fi
    systemctl disable "$u" >/dev/null 2>&1 || update-rc.d "$u" disable >/dev/null 2>&1 || true
  done
  say "Debian packages: Debian's smbd, nmbd and samba-ad-dc left stopped and disabled (protolab runs its own smbd)"
}

# protolab's patches to fio (patches/fio/*.patch, each explained in its header); a change to
# them rebuilds fio, so a machine never runs an engine without its fixes.
fio_patches_stamp() { cat patches/fio/*.patch 2>/dev/null | sha256sum | cut -d' ' -f1; }

build_fio() {
  local fio="$DEPS/fio/bin/fio" stamp="$DEPS/fio/.protolab-patches"
  if [ -x "$fio" ] && "$fio" --enghelp 2>/dev/null | grep -qw libiscsi \
     && "$fio" --enghelp | grep -qw nfs && "$fio" --enghelp | grep -qw nbd \
     && [ "$(cat "$stamp" 2>/dev/null)" = "$(fio_patches_stamp)" ]; then
    say "fio: $("$fio" --version) with libiscsi, nfs, nbd and protolab's patches already built"; return
  fi
  say "fio: building Debian's $FIO_VERSION with libiscsi, nfs and nbd engines"
  local apt="$DEPS/apt" src="$DEPS/src"
  mkdir -p "$apt/lists/partial" "$src"
  # A private deb-src list for the same mirror and suites as the system's.
  local uris suites
  uris=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  uris=${uris:-http://deb.debian.org/debian}
  echo "deb-src $uris bookworm main" > "$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
              -o APT::Sandbox::User=root)  # root downloads into .deps; no _apt user needed
  mkdir -p "$apt/cache/archives/partial"
  apt-get "${opts[@]}" update -qq
  rm -rf "$src"/fio-*
  (cd "$src" && apt-get "${opts[@]}" source -qq "fio=$FIO_VERSION" >/dev/null)
  local dir
  dir=$(find "$src" -maxdepth 1 -type d -name 'fio-*' | head -1)
  local p
  for p in patches/fio/*.patch; do
    [ -f "$p" ] || continue
    say "fio: applying $(basename "$p")"
    patch -s -p1 -d "$dir" < "$p" || { echo "fio: $p does not apply to $dir" >&2; exit 1; }
  done
  (cd "$dir" && ./configure --prefix="$DEPS/fio" --enable-libiscsi --enable-libnfs --enable-libnbd >"$src/configure.log" \
     && make -j"$(nproc)" >"$src/make.log" 2>&1 && make install >/dev/null)
  for e in libiscsi nfs nbd io_uring; do
    "$fio" --enghelp | grep -qw "$e" || { echo "fio built without the $e engine; see $src/configure.log" >&2; exit 1; }
  done
  fio_patches_stamp > "$stamp"
  say "fio: $("$fio" --version) built into $DEPS/fio"
}

# Tools the guest image carries that this host must not install (their daemons and services are the guests'):
# open-iscsi (iscsistart for a load guest's kernel iSCSI login; iscsiadm and iscsid for a guest that stands for a
# user's host) with its libraries, nvme-cli, knfsd's helpers and mount.nfs (nfs-kernel-server, nfs-common, rpcbind),
# mount.cifs (cifs-utils: a user's host's SMB3 attach with a credentials file),
# dropbear, and OpenBSD nc (the relay to fio's Unix socket over an ssh session where dropbear cannot forward it),
# unpacked into .deps/guest-debs/root from Debian's
# packages, not installed. Idempotent; without them the image has no initiator tools and doctor says so.
GUEST_DEBS=(open-iscsi libopeniscsiusr libisns0 nvme-cli libnvme1 nfs-kernel-server nfs-common rpcbind libtirpc-common
            netbase dropbear-bin libtomcrypt1 libtommath1 netcat-openbsd libbsd0 libmd0 cifs-utils)
fetch_guest_debs() {
  local out="$DEPS/guest-debs"
  if [ -x "$out/root/sbin/iscsistart" ] && [ -x "$out/root/usr/sbin/dropbear" ] && [ -x "$out/root/usr/sbin/nvme" ] \
     && [ -x "$out/root/usr/sbin/rpc.nfsd" ] && [ -x "$out/root/sbin/mount.nfs" ] && [ -f "$out/root/etc/rpc" ] \
     && [ -f "$out/root/usr/lib/x86_64-linux-gnu/libisns.so.0" ] && [ -x "$out/root/bin/nc.openbsd" ] \
     && [ -x "$out/root/sbin/mount.cifs" ] && [ -f "$out/debs.txt" ]; then
    say "guest tools: present ($(tr '\n' ' ' < "$out/debs.txt"))"; return
  fi
  rm -rf "$out"; mkdir -p "$out/root"
  if ! (cd "$out" && apt-get -o APT::Sandbox::User=root download "${GUEST_DEBS[@]}" >/dev/null 2>&1); then
    apt-get update -qq
    (cd "$out" && apt-get -o APT::Sandbox::User=root download "${GUEST_DEBS[@]}" >/dev/null) \
      || { say "guest tools: could not download ${GUEST_DEBS[*]}"; return; }
  fi
  local d
  for d in "$out"/*.deb; do dpkg-deb -x "$d" "$out/root"; done
  (cd "$out" && ls ./*.deb | sed 's|^./||') > "$out/debs.txt"
  rm -f "$out"/*.deb
  say "guest tools: $(tr '\n' ' ' < "$out/debs.txt")"
}

# The device model's FUSE daemon (lab.storage) and NFS-Ganesha's direct-I/O shim; rebuilt when a source changes.
build_blockdev() {
  local dir=src/protolab/lab/blockdev out="$DEPS/blockdev/bin/protolab-blockdev" lib="$DEPS/blockdev/lib/protolab-direct.so"
  local stamp="$DEPS/blockdev/.source" sum
  sum="$(cat "$dir/protolab-blockdev.c" "$dir/protolab-direct.c" | sha256sum | cut -d' ' -f1)"
  if [ -x "$out" ] && [ -f "$lib" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
    say "protolab-blockdev: up to date"; return
  fi
  mkdir -p "$DEPS/blockdev/bin" "$DEPS/blockdev/lib"
  gcc -O2 -Wall -Wextra -o "$out" "$dir/protolab-blockdev.c" $(pkg-config --cflags --libs fuse3)
  gcc -O2 -Wall -Wextra -shared -fPIC -o "$lib" "$dir/protolab-direct.c" -ldl
  echo "$sum" > "$stamp"
  say "protolab-blockdev: built into $out, with $lib"
}

make_venv() {
  local stamp=.venv/.installed
  if [ -f "$stamp" ] && [ "$stamp" -nt requirements.lock ] && [ "$stamp" -nt pyproject.toml ]; then
    say "virtualenv: up to date"; return
  fi
  say "virtualenv: installing pinned dependencies"
  [ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv 2>/dev/null || python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check --require-hashes -r requirements.lock 2>&1 | { grep -v "^WARNING: Location" || true; }
  .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
  touch "$stamp"
  say "virtualenv: done"
}

if [ "$(id -u)" != 0 ]; then
  echo "install-deps: run as root (it installs Debian packages); or install them yourself and run 'make venv'" >&2
  exit 2
fi
mode=${1:-}
case "$mode" in
  ""|test|demo) ;;
  guest)
    install_apt guest
    fetch_guest_debs
    scripts/build-guest.sh "$DEPS/guest"
    exit 0 ;;
  *) echo "install-deps: unknown mode '$mode'; give test, demo, guest or nothing" >&2; exit 2 ;;
esac
install_apt "$mode"
# The virtualenv (downloads and unpacking, mostly) is made while fio compiles (2 cores): on a bare machine the two
# took 56 s and 177 s one after the other. Its output lines carry their own [install] prefix.
make_venv &
venv_pid=$!
trap 'kill "$venv_pid" 2>/dev/null || true' EXIT
build_fio
build_blockdev
if [ "$mode" = demo ]; then
  say "guest image: not built now (the demo boots no guest); protolab builds it when a study first needs one"
else
  fetch_guest_debs
  # idempotent; optional — without it the VM tests skip and doctor says why
  scripts/build-guest.sh "$DEPS/guest" \
    || say "guest image: not built (virtual-machine load hosts unavailable; see the message above)"
fi
wait "$venv_pid" || { echo "install-deps: the virtualenv's install failed (see its lines above)" >&2; exit 1; }
trap - EXIT
