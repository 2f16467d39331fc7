#!/bin/sh
# Build the guest image (load guests and the storage server guest): Debian's kernel and an initramfs holding the
# project's fio (the same source as the host's .deps/fio, built again with
# --disable-native: the host build uses the host CPU's vector instructions, which
# an emulated CPU lacks -- it died with "Illegal instruction" under TCG) with its
# shared libraries, busybox, the kernel data paths' tools, and the modules of each
# role with their dependencies (from modules.dep, via modprobe: MODULE_GROUPS).
# Idempotent: nothing is rebuilt when the output is newer than its inputs.
#
#   scripts/build-guest.sh [OUTDIR]            (default: .deps/guest)
#   scripts/build-guest.sh --check [OUTDIR]    exit 0 if OUTDIR's image is up to date, 3 if this would build it
#                                              (protolab asks before a study that needs a guest: vm.image)
#
# Output: OUTDIR/vmlinuz, OUTDIR/initramfs.cpio.gz, OUTDIR/guest.json
set -eu

CHECK=0
[ "${1:-}" = --check ] && { CHECK=1; shift; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/.deps/guest}
SRC=$(find "$ROOT/.deps/src" -maxdepth 1 -type d -name 'fio-*' 2>/dev/null | head -1)
FIO=${PROTOLAB_GUEST_FIO:-$OUT/fio/bin/fio}
# the host's fio patches (scripts/install-deps.sh's stamp): the guest's fio is built again when they change
PATCHES=$ROOT/.deps/fio/.protolab-patches
same_patches() { [ -n "${PROTOLAB_GUEST_FIO:-}" ] || [ ! -f "$PATCHES" ] || cmp -s "$PATCHES" "$OUT/fio/.protolab-patches"; }
BUSYBOX=$(command -v busybox || echo /bin/busybox)
KVER=${PROTOLAB_GUEST_KERNEL:-$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V | tail -1)}
# Modules by role, GROUP:MODULE,…; the guest loads "base", then only the groups its command line asks for (insmod
# under an emulated CPU costs seconds a boot). base: the disk controllers, the NIC, crc32c (iSCSI's digests and
# ext4's checksums ask the crypto API for it; nothing modprobes in the guest). The kernel data paths: the storage
# server guest's targets (nvmet-tcp; LIO's iSCSI with its block backstore; knfsd with the ext4 of the pool's
# knfsd volume) and a load guest's initiators (nvme-tcp; iscsi_tcp, logged in by iscsistart; the NFS client; the
# CIFS client, with the crypto SMB3 asks for by name at mount time -- cifs's soft dependencies, which modprobe does
# not list: SHA-512 for 3.1.1's preauth integrity, AES-CMAC for signing, CCM and GCM for encryption).
MODULE_GROUPS="base:virtio_pci,virtio_blk,virtio_scsi,sd_mod,sym53c8xx,megaraid_sas,vmw_pvscsi,virtio_net,crc32c_generic
        nvmet:nvmet-tcp lio:target_core_iblock,iscsi_target_mod knfsd:nfsd,ext4
        nvme:nvme-tcp iscsi:iscsi_tcp nfs:nfsv3,nfsv4
        smb:cifs,sha512_generic,cmac,ecb,ctr,ccm,gcm,ghash-generic,nls_utf8"
# open-iscsi's iscsistart and its library, unpacked by scripts/install-deps.sh (not installed on this host)
EXTRA=$ROOT/.deps/guest-debs/root

