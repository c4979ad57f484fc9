#!/usr/bin/env bash
# tests/interop/check-pcaps.sh - decode every capture of an interop run with tshark.
# Usage: check-pcaps.sh OUT   (OUT = run.sh's results folder: OUT/<variant>/pcaps/<variant>-<cell>.pcap)
# Per capture one line "OK|variant|cell|detail" or "BAD|variant|cell|detail":
#   - the MPA Request and Reply decode as iwarp_mpa, the FPDUs as iwarp_ddp_rdmap;
#   - no malformed frames (the RPC-over-RDMA heuristic is switched off: it misreads Sends);
#   - when the Reply has C=1 every FPDU CRC is "Good CRC32"; the crc variant must negotiate it;
#   - ucmatose cells: our side's MPA frame ends with our private data, byte for byte;
#   - our-client cells: siw answering none of our FPDUs, without a FIN, is flagged (tests/interop/README.md, siw limitations).
set -uo pipefail
OUT=$1
TS=(timeout 300 tshark -n --disable-protocol rpcordma)
PDATA=openndk-interop   # what guest/matrix.sh gives ndkping --cmatose --pdata
PDATA_HEX=$(printf %s "$PDATA" | od -An -tx1 | tr -d ' \n')
# fault_check: the wire faults' cells (guest/faults.sh, fault-KIND-DIR): the fault as the
# capture shows it, from our port (the client's in ours2siw, the server's in siw2ours). Adds to
# line and bad.
fault_check() {
	local ours siw f n t
	case "$c" in *-ours2siw) ours=$cliport siw=$srvport ;; *) ours=$srvport siw=$cliport ;; esac
	[ -n "$ours" ] || { bad+=("fault cell without an MPA Request: ports unknown"); return; }
	f="tcp.srcport == $ours"
	# Terminates per sender: ours decoded as RFC 5040 §4.8 lays it out (siw's are not: README)
	t=$("${TS[@]}" -r "$p" -Y "iwarp_rdma.opcode == 0x07" -T fields -E separator='|' -e tcp.srcport -e iwarp_rdma.term_layer \
		-e iwarp_rdma.term_etype_rdma -e iwarp_rdma.term_etype_ddp -e iwarp_rdma.term_etype_llp -e iwarp_rdma.term_errcode_rdma \
		-e iwarp_rdma.term_errcode_ddp_tagged -e iwarp_rdma.term_errcode_ddp_untagged -e iwarp_rdma.term_errcode_llp 2>/dev/null |
		while IFS='|' read -r sp l e1 e2 e3 c1 c2 c3 c4; do
			e="$e1$e2$e3" k="$c1$c2$c3$c4"
			echo "$sp/$((${l:-0}))/$((${e:-0}))/$((${k:-0}))"
		done | sort | uniq -c | awk '{printf "%s%sx %s", s, $1, $2; s=", "}')
	line+="; fault: Terminates [${t:-none}] (count port/layer/type/code)"
	case "$c" in
	fault-reset-*)
		n=$("${TS[@]}" -r "$p" -Y "tcp.flags.reset == 1 and $f" 2>/dev/null | wc -l)
		line+=", RSTs from our port $ours: $n"
		[ "$n" -ge 1 ] || bad+=("no RST from our port $ours") ;;
	fault-terminate-*)
		# the rule's layer/type/code, from the cell's name: guest/faults.sh fault_rule
		local want; case "$c" in *-ours2siw) want="$ours/1/2/1" ;; *) want="$ours/0/2/1" ;; esac
		[[ "$t" == *"x $want"* ]] || bad+=("no Terminate $want (port/layer/type/code) from our side") ;;
	fault-corrupt-crc-*|fault-corrupt-stag-*)
		[[ "$t" == *"x $siw/"* ]] || bad+=("siw (port $siw) sent no Terminate") ;;
	fault-corrupt-payload-*)
		[[ "$t" == *"x $siw/"* ]] && bad+=("siw sent a Terminate for a payload byte without CRC") ;;
	esac
}
rc=0
for p in "$OUT"/*/pcaps/*.pcap; do
	[ -e "$p" ] || { echo "no captures under $OUT"; exit 1; }
	v=$(basename "$(dirname "$(dirname "$p")")")
	b=$(basename "$p" .pcap); c=${b#"$v"-}
	bad=()
	# one pass over every iWARP frame: ports, MPA Request/Reply fields, RDMAP opcodes
	"${TS[@]}" -r "$p" -Y iwarp_mpa -T fields -E separator='|' -e tcp.srcport -e tcp.dstport \
		-e iwarp_mpa.key.req -e iwarp_mpa.key.rep -e iwarp_mpa.rev -e iwarp_mpa.res -e iwarp_mpa.crc_flag \
		-e iwarp_mpa.rej_flag -e iwarp_mpa.pdlength -e iwarp_mpa.privatedata -e iwarp_rdma.opcode \
		>/tmp/check-pcaps.$$ 2>/dev/null
	nreq=0 nrep=0 crc_on=0 desc="" srvport="" cliport="" ddp=0 from_srv=0
	declare -A OPS=()
	while IFS='|' read -r src dst kreq krep rev res cflag rej pdl pd op; do
		if [ -n "$kreq" ] || [ -n "$krep" ]; then
			if [ -n "$kreq" ]; then kind=Req; nreq=$((nreq + 1)); srvport=$dst; cliport=$src; else kind=Rep; nrep=$((nrep + 1)); fi
			case "$cflag" in 1|True|true) cf=1 ;; *) cf=0 ;; esac
			[ "$kind" = Rep ] && [ "$cf" = 1 ] && crc_on=1
			enh=0; [ "$rev" = 2 ] && [ $(( ${res:-0} & 0x10 )) != 0 ] && enh=4
			ulp=$(( ${pdl:-0} - enh )); [ "$ulp" -lt 0 ] && ulp=0
			desc+="$kind(port $src rev $rev C=$cf R=${rej:-?} pd ${pdl:-0}B${pd:+ ${pd:0:24}}) "
			# ucmatose cells: our side sends ULP private data (client: Request; server: Reply)
			case "$c:$kind" in
			ucmatose-ours2siw-*:Req|ucmatose-siw2ours-*:Rep)
				if [[ "${pd:$((enh * 2))}" == "$PDATA_HEX"* ]]; then
					desc+="[our private data '$PDATA' found byte for byte after ${enh} B of MPA v2 IRD/ORD] "
				else
					bad+=("our MPA $kind does not carry the private data '$PDATA' (ULP part $ulp B)")
				fi ;;
			esac
		elif [ -n "$op" ]; then
			ddp=$((ddp + 1))
			[ "$src" = "$srvport" ] && from_srv=$((from_srv + 1))
			for o in ${op//,/ }; do OPS[$o]=$(( ${OPS[$o]:-0} + 1 )); done
		fi
	done </tmp/check-pcaps.$$
	rm -f /tmp/check-pcaps.$$
	from_cli=$((ddp - from_srv))
	ops=""; for o in $(printf '%s\n' "${!OPS[@]}" | sort); do ops+="${ops:+ }${OPS[$o]}x$o"; done
	unset OPS
	mal=$("${TS[@]}" -r "$p" -Y _ws.malformed 2>/dev/null | wc -l)
	terms=$(grep -o '[0-9]*x0x07' <<<"$ops" | cut -dx -f1); terms=${terms:-0}
	line="MPA: ${desc:-none}; DDP/RDMAP frames $ddp (client $from_cli, server $from_srv) [opcodes $ops]; malformed $mal"
	# tests/interop/README.md, siw limitations: siw as the passive side intermittently never answers the first FPDU after the
	# MPA Reply (TCP ACKs it; no Terminate, no FIN). Flag that pattern for our-client cells.
	case "$c" in *ours2siw*)
		if [ "$from_cli" -gt 0 ] && [ "$from_srv" = 0 ] && [ "$nrep" -ge 1 ]; then
			fins=$("${TS[@]}" -r "$p" -Y "tcp.flags.fin == 1 and tcp.srcport == $srvport" 2>/dev/null | wc -l)
			if [ "$fins" = 0 ]; then
				line+="; siw answered none of our $from_cli FPDUs and never closed (the siw stall signature, tests/interop/README.md: siw limitations)"
			else
				line+="; siw answered none of our $from_cli FPDUs and closed the connection"
			fi
		fi ;;
	esac
	[ "$nreq" -ge 1 ] && [ "$nrep" -ge 1 ] || bad+=("no MPA Request/Reply decoded")
	[ "$ddp" -gt 0 ] || bad+=("no DDP/RDMAP frames decoded")
	[ "$mal" = 0 ] || bad+=("$mal malformed frames")
	[ "$terms" = 0 ] || line+="; Terminate frames $terms (siw lays out the Terminate control word differently from RFC 5040 §4.8: tests/interop/README.md)"
	case "$c" in fault-*) fault_check ;; esac
	if [ "$crc_on" = 1 ]; then
		crcs=$("${TS[@]}" -r "$p" -Y iwarp_mpa.crc_check -V -O iwarp_mpa 2>/dev/null | grep -oE '(Good|Bad) CRC32' | sort | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s=", "}')
		good=$(echo "$crcs" | grep -oE '[0-9]+ Good' | cut -d' ' -f1); bad_n=$(echo "$crcs" | grep -oE '[0-9]+ Bad' | cut -d' ' -f1)
		line+="; CRC on: ${crcs:-no CRC fields}"
		case "$c" in
		fault-corrupt-crc-*) [ "${bad_n:-0}" = 1 ] || bad+=("${bad_n:-0} bad CRCs, expected the one corrupted FPDU") ;;
		*) [ "${bad_n:-0}" = 0 ] || bad+=("${bad_n} bad CRCs") ;;
		esac
		[ "${good:-0}" -gt 0 ] || bad+=("CRC negotiated but no CRC verified")
	else
		line+="; CRC off"
		[ "$v" = crc ] && [ "$nrep" -ge 1 ] && bad+=("crc variant: the MPA Reply does not have C=1")
	fi
	if [ ${#bad[@]} -gt 0 ]; then
		echo "BAD|$v|$c|$(IFS=';'; echo "${bad[*]}") -- $line"; rc=1
	else
		echo "OK|$v|$c|$line"
	fi
done
exit $rc
