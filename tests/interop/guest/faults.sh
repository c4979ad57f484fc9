# tests/interop/guest/faults.sh - wire faults (iwarp.fault, ndk-iwarp(7) WIRE FAULTS) against Linux
# siw, sourced by guest/matrix.sh in the default and crc boots (cell group "fault"). Each cell runs
# ndkping --rping (10 pings of 26 bytes) against siw's rping with one fault rule on our side,
# NDK_FILTERS=trace writing results/<cell>.trace, and judges:
#   our side   ends by itself (no hang: not the cell's timeout, not the harness's stall stop)
#              with exit status 1 and its line "connection lost at ping N: REASON; disconnect
#              events D; requests posted P, completed C (twice T); closed", where D is what the
#              README says (1 where the peer went first, 0 where our tool went first), C = P,
#              T = 0; its trace agrees: no more disconnect events, no request completed twice
#              or beyond those posted, every object of the session closed
#   siw's side its rping exits by itself (not killed after the client ended)
#   the wire   check-pcaps.sh on the host looks for the fault in the capture: the RST, our
#              TERMINATE with the chosen layer/type/code, the bad CRC and siw's TERMINATE
# Inputs: what matrix.sh defines (cell, record, why, IP, PORT, RES, VARIANT, have_ndkping).

FAULT_PINGS=10
FAULT_SIZE=26
# the rule of each cell: our client's or our server's FPDUs, counted from 1 (RTR excluded).
# Our rping client sends FPDU 1 = the source advertisement, 2 = the Read Response to siw's RDMA
# Read, 3 = the sink advertisement, 4 = ping 1's advertisement; our rping server sends 1 = its
# RDMA Read Request, 2 = the go-ahead Send, 3 = the RDMA Write back. A Read Response's data
# starts at byte 16 of its FPDU (MPA length 2, DDP and RDMAP control 2, STag 4, offset 8).
fault_rule() {
	case $1 in
	fault-reset-ours2siw) echo "reset:fpdu=4" ;;           # after ping 0, before ping 1's Send
	fault-reset-siw2ours) echo "reset:fpdu=3" ;;           # before the Write back of ping 0
	fault-terminate-ours2siw) echo "terminate:fpdu=3,layer=1,type=2,code=1" ;;   # DDP, untagged, invalid QN
	fault-terminate-siw2ours) echo "terminate:fpdu=2,layer=0,type=2,code=1" ;;   # RDMAP, remote operation, unexpected opcode
	fault-corrupt-crc-ours2siw|fault-corrupt-payload-ours2siw) echo "corrupt:fpdu=2,offset=20" ;;   # data byte 4
	fault-corrupt-stag-ours2siw) echo "corrupt:fpdu=2,offset=6" ;;   # a byte of the Read Response's STag
	fault-corrupt-crc-siw2ours) echo "corrupt:fpdu=1,offset=20" ;;   # a header byte of our RDMA Read Request
	esac
}
# fault_ours_lines FILE: ndkping's summary or error lines
fault_ours_lines() { grep -ahE '^ndkping' "$1" "$1.err" 2>/dev/null | head -3 | cut -c1-220 | tr '\n' ' '; }

