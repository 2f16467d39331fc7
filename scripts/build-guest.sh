#!/bin/sh
# Build the load-host guest image: Debian's kernel and an initramfs holding the
# project's fio (the same source as the host's .deps/fio, built again with
# --disable-native: the host build uses the host CPU's vector instructions, which
# an emulated CPU lacks -- it died with "Illegal instruction" under TCG) with its
# shared libraries, busybox and the disk-controller and
# network modules with their dependencies (from modules.dep, via modprobe).
# Idempotent: nothing is rebuilt when the output is newer than its inputs.
#
#   scripts/build-guest.sh [OUTDIR]     (default: .deps/guest)
#
# Output: OUTDIR/vmlinuz, OUTDIR/initramfs.cpio.gz, OUTDIR/guest.json
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/.deps/guest}
SRC=$(find "$ROOT/.deps/src" -maxdepth 1 -type d -name 'fio-*' 2>/dev/null | head -1)
FIO=${PROTOLAB_GUEST_FIO:-$OUT/fio/bin/fio}
BUSYBOX=$(command -v busybox || echo /bin/busybox)
KVER=${PROTOLAB_GUEST_KERNEL:-$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V | tail -1)}
# kernel data paths: nvmet-tcp (the storage server guest's target), nvme-tcp (a load guest's initiator)
MODULES="virtio_pci virtio_blk virtio_scsi sd_mod sym53c8xx megaraid_sas vmw_pvscsi virtio_net nvmet-tcp nvme-tcp"

die() { echo "build-guest: $*" >&2; exit 1; }
[ -n "$KVER" ] && [ -f "/boot/vmlinuz-$KVER" ] || die "no Debian kernel in /boot; apt-get install linux-image-amd64"
if [ ! -x "$FIO" ]; then
    [ -n "$SRC" ] || die "no fio source in .deps/src; run scripts/install-deps.sh first"
    echo "build-guest: building $(basename "$SRC") for the guest (portable, --disable-native)"
    B=$(mktemp -d); cp -r "$SRC/." "$B/"
    (cd "$B" && make clean >/dev/null 2>&1; ./configure --prefix="$OUT/fio" --disable-native >"$B/configure.log" \
        && make -j"$(nproc)" >"$B/make.log" 2>&1 && make install >/dev/null) \
        || { rm -rf "$B"; die "building the guest's fio failed"; }
    rm -rf "$B"
fi
"$BUSYBOX" --list >/dev/null 2>&1 || die "no busybox; apt-get install busybox-static"
file -L "$BUSYBOX" 2>/dev/null | grep -q "statically linked" || echo "build-guest: warning: $BUSYBOX is not static" >&2

if [ -f "$OUT/initramfs.cpio.gz" ] && [ -f "$OUT/guest.json" ] \
   && grep -q "\"kernel\": \"$KVER\"" "$OUT/guest.json" \
   && [ "$OUT/initramfs.cpio.gz" -nt "$FIO" ] && [ "$OUT/initramfs.cpio.gz" -nt "$0" ]; then
    echo "build-guest: $OUT is up to date (kernel $KVER)"
    exit 0
fi

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/sbin" "$STAGE/dev" "$STAGE/proc" "$STAGE/sys" "$STAGE/tmp" \
         "$STAGE/lib/modules" "$STAGE/etc" "$OUT"
cp "$BUSYBOX" "$STAGE/bin/busybox"
for app in sh mount insmod ip ifconfig sleep cat echo mkdir ln ls poweroff reboot seq netstat grep tr; do
    ln -s busybox "$STAGE/bin/$app"
done

# fio and every library ldd resolves, at the same paths (the dynamic loader included)
cp "$FIO" "$STAGE/bin/fio"
ldd "$FIO" | awk '/=> \//{print $3} /^\t\//{print $1}' | sort -u | while read -r lib; do
    mkdir -p "$STAGE$(dirname "$lib")"
    cp -L "$lib" "$STAGE$lib"
