#!/bin/sh
# /init of the interop guest (packed into the initramfs by build.sh).
# Kernel command line: ndkvm.script=REL  runs /mnt/host/REL with sh (cwd /mnt/host), writes its exit
# status to /mnt/host/.vm/rc, then powers off. Without it: an interactive shell on the console.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=${TERM:-linux}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
hostname ndkvm
ip link set lo up
SCRIPT=
for arg in $(cat /proc/cmdline); do
	case "$arg" in ndkvm.script=*) SCRIPT=${arg#ndkvm.script=} ;; esac
done
modprobe -a virtio_pci 9pnet_virtio 9p virtio_rng
mkdir -p /mnt/host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none hostshare /mnt/host \
	|| echo "ndkvm-init: WARNING: the 9p host share did not mount"
echo "NDKVM-READY uptime=$(cut -d' ' -f1 /proc/uptime)"
if [ -n "$SCRIPT" ]; then
	rc=127
	if [ -f "/mnt/host/$SCRIPT" ]; then
		( cd /mnt/host && sh "/mnt/host/$SCRIPT" )
		rc=$?
	else
		echo "ndkvm-init: no script /mnt/host/$SCRIPT"
	fi
	mkdir -p /mnt/host/.vm && echo "$rc" >/mnt/host/.vm/rc
	echo "NDKVM-SCRIPT-EXIT rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
else
	setsid cttyhack sh -l
fi
sync
umount /mnt/host 2>/dev/null
poweroff -f