fault_cell() {
	local name=$1 dir=$2 want_disc=$3 rule oursf ourrc siwf siwrc trace env scmd ccmd problems=() notes=()
	local ndisc=0 twice=0 nposts=0 ncqes=0 nnew=0 nend=0 summary odisc="" posted="" completed="" ctwice=""
	rule=$(fault_rule "$name")
	PORT=$((PORT + 1))
	trace=$RES/$name.trace
	rm -f "$trace"
	env="NDK_IWARP_FAULT='$rule' NDK_IWARP_FAULT_SEED=38 NDK_FILTERS=trace NDK_TRACE_PATH=$trace"
	if [ "$dir" = ours2siw ]; then
		scmd="rping -s -v -a $IP -p $PORT -S $FAULT_SIZE"
		ccmd="$env ndkping --rping -c -a $IP -p $PORT -C $FAULT_PINGS -S $FAULT_SIZE -V"
	else
		scmd="$env ndkping --rping -s -a $IP -p $PORT -S $FAULT_SIZE"
		ccmd="rping -c -v -V -a $IP -p $PORT -C $FAULT_PINGS -S $FAULT_SIZE"
	fi
	echo "## fault rule on our side: $rule" >"$RES/$name.rule"
	cell "$name" 60 "" $PORT "$scmd" "$ccmd"
	cat "$RES/$name.rule" >>"$RES/$name.log"
	if [ "$dir" = ours2siw ]; then oursf=/tmp/cell.client ourrc=$CELL_CRC siwf=/tmp/cell.server siwrc=$CELL_SRC
	else oursf=/tmp/cell.server ourrc=$CELL_SRC siwf=/tmp/cell.client siwrc=$CELL_CRC; fi
	# our side: ended by itself, failing, with its reason
	case $ourrc in
	124) problems+=("our ndkping hung (stopped by the cell's timeout or the stall watchdog)") ;;
	143) problems+=("our ndkping did not end: killed by the harness after siw's rping ended") ;;
	1) ;;
	*) problems+=("our ndkping exited $ourrc, not 1") ;;
	esac
	grep -q 'no progress for' "$RES/$name.log" && problems+=("the harness stopped the cell: no progress")
	[ -n "$(fault_ours_lines "$oursf")" ] || problems+=("ndkping printed no line saying how it ended")
	# the fault fired: the provider logs it, with the connection's addresses
	grep -aqE 'wire fault: CONN#[0-9]+ .* -> .*: ' "$oursf.err" || problems+=("no 'wire fault: CONN#' line on our stderr: the rule did not fire")
	if [ -s "$trace" ]; then
		ndisc=$(grep -ac 'ev=cb .*fn=NdkDisconnectEventCallback' "$trace")
		# a request completed twice: the same (cq, wr) in two completion records
		twice=$(grep -a 'ev=cqe ' "$trace" | grep -o ' qp=[^ ]* .* wr=[0-9]*' | sed 's/ op=[^ ]*//; s/ status=[^ ]*//; s/ ctx=[^ ]*//; s/ bytes=[^ ]*//' \
			| sort | uniq -d | wc -l)
		nposts=$(grep -a 'ev=call ' "$trace" | grep -a ' wr=[0-9]' | grep -ac 'status=STATUS_SUCCESS')
		ncqes=$(grep -ac 'ev=cqe ' "$trace")
		# a server's listener and adapter serve the next session: only the session's objects
		# (connector, QP, CQ, PD, MR; a client's adapter too) must be closed
		local keep='^$'
		[ "$dir" = siw2ours ] && keep='obj=(listener|adapter)#'
		nnew=$(grep -a 'ev=new ' "$trace" | grep -acvE "$keep"); nend=$(grep -a 'ev=end ' "$trace" | grep -acvE "$keep")
		# ndkping exits at the first failed request, maybe before the disconnect event it would
		# get: without its own count, the trace can show fewer than expected, never more
		[ "$ndisc" -le "$want_disc" ] || problems+=("$ndisc disconnect events on our side, expected $want_disc")
		[ "$ncqes" -le "$nposts" ] || problems+=("more completions ($ncqes) than requests posted ($nposts)")
		[ "$twice" = 0 ] || problems+=("$twice requests completed twice (trace)")
	else
		problems+=("no trace of our side ($trace)")
	fi
	summary=$(grep -ahoE 'disconnect events [0-9]+; requests posted [0-9]+, completed [0-9]+ \(twice [0-9]+\); closed' "$oursf" | head -1)
	if [ -n "$summary" ]; then
		# (a here-string, not a process substitution: the guest has no /dev/fd)
		read -r odisc posted completed ctwice <<<"$(sed -E 's/disconnect events ([0-9]+); requests posted ([0-9]+), completed ([0-9]+) \(twice ([0-9]+)\).*/\1 \2 \3 \4/' <<<"$summary")"
		[ "${odisc:-}" = "$want_disc" ] && [ "${posted:-}" = "${completed:-}" ] && [ "${ctwice:-}" = 0 ] \
			|| problems+=("ndkping: $summary (expected $want_disc disconnect events)")
		# and the trace agrees: every object the trace saw created was closed
		[ "$nend" = "$nnew" ] || problems+=("trace: $nend of $nnew objects closed although ndkping says closed")
	else
		problems+=("ndkping printed no 'disconnect events D; requests posted P, completed C (twice T); closed' line")
	fi
	# siw's side: its rping ended by itself
	[ "$dir" = ours2siw ] && grep -q 'still running after the client ended: killed' "$RES/$name.log" \
		&& problems+=("siw's rping server did not end")
	[ "$siwrc" = 124 ] && problems+=("siw's rping hung")
	local detail="rule '$rule'; ours rc=$ourrc: $(fault_ours_lines "$oursf")| trace: disconnect events $ndisc, requests posted $nposts, completions polled $ncqes, twice $twice, objects closed $nend of $nnew | siw rping rc=$siwrc, $(grep -ac 'ping data: rdma-ping-' "$siwf") pings$( [ ${#notes[@]} = 0 ] || printf '; %s' "${notes[@]}")"
	if [ ${#problems[@]} = 0 ]; then
		record PASS "$name" "-" "$detail"
	else
		record FAIL "$name" "-" "$(IFS=';'; echo "${problems[*]}") -- $detail"
	fi
}

if have_ndkping; then
	case $VARIANT in
	default)
		fault_cell fault-reset-ours2siw ours2siw 1
		fault_cell fault-reset-siw2ours siw2ours 1
		fault_cell fault-terminate-ours2siw ours2siw 1
		fault_cell fault-terminate-siw2ours siw2ours 1
		# without CRC a flipped data byte is placed (inside the buffer siw's rping granted
		# itself for the Read), echoed back by its Write, and our -V finds it: our tool ends
		# first, so no disconnect event
		fault_cell fault-corrupt-payload-ours2siw ours2siw 0
		fault_cell fault-corrupt-stag-ours2siw ours2siw 1
		;;
	crc)
		fault_cell fault-corrupt-crc-ours2siw ours2siw 1
		fault_cell fault-corrupt-crc-siw2ours siw2ours 1
		;;
	esac
else
	record FAIL fault "-" "ndkping is not in the build"
fi
