#!/usr/bin/env bash
# tests/interop/vm/boot.sh - boot an image built by build.sh, run one script inside, power off.
#
# Usage: boot.sh --image DIR --share DIR [--script REL] [--timeout S] [--accel auto|kvm|tcg]
#                [--mem MB] [--smp N]
#   --image DIR    folder with vmlinuz + initramfs.img (build.sh prints it)
#   --share DIR    host folder shared over 9p at /mnt/host in the guest
#   --script REL   script inside the share to run (path relative to it); without it an
#                  interactive console (Ctrl-a x quits)
#   --timeout S    the VM is killed after S seconds (default 900); exit status 124 then
# The guest has no NIC (-nic none). Exit status: the guest script's exit status; 124 on timeout;
# 125 when qemu failed or the guest never reported a status. Console log: <share>/.vm/console.log
set -euo pipefail

IMG= SHARE= SCRIPT= TMO=900 ACCEL=${INTEROP_ACCEL:-auto} MEM=1536 SMP=2
while [ $# -gt 0 ]; do
	case "$1" in
	--image) IMG=$2; shift 2 ;;
	--share) SHARE=$2; shift 2 ;;
	--script) SCRIPT=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	--accel) ACCEL=$2; shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--smp) SMP=$2; shift 2 ;;
	*) echo "boot.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -s "$IMG/vmlinuz" ] && [ -s "$IMG/initramfs.img" ] || { echo "boot.sh: no image in '$IMG'" >&2; exit 125; }
[ -d "$SHARE" ] || { echo "boot.sh: no share folder '$SHARE'" >&2; exit 125; }
SHARE=$(cd "$SHARE" && pwd)
mkdir -p "$SHARE/.vm"
LOG=$SHARE/.vm/console.log
rm -f "$SHARE/.vm/rc"

# /dev/kvm may be PVM (kvm_pvm): it cannot run a stock kernel in useful time, so TCG is used then
kvm_usable() {
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	[ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ] || return 1
	echo quit | timeout 20 qemu-system-x86_64 -accel kvm -M none -nodefaults -display none -monitor stdio >/dev/null 2>&1
}
if [ "$ACCEL" = auto ]; then
	if kvm_usable; then ACCEL=kvm; else ACCEL=tcg; fi
fi
case "$ACCEL" in
kvm) ACC=(-accel kvm -cpu host) ;;
tcg) ACC=(-accel tcg,thread=multi -cpu max) ;;
*) echo "boot.sh: bad --accel $ACCEL" >&2; exit 2 ;;
esac

APPEND="console=ttyS0,115200 panic=-1 oops=panic quiet"
if [ -n "$SCRIPT" ]; then
	APPEND+=" ndkvm.script=$SCRIPT"
	CON=(-chardev "stdio,id=con0,signal=off,logfile=$LOG" -serial chardev:con0 -monitor none)
	exec 0</dev/null
else
	CON=(-chardev "stdio,id=con0,mux=on,signal=off,logfile=$LOG" -serial chardev:con0 -mon chardev=con0,mode=readline)
fi

if [ -z "$SCRIPT" ]; then   # interactive: qemu owns the terminal
	exec qemu-system-x86_64 "${ACC[@]}" -M pc -smp "$SMP" -m "$MEM" -nographic -no-reboot "${CON[@]}" \
		-kernel "$IMG/vmlinuz" -initrd "$IMG/initramfs.img" -append "$APPEND" \
		-virtfs "local,path=$SHARE,mount_tag=hostshare,security_model=none,multidevs=remap,id=hostshare" -nic none
fi
QPID=
# qemu runs under timeout(1) as well, so it dies even when this shell is SIGKILLed (e.g. by
# ctest's own timeout); TERM is forwarded to qemu by timeout, which then exits
cleanup() { [ -n "$QPID" ] && kill -TERM "$QPID" 2>/dev/null; true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

: >"$LOG"
T0=$(date +%s.%N)
timeout -k 5 "$((TMO + 30))" qemu-system-x86_64 "${ACC[@]}" -M pc -smp "$SMP" -m "$MEM" -nographic -no-reboot "${CON[@]}" \
	-kernel "$IMG/vmlinuz" -initrd "$IMG/initramfs.img" -append "$APPEND" \
	-virtfs "local,path=$SHARE,mount_tag=hostshare,security_model=none,multidevs=remap,id=hostshare" \
	-nic none &
QPID=$!
# wait with a deadline; timeout(1) and qemu under it stay children of this shell for the traps
deadline=$(( $(date +%s) + TMO ))
timed_out=0
while kill -0 "$QPID" 2>/dev/null; do
	if [ "$(date +%s)" -ge "$deadline" ]; then
		# timeout(1) forwards TERM to qemu and follows up with KILL after 5 s (-k 5)
		timed_out=1; kill -TERM "$QPID" 2>/dev/null; break
	fi
	sleep 1
done
set +e; wait "$QPID"; qrc=$?; set -e
QPID=
T1=$(date +%s.%N)
READY=$(sed -n 's/.*NDKVM-READY uptime=\([0-9.]*\).*/\1/p' "$LOG" | head -1)
echo "boot.sh: accel=$ACCEL guest-uptime-at-ready=${READY:-?}s wall=$(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.1f", b-a}')s qemu_rc=$qrc" >&2
if [ "$timed_out" = 1 ]; then echo "boot.sh: TIMEOUT after ${TMO}s, VM killed" >&2; exit 124; fi
if [ -n "$SCRIPT" ]; then
	[ -s "$SHARE/.vm/rc" ] || { echo "boot.sh: the guest reported no exit status (qemu rc $qrc)" >&2; exit 125; }
	exit "$(cat "$SHARE/.vm/rc")"
fi
exit "$qrc"