die() { echo "build-guest: $*" >&2; exit 1; }
# the image is newer than every input: the guest's fio, this script, the guest tools, the kernel it was built for
up_to_date() {
    [ -n "$KVER" ] && [ -x "$FIO" ] && same_patches && [ -f "$OUT/initramfs.cpio.gz" ] && [ -f "$OUT/vmlinuz" ] && [ -f "$OUT/guest.json" ] \
   && grep -q "\"kernel\": \"$KVER\"" "$OUT/guest.json" \
   && [ "$OUT/initramfs.cpio.gz" -nt "$FIO" ] && [ "$OUT/initramfs.cpio.gz" -nt "$0" ] \
   && { [ ! -x "$EXTRA/sbin/iscsistart" ] || [ "$OUT/initramfs.cpio.gz" -nt "$EXTRA/sbin/iscsistart" ]; } \
   && { [ ! -x "$EXTRA/usr/sbin/dropbear" ] || [ "$OUT/initramfs.cpio.gz" -nt "$EXTRA/usr/sbin/dropbear" ]; } \
   && { [ ! -x "$EXTRA/usr/sbin/nvme" ] || [ "$OUT/initramfs.cpio.gz" -nt "$EXTRA/usr/sbin/nvme" ]; } \
   && { [ ! -f "$EXTRA/../debs.txt" ] || [ "$OUT/initramfs.cpio.gz" -nt "$EXTRA/../debs.txt" ]; }
}
if [ $CHECK = 1 ]; then
    # a guest needs QEMU too, which `make demo` leaves to scripts/install-deps.sh guest (run on 3)
    command -v qemu-system-x86_64 >/dev/null || { echo "build-guest: QEMU is not installed"; exit 3; }
    up_to_date && { echo "build-guest: $OUT is up to date (kernel $KVER)"; exit 0; }
    echo "build-guest: $OUT is missing or older than its inputs"; exit 3
fi
[ -n "$KVER" ] && [ -f "/boot/vmlinuz-$KVER" ] || die "no Debian kernel in /boot; apt-get install linux-image-amd64"
if [ ! -x "$FIO" ] || ! same_patches; then
    [ -n "$SRC" ] || die "no fio source in .deps/src; run scripts/install-deps.sh first"
    echo "build-guest: building $(basename "$SRC") for the guest (portable, --disable-native)"
    B=$(mktemp -d); cp -r "$SRC/." "$B/"
    (cd "$B" && make clean >/dev/null 2>&1; ./configure --prefix="$OUT/fio" --disable-native >"$B/configure.log" \
        && make -j"$(nproc)" >"$B/make.log" 2>&1 && make install >/dev/null) \
        || { rm -rf "$B"; die "building the guest's fio failed"; }
    rm -rf "$B"
    [ ! -f "$PATCHES" ] || cp "$PATCHES" "$OUT/fio/.protolab-patches"
fi
"$BUSYBOX" --list >/dev/null 2>&1 || die "no busybox; apt-get install busybox-static"
file -L "$BUSYBOX" 2>/dev/null | grep -q "statically linked" || echo "build-guest: warning: $BUSYBOX is not static" >&2

if up_to_date; then
    echo "build-guest: $OUT is up to date (kernel $KVER)"
    exit 0
fi

umask 022  # every folder and file of the image readable by the daemons that drop root (whatever the caller's umask)
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/sbin" "$STAGE/dev" "$STAGE/proc" "$STAGE/sys" "$STAGE/tmp" \
         "$STAGE/lib/modules" "$STAGE/etc" "$STAGE/run" "$STAGE/var" "$OUT"
# The guest's / is this folder: mktemp made it 0700, which no daemon that drops root (rpcbind as _rpc) can walk,
# and libwrap turns its unreadable /etc/hosts.deny into "Client credential too weak" for every remote caller.
chmod 755 "$STAGE"
chmod 1777 "$STAGE/tmp"
ln -s ../run "$STAGE/var/run"  # rpcbind's socket: the kernel and libtirpc look for /var/run/rpcbind.sock
cp "$BUSYBOX" "$STAGE/bin/busybox"
for app in sh mount insmod ip ifconfig sleep cat echo mkdir ln ls poweroff reboot seq netstat grep tr stty \
           awk sed head chmod id uname umount rmdir readlink basename blkid wc sort rm tail; do
    ln -s busybox "$STAGE/bin/$app"
done

# fio and every library ldd resolves, at the same paths (the dynamic loader included)
cp "$FIO" "$STAGE/bin/fio"
ldd "$FIO" | awk '/=> \//{print $3} /^\t\//{print $1}' | sort -u | while read -r lib; do
    mkdir -p "$STAGE$(dirname "$lib")"
    cp -L "$lib" "$STAGE$lib"
