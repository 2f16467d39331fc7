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
MODULES="virtio_pci virtio_blk virtio_scsi sd_mod sym53c8xx megaraid_sas vmw_pvscsi virtio_net"

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
for app in sh mount insmod ip ifconfig sleep cat echo mkdir ls poweroff reboot seq netstat grep tr; do
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
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /etc/modules); do insmod /lib/modules/$m 2>/dev/null; done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
sleep 1
echo "protolab-guest: disks $(ls /sys/block | tr '\n' ' ')" > /dev/console
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
cat > "$OUT/guest.json" <<EOF
{"kernel": "$KVER", "fio": "$FIOV", "modules": $NMOD, "busybox": "$BUSYBOX"}
EOF
echo "build-guest: $OUT: kernel $KVER, $FIOV, $NMOD modules, $(du -h "$OUT/initramfs.cpio.gz" | cut -f1) initramfs"
