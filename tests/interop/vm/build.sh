#!/usr/bin/env bash
# tests/interop/vm/build.sh - build (cached) the interop guest: Debian's stock kernel, siw.ko built
# out of tree from Debian's linux-source of the same version (Debian does not enable siw), and an
# initramfs with rdma-core (rping, ucmatose, rdma_server/rdma_client), iproute2 and tcpdump.
#
# Usage: build.sh            prints the image directory (holding vmlinuz, initramfs.img) on stdout
# Environment:
#   INTEROP_CACHE        cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/openndk-interop);
#                        must be outside the source tree
#   SIW_MPA_CRC_REQUIRED=1 | SIW_MPA_VERSION=1 | SIW_PEER_TO_PEER=1   siw variant (compile-time
#                        constants of siw_main.c); each variant gets its own image next to the others
#   KERNEL_PKG           kernel package (default linux-image-amd64, pinned on first use)
#   STEP_TIMEOUT         seconds for each long command (default 900)
#   BUILD_KSMBD          1: also ksmbd_smbdirect.ko (Debian's ksmbd rebuilt with
#                        CONFIG_SMB_SERVER_SMBDIRECT=y) and ksmbd-tools, for the SMB Direct cells
# Layout of the cache:
#   base/                downloads and unpacked packages shared by every variant
#   img/<key>/           one bootable image; <key> hashes every input (these scripts, the pinned
#                        kernel, the package list, the siw options), so a changed input builds a new
#                        image and the variants sit side by side
# Exit status: 0 ok; 3 the kernel/userspace packages cannot be fetched (the caller skips);
# anything else is a real failure.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/openndk-interop}"
BASE="$CACHE/base"
KERNEL_PKG="${KERNEL_PKG:-linux-image-amd64}"
T="${STEP_TIMEOUT:-900}"
SIW_CRC=${SIW_MPA_CRC_REQUIRED:-0} SIW_MPA=${SIW_MPA_VERSION:-2} SIW_P2P=${SIW_PEER_TO_PEER:-0}
SIW_OPTS="crc_required=$SIW_CRC p2p=$SIW_P2P mpa=$SIW_MPA"
USER_PKGS=(busybox-static kmod bash libibverbs1 ibverbs-providers librdmacm1 ibverbs-utils
	rdmacm-utils iproute2 tcpdump strace)
BUILD_KSMBD="${BUILD_KSMBD:-0}"
[ "$BUILD_KSMBD" = 1 ] && USER_PKGS+=(ksmbd-tools)
# verbs provider (issue 16): perftest's ib_* tools for the cells against rdma-core's own tools
USER_PKGS+=(perftest)
APT_OPTS=(-q -o APT::Sandbox::User=root)