done
[ -e "$STAGE/lib64/ld-linux-x86-64.so.2" ] || die "ldd gave no dynamic loader for $FIO"
# a tool unpacked by install-deps ($1, under $EXTRA) at $2 in the guest, with every library ldd resolves for it
add_tool() {
    [ -x "$EXTRA/$1" ] || return 1
    mkdir -p "$STAGE/$(dirname "$2")"
    cp "$EXTRA/$1" "$STAGE/$2"
    LD_LIBRARY_PATH="$EXTRA/usr/lib/x86_64-linux-gnu" ldd "$EXTRA/$1" | awk '/=> \//{print $3}' | while read -r lib; do
        dest=${lib#"$EXTRA"}  # an unpacked library goes where the guest's loader looks for it
        mkdir -p "$STAGE$(dirname "$dest")"
        cp -L "$lib" "$STAGE$dest"
    done
}
add_tool sbin/iscsistart bin/iscsistart || true
# a user's host's initiator tools (protolab attaches over ssh: run.attaching): iscsiadm with iscsid, nvme-cli
add_tool sbin/iscsiadm sbin/iscsiadm && add_tool sbin/iscsid sbin/iscsid || true
add_tool usr/sbin/nvme sbin/nvme || true
# NFS: knfsd's helpers for a storage server guest (rpcbind, exportfs, rpc.mountd, rpc.nfsd) and mount.nfs for a
# guest that stands for a user's host, with libtirpc's /etc/netconfig
if add_tool usr/sbin/rpc.nfsd sbin/rpc.nfsd && add_tool usr/sbin/rpc.mountd sbin/rpc.mountd \
   && add_tool usr/sbin/exportfs sbin/exportfs && add_tool sbin/rpcbind sbin/rpcbind; then
    cp "$EXTRA/etc/netconfig" "$STAGE/etc/netconfig"
    for f in services rpc protocols; do [ -f "$EXTRA/etc/$f" ] && cp "$EXTRA/etc/$f" "$STAGE/etc/$f"; done
fi
add_tool sbin/mount.nfs sbin/mount.nfs && [ -f "$EXTRA/etc/netconfig" ] && cp "$EXTRA/etc/netconfig" "$STAGE/etc/netconfig" || true
# SMB3: mount.cifs for a guest that stands for a user's host (an attach reads its credentials file; a load guest's
# lab mount needs none: busybox's mount hands its options to the kernel)
add_tool sbin/mount.cifs sbin/mount.cifs || true

# dropbear (and its libraries), so that a guest can stand for a user's host reached over ssh (vm.guestssh)
add_tool usr/sbin/dropbear sbin/dropbear || true
# OpenBSD nc: protolab's relay to the fio server's Unix socket over a dropbear session (engine.sshagent); named
# nc.openbsd, as busybox's sh runs its own nc (no -U) for "nc"
add_tool bin/nc.openbsd bin/nc.openbsd || true
# root (dropbear's logins) and _rpc (rpcbind runs as it)
printf 'root:x:0:0:root:/root:/bin/sh\n_rpc:x:102:65534::/run/rpcbind:/bin/false\n' > "$STAGE/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$STAGE/etc/group"

# each group's modules with their dependencies, in load order, each once (etc/modules.GROUP); every module once
# in lib/modules, and all of them in etc/modules (what the image holds)
: > "$STAGE/etc/modules"
for g in $MODULE_GROUPS; do
    for m in $(echo "${g#*:}" | tr , ' '); do
        modprobe -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
    done | awk '!seen[$0]++' | while read -r ko; do
        name=$(basename "$ko"); name=${name%.xz}; name=${name%.zst}
        if ! grep -qx "$name" "$STAGE/etc/modules"; then
            case "$ko" in
                *.ko.xz) xz -dc "$ko" > "$STAGE/lib/modules/$name" ;;
                *.ko.zst) zstd -qdc "$ko" > "$STAGE/lib/modules/$name" ;;
                *) cp "$ko" "$STAGE/lib/modules/$name" ;;
            esac
            echo "$name" >> "$STAGE/etc/modules"
        fi
        echo "$name"
    done > "$STAGE/etc/modules.${g%%:*}"
