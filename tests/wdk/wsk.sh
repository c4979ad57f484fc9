#!/usr/bin/env bash
# tests/wdk/wsk.sh - the kit's Winsock Kernel under ndkdrv, through two test drivers:
#   probe             wskprobe checks every answer (registration, control codes, the NDK
#                     extension's statuses, callbacks at DISPATCH_LEVEL); runs in a private network
#                     namespace with lo up and a veth pair left down (an interface without NDK),
#                     or on the host's lo without that one check where namespaces are unavailable
#   leak | dispatch-open | wait-in-callback | close-open
#                     wskmisuse breaks one rule; ndkdrv must exit non-zero (not time out) and name
#                     the finding
# Usage: wsk.sh CASE NDKDRV WSKPROBE WSKMISUSE. Exit: 0 pass, 1 fail, 77 skip.
set -uo pipefail
case=$1 ndkdrv=$2 probe=$3 misuse=$4
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$ndkdrv" ] && [ -f "$probe" ] && [ -f "$misuse" ] || fail "missing $ndkdrv, $probe or $misuse"
export NDK_PROVIDERS=${NDK_PROVIDERS:-iwarp}
log=$(mktemp /tmp/ndk-wdkwsk.XXXXXX)
holder=""
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	wait 2>/dev/null
	rm -f "$log"
}
trap cleanup EXIT
lo=$(cat /sys/class/net/lo/ifindex) || skip "no lo interface"

# expect_finding MODE RULE TEXT: the driver runs, ndkdrv fails, the output names RULE and TEXT.
expect_finding() {
	timeout 120 "$ndkdrv" run "$misuse" --param IfIndex="$lo" --param Mode="$1" >"$log" 2>&1
	local rc=$?
	cat "$log"
	[ $rc != 0 ] && [ $rc != 124 ] || fail "ndkdrv exit status $rc; expected a verifier failure"
	grep -q -- "$2" "$log" || fail "no $2 finding in ndkdrv's output"
	grep -q -- "$3" "$log" || fail "the finding does not say '$3'"
	echo "PASS: $case reported ($2)"
}

case $case in
probe)
	run=(env) args=(--param IfIndex="$lo")
	if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v nsenter >/dev/null; then
		unshare -n sleep 150 &
		holder=$!
		ns=/proc/$holder/ns/net
		for _ in $(seq 100); do   # until the holder is in its own namespace (a loaded machine is slow)
			[ "$(readlink $ns 2>/dev/null)" != "$(readlink /proc/self/ns/net)" ] && break
			sleep 0.05
		done
		if [ "$(readlink $ns)" != "$(readlink /proc/self/ns/net)" ] &&
			nsenter --net=$ns ip link set lo up 2>/dev/null &&
			nsenter --net=$ns ip link add wdkoff0 type veth peer name wdkoff1 2>/dev/null; then
			off=$(nsenter --net=$ns ip -o link show dev wdkoff0 | cut -d: -f1)
			nslo=$(nsenter --net=$ns ip -o link show dev lo | cut -d: -f1)
			run=(nsenter --net=$ns) args=(--param IfIndex="$nslo" --param NoNdkIfIndex="$off")
		fi
	fi
	[ "${run[0]}" = env ] && echo "note: no private namespace here; the interface-without-NDK check is skipped"
	"${run[@]}" timeout 120 "$ndkdrv" run "$probe" "${args[@]}" >"$log" 2>&1
	rc=$?
	cat "$log"
	[ $rc = 0 ] || fail "ndkdrv exit status $rc"
	grep -q "wskprobe: PASS" "$log" || fail "wskprobe did not report PASS"
	grep -q "wskprobe: FAIL" "$log" && fail "a check failed"
	echo "PASS: probe"
	;;
leak) expect_finding 1 NDK_OBJECT_LEFT_OPEN "cq#1" ;;
dispatch-open) expect_finding 2 WSK_IRQL_NOT_PASSIVE "WskOpenNdkAdapter" ;;
wait-in-callback) expect_finding 3 WAIT_AT_DISPATCH "KeWaitForSingleObject" ;;
close-open) expect_finding 4 NDK_OBJECT_LEFT_OPEN "cq#1; the adapter is left open" ;;
*) fail "unknown case $case" ;;
esac