log() { printf '[vm-build %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
unreachable() { log "cannot fetch packages: $*"; exit 3; }

mkdir -p "$BASE" "$CACHE/img"
exec 9>"$CACHE/.lock"
timeout "$T" flock 9 || die "timed out waiting for the cache lock $CACHE/.lock"
T0=$(date +%s)

# ---------------------------------------------------------------- host tools
need=()
chk() { command -v "$1" >/dev/null 2>&1 || need+=("$2"); }
chk gcc-12 gcc-12; chk make make; chk depmod kmod; chk modprobe kmod; chk cpio cpio
chk zstd zstd; chk strip binutils; chk readelf binutils; chk dpkg-deb dpkg; chk apt-get apt
chk sha256sum coreutils; chk flock util-linux
[ -e /usr/include/stdio.h ] || need+=(libc6-dev)
if [ "${#need[@]}" -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing host tools: ${need[*]} (install them as root)"
	log "installing host tools: ${need[*]}"
	DEBIAN_FRONTEND=noninteractive timeout "$T" apt-get "${APT_OPTS[@]}" install -y --no-install-recommends \
		"${need[@]}" >"$BASE/apt-host.log" 2>&1 || { tail -20 "$BASE/apt-host.log" >&2; die "apt-get install ${need[*]} failed"; }
fi

# ---------------------------------------------------------------- pin the kernel
if [ ! -s "$BASE/kernel.env" ]; then
	if ! apt-cache show --no-all-versions "$KERNEL_PKG" >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
		log "apt has no lists for $KERNEL_PKG: apt-get update"
		timeout "$T" apt-get -q update >"$BASE/apt-update.log" 2>&1 || log "apt-get update failed (see $BASE/apt-update.log)"
	fi
	img="$KERNEL_PKG"
	dep=$(apt-cache depends "$img" 2>/dev/null | awk '/^ *Depends: linux-image-[0-9]/{print $2; exit}')
	[ -n "$dep" ] && img="$dep"
	ver=$(apt-cache show --no-all-versions "$img" 2>/dev/null | awk '/^Version:/{print $2; exit}')
	[ -n "$ver" ] || unreachable "apt knows no $KERNEL_PKG (no apt lists?)"
	kver=${img#linux-image-}; kver=${kver%-unsigned}
	major=$(echo "$ver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
	printf 'KIMG_PKG=%s\nKIMG_VER=%s\nKVER=%s\nKMAJOR=%s\n' "$img" "$ver" "$kver" "$major" >"$BASE/kernel.env.tmp"
	mv "$BASE/kernel.env.tmp" "$BASE/kernel.env"
	log "kernel pinned: $img $ver"
fi
# shellcheck disable=SC1091
. "$BASE/kernel.env"
KFLAV=${KVER##*-}; KABI=${KVER%-"$KFLAV"}
HDR_PKG=linux-headers-$KVER HDRC_PKG=linux-headers-$KABI-common
KBUILD_PKG=linux-kbuild-$KMAJOR SRC_PKG=linux-source-$KMAJOR

# ---------------------------------------------------------------- image key
KEY=$( { cat "$HERE/build.sh" "$HERE/guest-init.sh" "$HERE/guest-setup.sh" "$BASE/kernel.env"
	echo "${USER_PKGS[*]}"; echo "$SIW_OPTS"; } | sha256sum | cut -c1-16)
IMG="$CACHE/img/$KEY"
if [ -s "$IMG/vmlinuz" ] && [ -s "$IMG/initramfs.img" ] && [ -s "$IMG/build-info.txt" ]; then
	touch "$IMG"   # last use, for the pruning below
	log "cached image $IMG ($SIW_OPTS)"
	echo "$IMG"; exit 0
fi
log "building image $KEY ($SIW_OPTS; $KIMG_PKG $KIMG_VER)"

stamp_ok() { [ -e "$BASE/.stamp-$1" ] && [ "$(cat "$BASE/.stamp-$1")" = "$2" ]; }
stamp_set() { echo "$2" >"$BASE/.stamp-$1"; }

# ---------------------------------------------------------------- downloads (shared)
DEBK="$BASE/debs/kernel" DEBU="$BASE/debs/user"
mkdir -p "$DEBK" "$DEBU/partial" "$BASE/apt-state"
if ! stamp_ok dl-kernel "$KIMG_VER"; then
	log "downloading kernel, headers, kbuild and source packages ($KIMG_VER)"
	( cd "$DEBK" && timeout "$T" apt-get "${APT_OPTS[@]}" download "$KIMG_PKG=$KIMG_VER" "$HDR_PKG=$KIMG_VER" \
		"$HDRC_PKG=$KIMG_VER" "$KBUILD_PKG=$KIMG_VER" "$SRC_PKG=$KIMG_VER" ) >"$BASE/dl-kernel.log" 2>&1 \
		|| { tail -5 "$BASE/dl-kernel.log" >&2; unreachable "apt-get download of the kernel packages failed"; }
	stamp_set dl-kernel "$KIMG_VER"
fi
if ! stamp_ok dl-user "${USER_PKGS[*]}"; then
	log "downloading the guest userspace closure: ${USER_PKGS[*]}"
	: >"$BASE/apt-state/status"
	timeout "$T" apt-get "${APT_OPTS[@]}" -o Dir::State::status="$BASE/apt-state/status" \
		-o Dir::Cache::archives="$DEBU" -o Debug::NoLocking=1 -o APT::Install-Recommends=false \
		--download-only -y install "${USER_PKGS[@]}" >"$BASE/dl-user.log" 2>&1 \
		|| { tail -5 "$BASE/dl-user.log" >&2; unreachable "apt-get download of the guest userspace failed"; }
	stamp_set dl-user "${USER_PKGS[*]}"
fi

# ---------------------------------------------------------------- unpack (shared)
KROOT="$BASE/kernel-root" HROOT="$BASE/kbuild-root" SRC="$BASE/src" STAGE="$BASE/stage"
if ! stamp_ok unpack-kernel "$KIMG_VER"; then
	log "unpacking kernel image and headers"
	rm -rf "$KROOT" "$HROOT"
	timeout "$T" dpkg -x "$DEBK/${KIMG_PKG}_"*.deb "$KROOT"
	for p in "$HDR_PKG" "$HDRC_PKG" "$KBUILD_PKG"; do timeout "$T" dpkg -x "$DEBK/${p}_"*.deb "$HROOT"; done
	# the arch headers Makefile includes the -common one by absolute path: point it at our copy
	sed -i "s#^include /usr/src/#include $HROOT/usr/src/#" "$HROOT/usr/src/$HDR_PKG/Makefile"
	stamp_set unpack-kernel "$KIMG_VER"
fi
if ! stamp_ok unpack-src "$KIMG_VER"; then
	log "extracting drivers/infiniband/sw/siw from $SRC_PKG"
	rm -rf "$SRC"; mkdir -p "$SRC"
	timeout "$T" dpkg-deb --fsys-tarfile "$DEBK/${SRC_PKG}_"*.deb | tar -xO "./usr/src/$SRC_PKG.tar.xz" \
		| timeout "$T" tar -xJ -C "$SRC" --strip-components=1 "$SRC_PKG/drivers/infiniband/sw/siw"
	stamp_set unpack-src "$KIMG_VER"
fi
if ! stamp_ok unpack-user "${USER_PKGS[*]}"; then
	log "unpacking $(ls "$DEBU"/*.deb | wc -l) userspace packages"
	rm -rf "$STAGE"; mkdir -p "$STAGE"
	for d in "$DEBU"/*.deb; do timeout "$T" dpkg -x "$d" "$STAGE"; done
	stamp_set unpack-user "${USER_PKGS[*]}"
fi

# ---------------------------------------------------------------- ksmbd with SMB Direct (shared)
# Debian builds ksmbd without CONFIG_SMB_SERVER_SMBDIRECT. Rebuild fs/smb/server out of tree with
# it, named ksmbd_smbdirect.ko so the stock ksmbd.ko stays loadable beside it (docs/smbdirect.md):
# linux-kbuild ships no asn1_compiler, so it is built from the source package and the two SPNEGO
# parsers are generated beforehand. Independent of the siw variant, so built once per kernel.
KSMBD_DIR="$BASE/ksmbd"
# Two fixes to Debian's 6.1.192 ksmbd, each applied only where its anchor is found:
# - it took the 2024 IPC hardening that rejects a share-config response without payload_sz (every
#   disk share then fails TREE_CONNECT with STATUS_BAD_NETWORK_NAME), but Debian 12 ships
#   ksmbd-tools 3.4.7, which fills payload_sz only from 3.5.2 on: derive it from the netlink
#   attribute length, which is what 3.5.2 sends;
# - its smb2_open calls opinfo_put() on a NULL opinfo when a CREATE gets no oplock or lease (a
#   directory opened for a listing), which oopses the guest; upstream's opinfo_put tolerates NULL.
KSMBD_REV="$KIMG_VER+payload_sz+opinfo_put"
if [ "$BUILD_KSMBD" = 1 ] && ! stamp_ok ksmbd "$KSMBD_REV"; then
	log "building ksmbd_smbdirect.ko from $SRC_PKG"
	rm -rf "$KSMBD_DIR"; mkdir -p "$KSMBD_DIR/src" "$KSMBD_DIR/fs/smb"
	timeout "$T" dpkg-deb --fsys-tarfile "$DEBK/${SRC_PKG}_"*.deb | tar -xO "./usr/src/$SRC_PKG.tar.xz" \
		| timeout "$T" tar -xJ -C "$KSMBD_DIR/src" --strip-components=1 --wildcards "$SRC_PKG/fs/smb" \
			"$SRC_PKG/fs/internal.h" "$SRC_PKG/scripts/asn1_compiler.c" "$SRC_PKG/include/linux/asn1*"
	ksrc="$KSMBD_DIR/src"
	cp -r "$ksrc/fs/smb/server" "$ksrc/fs/smb/common" "$KSMBD_DIR/fs/smb/"
	cp "$ksrc/fs/internal.h" "$KSMBD_DIR/fs/"
	gcc-12 -O2 -I"$ksrc/include" -o "$KSMBD_DIR/asn1_compiler" "$ksrc/scripts/asn1_compiler.c" \
		>"$KSMBD_DIR/build.log" 2>&1 || { tail -20 "$KSMBD_DIR/build.log" >&2; die "asn1_compiler build failed"; }
	sm="$KSMBD_DIR/fs/smb/server"
	for a in ksmbd_spnego_negtokeninit ksmbd_spnego_negtokentarg; do
		"$KSMBD_DIR/asn1_compiler" "$sm/$a.asn1" "$sm/$a.asn1.c" "$sm/$a.asn1.h"
	done
	sed -i -e 's#^\$(obj)/ksmbd_spnego.*##' \
		-e 's#^obj-\$(CONFIG_SMB_SERVER) += ksmbd\.o#obj-m += ksmbd_smbdirect.o#' \
		-e 's#^ksmbd-y :=#ksmbd_smbdirect-y :=#' \
		-e 's#^ksmbd-\$(CONFIG_SMB_SERVER_SMBDIRECT) += transport_rdma\.o#ksmbd_smbdirect-y += transport_rdma.o#' "$sm/Makefile"
	grep -q 'ksmbd_smbdirect-y += transport_rdma.o' "$sm/Makefile" || die "unexpected ksmbd Makefile layout"
	anchor='if (entry->msg_sz < sizeof(struct ksmbd_share_config_response))'
	if grep -qF "$anchor" "$sm/transport_ipc.c" && grep -qF 'resp->payload_sz <= resp->veto_list_sz' "$sm/transport_ipc.c"; then
		printf '\t\tif (!resp->payload_sz)\n\t\t\tresp->payload_sz = entry->msg_sz - sizeof(*resp);\n' >"$KSMBD_DIR/payload_sz.c"
		sed -i -e "/${anchor//[()]/.}/{n;r $KSMBD_DIR/payload_sz.c" -e '}' "$sm/transport_ipc.c"
		grep -qF 'resp->payload_sz = entry->msg_sz - sizeof(*resp);' "$sm/transport_ipc.c" || die "payload_sz patch did not apply"
	fi
	if ! sed -n '/^void opinfo_put(/,/^}/p' "$sm/oplock.c" | grep '!opinfo' >/dev/null; then
		printf '\tif (!opinfo)\n\t\treturn;\n' >"$KSMBD_DIR/opinfo_put.c"
		sed -i -e "/^void opinfo_put(struct oplock_info \*opinfo)\$/{n;r $KSMBD_DIR/opinfo_put.c" -e '}' "$sm/oplock.c"
		sed -n '/^void opinfo_put(/,/^}/p' "$sm/oplock.c" | grep '!opinfo' >/dev/null || die "opinfo_put patch did not apply"
	fi
	timeout "$T" make -C "$HROOT/usr/src/$HDR_PKG" M="$sm" CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y \
		KCFLAGS="-DCONFIG_SMB_SERVER_SMBDIRECT=1" -j"$(nproc)" modules >>"$KSMBD_DIR/build.log" 2>&1 \
		|| { tail -30 "$KSMBD_DIR/build.log" >&2; die "ksmbd build failed (log: $KSMBD_DIR/build.log)"; }
	strip --strip-debug "$sm/ksmbd_smbdirect.ko"
	rm -rf "$ksrc"
	stamp_set ksmbd "$KSMBD_REV"
fi

# ---------------------------------------------------------------- per-image work area
TMPI="$CACHE/img/$KEY.tmp"
rm -rf "$TMPI"; mkdir -p "$TMPI"
trap 'rm -rf "$TMPI"' EXIT

KHDR="$HROOT/usr/src/$HDR_PKG"
MB="$TMPI/siw"
log "building siw.ko ($SIW_OPTS)"
cp -r "$SRC/drivers/infiniband/sw/siw" "$MB"
m="$MB/siw_main.c"
edit() { # edit FROM TO: a knob of siw_main.c; fail loudly when the source no longer matches
	grep -q "^$1" "$m" || die "siw_main.c has no line '$1' (new kernel source?)"
	sed -i "s/^$1/$2/" "$m"
}
[ "$SIW_CRC" = 1 ] && edit 'const bool mpa_crc_required;' 'const bool mpa_crc_required = true;'
[ "$SIW_P2P" = 1 ] && edit 'const bool peer_to_peer;' 'const bool peer_to_peer = true;'
[ "$SIW_MPA" = 1 ] && edit 'u_char mpa_version = MPA_REVISION_2;' 'u_char mpa_version = MPA_REVISION_1;'
timeout "$T" make -C "$KHDR" M="$MB" CONFIG_RDMA_SIW=m -j"$(nproc)" modules >"$TMPI/siw-build.log" 2>&1 \
	|| { tail -30 "$TMPI/siw-build.log" >&2; die "siw build failed"; }
strip --strip-debug "$MB/siw.ko"

ROOT="$TMPI/root"
log "assembling the initramfs"
mkdir -p "$ROOT"/usr/{bin,sbin,lib/x86_64-linux-gnu,lib64}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$ROOT/$d"; done
mkdir -p "$ROOT"/{dev,proc,sys,tmp,run,root,etc,mnt/host,var/tmp}
chmod 1777 "$ROOT/tmp" "$ROOT/var/tmp"

LDSO="$STAGE/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
LIBPATH="$STAGE/lib/x86_64-linux-gnu:$STAGE/usr/lib/x86_64-linux-gnu:$STAGE/usr/lib/x86_64-linux-gnu/libibverbs"
declare -A SEEN=()
put() { # put REL: copy one file of the staging tree (dereferenced)
	[ -n "${SEEN[$1]:-}" ] && return 0
	SEEN[$1]=1
	mkdir -p "$(dirname "$ROOT/$1")"
	cp -L "$STAGE/$1" "$ROOT/$1"
}
put_elf() { # put_elf REL: an ELF file and, recursively, the libraries the staging tree resolves for it
	local rel=$1 line lib
	put "$rel"
	LC_ALL=C readelf -d "$STAGE/$rel" 2>/dev/null | grep NEEDED >/dev/null || return 0
	while read -r line; do
		case "$line" in
		*"=> not found"*) die "$rel: unresolved library: $line" ;;
		*"=> "*)
			lib=$(echo "$line" | sed -E 's/.*=> (.*) \(0x.*/\1/')
			case "$lib" in "$STAGE"/*) ;; *) die "$rel: $lib resolved outside the staging tree" ;; esac
			lib=${lib#"$STAGE"/}
			[ -n "${SEEN[$lib]:-}" ] || put_elf "$lib" ;;
		esac
	done < <(timeout 60 "$LDSO" --library-path "$LIBPATH" --list "$STAGE/$rel")
}
put_elf lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$ROOT/usr/lib64/ld-linux-x86-64.so.2"
ROOT_PKGS=(kmod bash ibverbs-utils rdmacm-utils iproute2 tcpdump strace)
[ "$BUILD_KSMBD" = 1 ] && ROOT_PKGS+=(ksmbd-tools)
for p in "${ROOT_PKGS[@]}"; do
	deb=$(ls "$DEBU/${p}_"*.deb)
	while read -r rel; do
		rel=${rel#./}
		if [ -L "$STAGE/$rel" ]; then
			mkdir -p "$(dirname "$ROOT/$rel")"; cp -P "$STAGE/$rel" "$ROOT/$rel"
			t=$(readlink "$STAGE/$rel")
			case "$t" in /*) t=${t#/} ;; *) t=$(realpath -m --relative-to="$STAGE" "$STAGE/$(dirname "$rel")/$t") ;; esac
			if [ -f "$STAGE/$t" ] && [ ! -L "$STAGE/$t" ] && [ ! -e "$ROOT/$t" ]; then
				if head -c4 "$STAGE/$t" | grep ELF >/dev/null; then put_elf "$t"; else put "$t"; fi
			fi
		elif [ -f "$STAGE/$rel" ]; then
			if head -c4 "$STAGE/$rel" | grep ELF >/dev/null; then put_elf "$rel"; else put "$rel"; fi
		fi
	done < <(dpkg-deb -c "$deb" | awk '{print $6}' | grep -E '^\./(usr/)?s?bin/[^/]+$')
done
# ksmbd-tools converts passwords and names to UTF-16LE through glib's iconv, which needs glibc's
# gconv modules (without them ksmbd.adduser falls back to another encoding)
if [ "$BUILD_KSMBD" = 1 ]; then
	g=usr/lib/x86_64-linux-gnu/gconv
	mkdir -p "$ROOT/$g"
	cp -r "$STAGE/$g/gconv-modules" "$STAGE/$g/gconv-modules.d" "$ROOT/$g/"
	for m in UTF-16 UTF-32 UTF-7 UNICODE; do put_elf "$g/$m.so"; done
fi
# verbs provider (issue 16): perftest's tools (they run over rxe and siw through rdma_cm)
for f in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_send_lat; do put_elf "usr/bin/$f"; done
# verbs providers are dlopen()ed by libibverbs: all of them, with their .driver files
for f in "$STAGE"/usr/lib/x86_64-linux-gnu/libibverbs/*.so; do put_elf "${f#"$STAGE"/}"; done
mkdir -p "$ROOT/etc/libibverbs.d"; cp "$STAGE"/etc/libibverbs.d/*.driver "$ROOT/etc/libibverbs.d/"
cp -r "$STAGE/etc/iproute2" "$ROOT/etc/"
# glibc dlopen()s libgcc_s for pthread_exit/pthread_cancel (rping aborts without it)
put_elf lib/x86_64-linux-gnu/libgcc_s.so.1

cp "$STAGE/bin/busybox" "$ROOT/usr/bin/busybox"
while read -r ap; do
	n=${ap##*/}
	[ -e "$ROOT/usr/bin/$n" ] || [ -e "$ROOT/usr/sbin/$n" ] || [ -L "$ROOT/usr/bin/$n" ] || [ -L "$ROOT/usr/sbin/$n" ] \
		|| ln -s /usr/bin/busybox "$ROOT/usr/bin/$n"
done < <("$STAGE/bin/busybox" --list-full)
ln -sf busybox "$ROOT/usr/bin/sh"

printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOT/etc/group"
printf '127.0.0.1\tlocalhost ndkvm\n' >"$ROOT/etc/hosts"
printf 'passwd: files\ngroup: files\nhosts: files\n' >"$ROOT/etc/nsswitch.conf"
echo ndkvm >"$ROOT/etc/hostname"
# the kernel opens /dev/console before /init; without root the init script still works because it
# mounts devtmpfs and reopens the console itself
[ "$(id -u)" = 0 ] && mknod -m 600 "$ROOT/dev/console" c 5 1 && mknod -m 666 "$ROOT/dev/null" c 1 3
install -m 755 "$HERE/guest-init.sh" "$ROOT/init"
install -m 755 "$HERE/guest-setup.sh" "$ROOT/usr/sbin/ndkvm-setup"

log "selecting kernel modules"
KM="$KROOT/lib/modules/$KVER"
mkdir -p "$KM/updates"
cp "$MB/siw.ko" "$KM/updates/siw.ko"
[ "$BUILD_KSMBD" = 1 ] && cp "$KSMBD_DIR/fs/smb/server/ksmbd_smbdirect.ko" "$KM/updates/ksmbd_smbdirect.ko"
timeout "$T" depmod -b "$KROOT" "$KVER"
WANT_MODS=(siw ib_core ib_uverbs rdma_cm iw_cm rdma_ucm crypto-crc32c crc32c_generic crc32c_intel libcrc32c
	virtio_pci 9pnet_virtio 9p virtio_rng dummy)
# ksmbd loads its digests and ciphers by name (soft dependencies modprobe does not follow):
# without cmac and sha512 it can neither sign nor keep the 3.1.1 preauth hash
[ "$BUILD_KSMBD" = 1 ] && WANT_MODS+=(ksmbd_smbdirect cmac sha512_generic md4 ecb ccm gcm ctr ghash-generic nls_utf8)
# the server-drop cell aborts ksmbd's end of a connection with `ss -K` (sock_diag destroy)
[ "$BUILD_KSMBD" = 1 ] && WANT_MODS+=(inet_diag tcp_diag)
# verbs provider (issue 16): Soft-RoCE (Debian's kernel ships rdma_rxe) beside siw
WANT_MODS+=(rdma_rxe crypto-crc32 crc32_generic)   # rxe computes its ICRC with the kernel's crc32 shash
# the first-FPDU cell of guest/matrix.sh: two network namespaces joined by a veth pair (MSS 1460)
WANT_MODS+=(veth)
: >"$TMPI/modules.list"
for mod in "${WANT_MODS[@]}"; do
	timeout 60 modprobe -d "$KROOT" -S "$KVER" --show-depends "$mod" >>"$TMPI/modules.list" 2>>"$TMPI/modules.err" \
		|| die "modprobe --show-depends $mod failed: $(tail -1 "$TMPI/modules.err")"
done
mkdir -p "$ROOT/lib/modules/$KVER"
awk '$1=="insmod"{print $2}' "$TMPI/modules.list" | sort -u | while read -r path; do
	rel=${path#"$KROOT"/}
	mkdir -p "$(dirname "$ROOT/$rel")"
	case "$path" in
	*.ko) cp "$path" "$ROOT/$rel" ;;
	*.ko.xz) xz -dc "$path" >"$ROOT/${rel%.xz}" ;;
	*.ko.zst) zstd -qdc "$path" >"$ROOT/${rel%.zst}" ;;
	*.ko.gz) gzip -dc "$path" >"$ROOT/${rel%.gz}" ;;
	esac
done
cp "$KM"/modules.builtin "$KM"/modules.builtin.modinfo "$KM"/modules.order "$ROOT/lib/modules/$KVER/" 2>/dev/null || true
rm -f "$KM/updates/siw.ko" "$KM/updates/ksmbd_smbdirect.ko"
timeout "$T" depmod -b "$ROOT" "$KVER"
nmods=$(find "$ROOT/lib/modules" -name '*.ko' | wc -l)

log "packing the initramfs"
mkdir -p "$TMPI/out"
( cd "$ROOT" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --owner=0:0 --quiet ) \
	| timeout "$T" zstd -q -12 -T0 >"$TMPI/out/initramfs.img"
cp "$KROOT/boot/vmlinuz-$KVER" "$TMPI/out/vmlinuz"
{
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) key $KEY"
	echo "kernel: $KIMG_PKG $KIMG_VER (KVER $KVER)"
	echo "siw: out of tree from $SRC_PKG $KIMG_VER against $HDR_PKG ($SIW_OPTS)"
	echo "initramfs: $(du -h "$TMPI/out/initramfs.img" | cut -f1) compressed, $nmods modules"
	echo "userspace: ${USER_PKGS[*]}"
} >"$TMPI/out/build-info.txt"
rm -rf "$IMG"
mv "$TMPI/out" "$IMG"
# keep the 8 most recently used images (4 variants, twice over); older keys are stale inputs
ls -dt "$CACHE"/img/*/ 2>/dev/null | tail -n +9 | while read -r old; do rm -rf "$old"; done
log "image ready in $(( $(date +%s) - T0 ))s: $IMG"
echo "$IMG"