done

cat > "$STAGE/init" <<'EOF'
#!/bin/sh
# protolab guest: load drivers, bring up the control NIC (user-mode network), serve fio.
# With a data NIC on the lab's links (kernel command line, protolab.vm.guestnet and .kernelpaths):
#   pl.mac=MAC pl.ip=ADDR/PREFIX pl.mtu=MTU      the data NIC, found by its MAC
#   pl.nvmet=ADDR,PORT,NQN,HOSTNQN[+…],SERIAL    storage server: the disk with that serial, by nvmet-tcp, to those hosts
#   pl.lio=ADDR,PORT,IQN,INITIATOR[+…],SERIAL    storage server: the disk with that serial, LIO iSCSI LUN 0, to those
#   pl.knfsd=ADDR,CLIENT[+…][,SERIAL]            storage server: knfsd exports /export to those clients: the ext4
#                                                on the disk with that serial (the pool's knfsd volume), else a tmpfs
#   pl.nfs=ADDR,VERS,NCONNECT,RSIZE,WSIZE        load guest: mounts ADDR:/export on /mnt/pl before fio serves (a
#                                                size 0: the kernel's own)
#   pl.smb=ADDR,SHARE,USER,PASS,VERS[,OPT…]      load guest: the kernel's CIFS client mounts //ADDR/SHARE on /mnt/pl
#                                                (SMB VERS, cache=none, and the kernel's cifs options OPT) before fio
#                                                serves; busybox's mount hands the options to the kernel (no mount.cifs)
#   pl.nvme=ADDR,PORT,NQN,QUEUES,HOSTNQN         load guest: the kernel's nvme-tcp connects before fio serves
#   pl.iscsi=ADDR,PORT,IQN,INITIATOR,SESSIONS,REPLACEMENT,NOOP_INTERVAL,NOOP_TIMEOUT
#                                                load guest: iscsistart logs in SESSIONS times (a disk per session)
#                                                with those open-iscsi timeouts (s), then iscsid takes the sessions
#                                                over (it logs in again a connection that failed), same timeouts
#   pl.stat=ttyS1                                any guest: its /proc/stat cpu line for each line the host sends
#                                                there; "quiesce" and "resume" unexport and unmount the pool's
#                                                knfsd volume and mount and export it again (the host restores it)
#   pl.ssh=TYPE:BASE64                           any guest: dropbear on 10.0.2.15:22, root logs in with that key only
# protolab validates every value (addresses, numbers, NQN grammar) before it writes a command line.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
exec 2>/dev/console  # the kernel may start init with no stdio (no /dev/console in the initramfs): errors seen
arg() { for a in $(cat /proc/cmdline); do case "$a" in "$1"=*) echo "${a#*=}"; return ;; esac; done; }
# the drivers, then only the modules of the roles this command line names (a module loaded twice fails, quietly);
# a guest standing for a user's host (pl.ssh) gets every initiator: protolab attaches over ssh
load() { for m in $(cat "/etc/modules.$1"); do insmod "/lib/modules/$m" 2>/dev/null; done; }
load base
for r in nvmet lio knfsd nvme iscsi nfs smb; do [ -n "$(arg "pl.$r")" ] && load "$r"; done
[ -n "$(arg pl.ssh)" ] && { load nvme; load iscsi; load nfs; load smb; }
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
# (pl.smb's password is not repeated: the console log goes into the run directory)
echo "protolab-guest: cmdline $(sed 's/\(pl\.smb=[^, ]*,[^, ]*,[^, ]*,\)[^, ]*/\1-/' /proc/cmdline)" > /dev/console
MAC=$(arg pl.mac)
if [ -n "$MAC" ]; then
    for d in /sys/class/net/*; do [ "$(cat "$d/address")" = "$MAC" ] && DATA=${d##*/}; done
    ip link set "$DATA" mtu "$(arg pl.mtu)" up
    ip addr add "$(arg pl.ip)" dev "$DATA"
    echo "protolab-guest: data $DATA $(arg pl.ip) mtu $(arg pl.mtu)" > /dev/console