done
[ -e "$STAGE/lib64/ld-linux-x86-64.so.2" ] || die "ldd gave no dynamic loader for $FIO"

# modules with their dependencies, in load order, each once
: > "$STAGE/etc/modules"
for m in $MODULES; do
    modprobe -S "$KVER" --show-depends "$m" | awk '$1=="insmod"{print $2}'
done | awk '!seen[$0]++' | while read -r ko; do
    name=$(basename "$ko")
    case "$ko" in
        *.ko.xz) xz -dc "$ko" > "$STAGE/lib/modules/${name%.xz}"; name=${name%.xz} ;;
        *.ko.zst) zstd -qdc "$ko" > "$STAGE/lib/modules/${name%.zst}"; name=${name%.zst} ;;
        *) cp "$ko" "$STAGE/lib/modules/$name" ;;
    esac
    echo "$name" >> "$STAGE/etc/modules"
done

cat > "$STAGE/init" <<'EOF'
#!/bin/sh
# protolab guest: load drivers, bring up the control NIC (user-mode network), serve fio.
# With a data NIC on the lab's links (kernel command line, protolab.vm.guestnet and .kernelpaths):
#   pl.mac=MAC pl.ip=ADDR/PREFIX pl.mtu=MTU      the data NIC, found by its MAC
#   pl.nvmet=ADDR,PORT,NQN,HOSTNQN[+HOSTNQN]     storage server: /dev/vda exported by nvmet-tcp to those hosts
#   pl.nvme=ADDR,PORT,NQN,QUEUES,HOSTNQN         load guest: the kernel's nvme-tcp connects before fio serves
# protolab validates every value (addresses, numbers, NQN grammar) before it writes a command line.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /etc/modules); do insmod /lib/modules/$m 2>/dev/null; done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
arg() { for a in $(cat /proc/cmdline); do case "$a" in "$1"=*) echo "${a#*=}"; return ;; esac; done; }
MAC=$(arg pl.mac)
if [ -n "$MAC" ]; then
    for d in /sys/class/net/*; do [ "$(cat "$d/address")" = "$MAC" ] && DATA=${d##*/}; done
    ip link set "$DATA" mtu "$(arg pl.mtu)" up
    ip addr add "$(arg pl.ip)" dev "$DATA"
    echo "protolab-guest: data $DATA $(arg pl.ip) mtu $(arg pl.mtu)" > /dev/console
fi
NVMET=$(arg pl.nvmet)
if [ -n "$NVMET" ]; then
    set -- $(echo "$NVMET" | tr , ' ')
    mount -t configfs none /sys/kernel/config
    C=/sys/kernel/config/nvmet
    S=$C/subsystems/$3
    mkdir "$S" && echo 0 > "$S/attr_allow_any_host"
    for h in $(echo "$4" | tr + ' '); do mkdir "$C/hosts/$h" && ln -s "$C/hosts/$h" "$S/allowed_hosts/$h"; done
    mkdir "$S/namespaces/1" && echo /dev/vda > "$S/namespaces/1/device_path" && echo 1 > "$S/namespaces/1/enable"
    P=$C/ports/1
    mkdir "$P" && echo ipv4 > "$P/addr_adrfam" && echo tcp > "$P/addr_trtype" && echo "$1" > "$P/addr_traddr" \
        && echo "$2" > "$P/addr_trsvcid" && ln -s "$S" "$P/subsystems/$3" \
        && echo "protolab-guest: nvmet $3 on $1:$2" > /dev/console
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
    [ $i -ge 50 ] || echo "protolab-guest: nvme-tcp $3 at $1:$2" > /dev/console
fi
sleep 1
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
cat > "$OUT/guest.json" <<EOF
{"kernel": "$KVER", "fio": "$FIOV", "modules": $NMOD, "busybox": "$BUSYBOX", "kernel_paths": [$KPATHS]}
EOF
echo "build-guest: $OUT: kernel $KVER, $FIOV, $NMOD modules, $(du -h "$OUT/initramfs.cpio.gz" | cut -f1) initramfs"
