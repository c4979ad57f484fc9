#!/bin/sh
# ndkvm-setup (installed in the guest as /usr/sbin/ndkvm-setup): load siw and create siw0 on the
# dummy interface siwd0 carrying $SIW_IP/32 (default 198.18.0.1, RFC 2544 range, never routed).
# siw cannot serve rdma_cm on lo with Debian's 6.1 kernel; with both ends on a local address the
# TCP streams still travel over lo, where tcpdump sees them. Idempotent.
SIW_IP=${SIW_IP:-198.18.0.1}
modprobe -a siw rdma_ucm ib_uverbs || exit 1
modprobe dummy numdummies=0 || exit 1
# no IPv6 link-local addresses: glibc's AI_ADDRCONFIG would otherwise map IPv4 names to ::ffff:...
echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
if ! ip link show siwd0 >/dev/null 2>&1; then
	ip link add siwd0 type dummy || exit 1
	echo 1 >/proc/sys/net/ipv6/conf/siwd0/disable_ipv6
	ip link set siwd0 up && ip addr add "$SIW_IP/32" dev siwd0 || exit 1
fi
rdma link show | grep -q '^link siw0/' || rdma link add siw0 type siw netdev siwd0 || exit 1
rdma link show