fi
# the virtio disk whose serial is $1 (protolab names each disk's serial)
disk() { for d in /sys/block/vd*; do [ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] && echo "/dev/${d##*/}"; done; return 0; }
mount -t configfs none /sys/kernel/config
NVMET=$(arg pl.nvmet)
if [ -n "$NVMET" ]; then
    set -- $(echo "$NVMET" | tr , ' ')
    C=/sys/kernel/config/nvmet
    S=$C/subsystems/$3
    mkdir "$S" && echo 0 > "$S/attr_allow_any_host"
    for h in $(echo "$4" | tr + ' '); do mkdir "$C/hosts/$h" && ln -s "$C/hosts/$h" "$S/allowed_hosts/$h"; done
    mkdir "$S/namespaces/1" && disk "$5" > "$S/namespaces/1/device_path" && echo 1 > "$S/namespaces/1/enable"
    P=$C/ports/1
    mkdir "$P" && echo ipv4 > "$P/addr_adrfam" && echo tcp > "$P/addr_trtype" && echo "$1" > "$P/addr_traddr" \
        && echo "$2" > "$P/addr_trsvcid" && ln -s "$S" "$P/subsystems/$3" \
        && echo "protolab-guest: nvmet $3 on $1:$2" > /dev/console
    echo "protolab-guest: nvmet namespace 1: $(cat "$S/namespaces/1/device_path") enabled $(cat "$S/namespaces/1/enable")" \
        > /dev/console
fi
KNFSD=$(arg pl.knfsd)
if [ -n "$KNFSD" ] && [ -x /sbin/rpc.nfsd ]; then
    set -- $(echo "$KNFSD" | tr , ' ')
    mkdir -p /export /var/lib/nfs/v4recovery /run/rpcbind /etc/exports.d /var/lib/nfs/rpc_pipefs
    if [ -n "${3:-}" ]; then  # the pool's knfsd volume: ext4 on the disk with that serial
        KNFSD_DISK=$(disk "$3")
        mount -t ext4 -o noatime "$KNFSD_DISK" /export > /dev/console 2>&1 \
            || echo "protolab-guest: knfsd: mounting $KNFSD_DISK failed" > /dev/console
    else
        mount -t tmpfs -o size=256m,mode=0755 export /export
    fi
    # no delegations: a client holding one would keep /export busy when the host restores the pool beneath it
    echo 0 > /proc/sys/fs/leases-enable
    mount -t nfsd nfsd /proc/fs/nfsd
    echo 10 > /proc/fs/nfsd/nfsv4gracetime; echo 10 > /proc/fs/nfsd/nfsv4leasetime
    /sbin/rpcbind -w > /dev/console 2>&1
    i=0; until [ -S /run/rpcbind.sock ] || [ $i -ge 25 ]; do i=$((i + 1)); sleep 0.2; done
    [ -S /run/rpcbind.sock ] || echo "protolab-guest: rpcbind did not start" > /dev/console
    : > /etc/exports
    for c in $(echo "$2" | tr + ' '); do echo "/export $c(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=1)" >> /etc/exports; done
    /sbin/exportfs -ra > /dev/console 2>&1
    /sbin/rpc.mountd > /dev/console 2>&1
    /sbin/rpc.nfsd -H "$1" -p 2049 8 > /dev/console 2>&1 \
        && echo "protolab-guest: knfsd /export on $1 to $2 ($(cat /proc/fs/nfsd/versions))" > /dev/console
fi
LIO=$(arg pl.lio)
if [ -n "$LIO" ]; then
    set -- $(echo "$LIO" | tr , ' ')
    B=/sys/kernel/config/target/core/iblock_0/pl
    mkdir -p "$B" && echo "udev_path=$(disk "$5")" > "$B/control" && echo 1 > "$B/enable"
    G=/sys/kernel/config/target/iscsi/$3/tpgt_1
    mkdir -p "$G/lun/lun_0" && ln -s "$B" "$G/lun/lun_0/pl" && mkdir "$G/np/$1:$2"
    for i in $(echo "$4" | tr + ' '); do mkdir -p "$G/acls/$i/lun_0" && ln -s "$G/lun/lun_0" "$G/acls/$i/lun_0/pl"; done
    echo 0 > "$G/attrib/authentication" && echo 1 > "$G/enable" \
        && echo "protolab-guest: lio $3 on $1:$2" > /dev/console
fi
ISCSI=$(arg pl.iscsi)
if [ -n "$ISCSI" ]; then
    set -- $(echo "$ISCSI" | tr , ' ')
    mkdir -p /etc/iscsi/nodes /etc/iscsi/ifaces /var/lib/iscsi /var/lock/iscsi /run/lock/iscsi
    R=${6:-120}; NI=${7:-5}; NT=${8:-5}
    # iscsid's own record of this initiator and of its timeouts: its logins after a failure use them
    echo "InitiatorName=$4" > /etc/iscsi/initiatorname.iscsi
    printf 'node.session.timeo.replacement_timeout = %s\nnode.conn[0].timeo.noop_out_interval = %s\n' "$R" "$NI" \
        > /etc/iscsi/iscsid.conf
    printf 'node.conn[0].timeo.noop_out_timeout = %s\n' "$NT" >> /etc/iscsi/iscsid.conf
    for s in $(seq "$5"); do
        i=0
        # each session from an interface name of its own: iscsistart refuses a second session on the same one
        until iscsistart -i "$4" -t "$3" -g 1 -a "$1" -p "$2" -P "iface.iscsi_ifacename=pl$s" \
              -P "node.session.timeo.replacement_timeout=$R" -P "node.conn[0].timeo.noop_out_interval=$NI" \
              -P "node.conn[0].timeo.noop_out_timeout=$NT" > /dev/console 2>&1; do
            i=$((i + 1))
            [ $i -lt 60 ] || { echo "protolab-guest: iscsi login to $1:$2 failed" > /dev/console; break; }
            sleep 0.5
        done
    done
    i=0
    until [ "$(ls /sys/block | grep -c '^sd')" -ge "$5" ] || [ $i -ge 50 ]; do i=$((i + 1)); sleep 0.2; done
    if [ $i -ge 50 ]; then
        echo "protolab-guest: iscsi $3 at $1:$2 gave $(ls /sys/block | grep -c '^sd') of $5 disks" > /dev/console
    else
        echo "protolab-guest: iscsi $3 at $1:$2 sessions $5" > /dev/console
    fi
    # iscsistart has left: iscsid takes its sessions over from sysfs (with iscsid.conf's timeouts), or a connection
    # that fails is never logged in again. It logs each in again as it does: fio must not open a disk meanwhile
    # (ENXIO), so its server waits for every session's "operational after recovery" (10 s at most)
    if [ -x /sbin/iscsid ]; then
        : > /run/iscsid.log
        /sbin/iscsid -f > /run/iscsid.log 2>&1 &
        echo "protolab-guest: iscsid $!" > /dev/console
        tail -f /run/iscsid.log > /dev/console &
        i=0
        until [ "$(grep -c 'operational after recovery' /run/iscsid.log)" -ge "$5" ] || [ $i -ge 50 ]; do
            i=$((i + 1)); sleep 0.2
        done
        echo "protolab-guest: iscsid has the sessions ($(grep -c 'operational after recovery' /run/iscsid.log) of $5)" \
            > /dev/console
    fi
fi
NFS=$(arg pl.nfs)
if [ -n "$NFS" ]; then
    set -- $(echo "$NFS" | tr , ' ')
    mkdir -p /mnt/pl
    O="vers=$2,nconnect=$3"
    [ "${4:-0}" = 0 ] || O="$O,rsize=$4"
    [ "${5:-0}" = 0 ] || O="$O,wsize=$5"
    [ "$2" = 3 ] && O="$O,nolock"  # no rpc.statd in the guest: NFSv3 without the lock protocol
    i=0
    until mount -t nfs -o "$O" "$1:/export" /mnt/pl > /dev/console 2>&1; do
        i=$((i + 1))
        [ $i -lt 60 ] || { echo "protolab-guest: nfs mount of $1:/export failed" > /dev/console; break; }
        sleep 0.5
    done
    [ $i -lt 60 ] && echo "protolab-guest: nfs $1:/export on /mnt/pl $O" > /dev/console
fi
SMB=$(arg pl.smb)
if [ -n "$SMB" ]; then
    set -- $(echo "$SMB" | tr , ' ')
    A=$1; S=$2; U=$3; P=$4; V=$5; shift 5
    mkdir -p /mnt/pl
    # cache=none: no page cache on this side, so fio's direct=1 and buffered jobs alike reach the server
    O="vers=$V,cache=none"
    for o in "$@"; do O="$O,$o"; done
    i=0
    until mount -t cifs -o "ip=$A,username=$U,password=$P,$O" "//$A/$S" /mnt/pl > /dev/console 2>&1; do
        i=$((i + 1))
        [ $i -lt 60 ] || { echo "protolab-guest: smb mount of //$A/$S failed" > /dev/console; break; }
        sleep 0.5
    done
    [ $i -lt 60 ] && echo "protolab-guest: smb //$A/$S on /mnt/pl $O" > /dev/console
fi
NVME=$(arg pl.nvme)
if [ -n "$NVME" ]; then
    set -- $(echo "$NVME" | tr , ' ')
    i=0
    until echo "transport=tcp,traddr=$1,trsvcid=$2,nqn=$3,nr_io_queues=$4,hostnqn=$5" > /dev/nvme-fabrics; do
        i=$((i + 1))
        [ $i -lt 120 ] || { echo "protolab-guest: nvme-tcp connect to $1:$2 failed" > /dev/console; break; }
        sleep 0.5
    done
    i=0
    until ls /sys/block | grep -q '^nvme' || [ $i -ge 50 ]; do i=$((i + 1)); sleep 0.2; done
    if [ $i -ge 50 ]; then
        echo "protolab-guest: nvme-tcp $3 at $1:$2 gave no namespace (controllers: $(ls /sys/class/nvme))" > /dev/console
    else
        echo "protolab-guest: nvme-tcp $3 at $1:$2" > /dev/console
    fi
fi
# pl.ssh=TYPE:BASE64: root may log in with that key (dropbear, port 22, no passwords; vm.guestssh)
SSHKEY=$(arg pl.ssh)
if [ -n "$SSHKEY" ] && [ -x /sbin/dropbear ]; then
    mkdir -p /root/.ssh /etc/dropbear /var/run && chmod 700 /root /root/.ssh
    echo "$SSHKEY" | tr : ' ' > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
    # on the control NIC only (QEMU's forward reaches it there): never on the lab's links
    /sbin/dropbear -R -s -E -p 10.0.2.15:22 > /dev/console 2>&1 && echo "protolab-guest: ssh on 10.0.2.15:22" > /dev/console
fi
# pl.stat=ttyS1: answer each line from the host on the second serial port with /proc/stat's cpu line (vm.guestcpu)
if [ "$(arg pl.stat)" = ttyS1 ] && [ -c /dev/ttyS1 ]; then
    stty -F /dev/ttyS1 raw -echo
    # knfsd's volume around the host's restore: unexported and unmounted (its pages go with it), then back
    quiesce() {
        [ -n "${KNFSD_DISK:-}" ] || { echo "failed quiesce: no knfsd volume"; return; }
        /sbin/exportfs -ua > /dev/console 2>&1
        i=0
        until umount /export 2> /dev/null; do  # nfsd lets go of a closed file within seconds
            i=$((i + 1))
            [ $i -lt 100 ] || { echo "failed quiesce: /export stays busy"; return; }
            sleep 0.1
        done
        echo "protolab-guest: knfsd let go of /export (restore)" > /dev/console
        echo "ok quiesce"
    }
    resume() {
        if mount -t ext4 -o noatime "$KNFSD_DISK" /export > /dev/console 2>&1 && /sbin/exportfs -ra > /dev/console 2>&1
        then echo "protolab-guest: knfsd took /export back" > /dev/console; echo "ok resume"
        else echo "failed resume: mount or exportfs"; fi
    }
    # a stat question: shell built-ins only, no process forked (its CPU would be in the figure it reports)
    (exec < /dev/ttyS1 > /dev/ttyS1
     while read -r q; do
         case "$q" in
             quiesce) quiesce ;;
             resume) resume ;;
             *) read -r l < /proc/stat; echo "$l" ;;
         esac
     done) &
    echo "protolab-guest: stat on ttyS1" > /dev/console
fi
sleep 1
# the iSCSI timeouts the kernel has (once iscsid has taken the sessions over, logging each in again)
for c in /sys/class/iscsi_connection/connection*; do
    [ -e "$c" ] || continue
    n=${c##*connection}; n=${n%%:*}
    echo "protolab-guest: iscsi timeouts session$n replacement_timeout=$(cat "/sys/class/iscsi_session/session$n/recovery_tmo") noop_out_interval=$(cat "$c/recv_tmo") noop_out_timeout=$(cat "$c/ping_tmo")" > /dev/console
done
# nvmeXcYnZ: a multipath controller's hidden path, no /dev node (fio opens nvmeXnZ)
echo "protolab-guest: disks $(ls /sys/block | grep -v '^nvme[0-9]*c[0-9]*n' | tr '\n' ' ')" > /dev/console
(while true; do /bin/fio --server=ip:0.0.0.0,8765 > /dev/console 2>&1; sleep 1; done) &
# ready only once fio listens: the host's forward accepts connections before that
until netstat -ltn | grep -q ':8765 '; do sleep 0.2; done
echo "protolab-guest: fio server ready" > /dev/console
wait
EOF
chmod +x "$STAGE/init"

(cd "$STAGE" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT/initramfs.cpio.gz.tmp"
cp "/boot/vmlinuz-$KVER" "$OUT/vmlinuz.tmp"
mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
mv "$OUT/initramfs.cpio.gz.tmp" "$OUT/initramfs.cpio.gz"
FIOV=$("$FIO" --version)
NMOD=$(wc -l < "$STAGE/etc/modules")
# the kernel data paths this image can serve and attach (vm.kernelpaths): both ends' modules are in it
KPATHS=""
grep -qx nvmet-tcp.ko "$STAGE/etc/modules" && grep -qx nvme-tcp.ko "$STAGE/etc/modules" && KPATHS='"nvme-tcp"'
grep -qx iscsi_target_mod.ko "$STAGE/etc/modules" && grep -qx iscsi_tcp.ko "$STAGE/etc/modules" \
    && [ -x "$STAGE/bin/iscsistart" ] && KPATHS="$KPATHS${KPATHS:+, }\"iscsi\""
grep -qx nfsd.ko "$STAGE/etc/modules" && grep -qx nfsv4.ko "$STAGE/etc/modules" && grep -qx ext4.ko "$STAGE/etc/modules" \
    && [ -x "$STAGE/sbin/rpc.nfsd" ] && [ -x "$STAGE/sbin/mount.nfs" ] && KPATHS="$KPATHS${KPATHS:+, }\"nfs\""
# smb: the load guests' CIFS client (Samba serves it from the host's storage namespace)
grep -qx cifs.ko "$STAGE/etc/modules" && grep -qx sha512_generic.ko "$STAGE/etc/modules" \
    && grep -qx cmac.ko "$STAGE/etc/modules" && KPATHS="$KPATHS${KPATHS:+, }\"smb\""
SSH=false
[ -x "$STAGE/sbin/dropbear" ] && SSH=true
# the initiator tools a guest standing for a user's host has (protolab attaches with them over ssh)
TOOLS=""
for t in iscsiadm iscsid nvme mount.nfs rpc.nfsd mount.cifs; do [ -x "$STAGE/sbin/$t" ] && TOOLS="$TOOLS${TOOLS:+, }\"$t\""; done
cat > "$OUT/guest.json" <<EOF
{"kernel": "$KVER", "fio": "$FIOV", "modules": $NMOD, "busybox": "$BUSYBOX", "kernel_paths": [$KPATHS], "ssh": $SSH, "tools": [$TOOLS]}
EOF
echo "build-guest: $OUT: kernel $KVER, $FIOV, $NMOD modules, $(du -h "$OUT/initramfs.cpio.gz" | cut -f1) initramfs"
