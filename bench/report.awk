# bench/report.awk: turns bench/run.sh's samples into the report (POSIX awk).
#   awk -v out=DIR -f report.awk DIR/machine.txt DIR/samples.csv
# Writes DIR/results.csv (one line per measurement and size: the median of its repetitions),
# DIR/results.json (the same, with the machine, the comparisons and the targets) and
# DIR/table.md (what the README shows).

function fmt_size(s) {
	if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) " MiB"
	if (s >= 1024 && s % 1024 == 0) return (s / 1024) " KiB"
	return s " B"
}

function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	if (n == 0) return ""
	for (i = 2; i <= n; i++) {
		t = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
		a[j + 1] = t
	}
	if (n % 2) return a[(n + 1) / 2] + 0
	return (a[n / 2] + a[n / 2 + 1]) / 2
}

function minmax(list, want,    n, a, i, m) {
	n = split(list, a, " ")
	if (n == 0) return ""
	m = a[1] + 0
	for (i = 2; i <= n; i++)
		if ((want == "min" && a[i] + 0 < m) || (want == "max" && a[i] + 0 > m)) m = a[i] + 0
	return m
}

function unit(id) { return id ~ /\.bw$/ ? "GB/s" : "us" }

function show(id, s,    v) {
	v = med[id, s]
	if (v == "") return ""
	if (unit(id) == "GB/s") return v >= 0.1 ? sprintf("%.2f GB/s", v) : sprintf("%.3g MB/s", v * 1000)
	return sprintf("%.1f µs", v)
}

function jstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function jnum(v) { return v == "" ? "null" : v + 0 }

# ratio of ours to a peer (both measured), as text and number
function ratio(o, p,    x) {
	if (o == "" || p == "" || p + 0 == 0) return ""
	x = o / p
	return sprintf(x >= 0.1 ? "%.2f" : "%.2g", x)
}

BEGIN {
	FS = ","
	# what each measurement is
	what["ndk.write.bw"] = "ndkperf -t write (RDMA Write bandwidth)"
	what["ndk.read.bw"] = "ndkperf -t read (RDMA Read bandwidth)"
	what["ndk.send.bw"] = "ndkperf -t send (Send bandwidth)"
	what["ndk.send.lat.poll"] = "ndkperf -t send --lat --poll"
	what["ndk.write.lat.poll"] = "ndkperf -t write --lat --poll"
	what["ndk.send.lat.block"] = "ndkperf -t send --lat (CQ notifications)"
	what["tcp.stream.bw"] = "iperf3, one stream, -l SIZE"
	what["tcp.lat.poll"] = "sockperf ping-pong, TCP, both ends busy-polling"
	what["tcp.lat.block"] = "sockperf ping-pong, TCP, blocking"
	what["ucx.put.bw"] = "ucx_perftest ucp_put_bw, UCX_TLS=tcp"
	what["ucx.get.bw"] = "ucx_perftest ucp_get, UCX_TLS=tcp"
	what["ucx.tag.bw"] = "ucx_perftest tag_bw, UCX_TLS=tcp"
	what["ucx.tag.lat"] = "ucx_perftest tag_lat, UCX_TLS=tcp"
	what["ucx.put.lat"] = "ucx_perftest ucp_put_lat, UCX_TLS=tcp"
	what["ucx.tag.lat.block"] = "ucx_perftest tag_lat -E sleep, UCX_TLS=tcp"
	what["fi.write.bw"] = "fi_peer -t write (libfabric tcp, FI_EP_MSG)"
	what["fi.read.bw"] = "fi_peer -t read (libfabric tcp, FI_EP_MSG)"
	what["fi.send.bw"] = "fi_peer -t send (libfabric tcp, FI_EP_MSG)"
	what["fi.lat.poll"] = "fi_peer -t lat --poll (libfabric tcp, ping-pong)"
	what["fi.lat.block"] = "fi_peer -t lat (libfabric tcp, ping-pong, fi_cq_sread)"
	n = split("tcp.stream.bw=iperf3 tcp.lat.poll=sockperf-busy-poll tcp.lat.block=sockperf-blocking " \
		"ucx.put.bw=ucx-put ucx.get.bw=ucx-get ucx.tag.bw=ucx-tag ucx.tag.lat=ucx-tag ucx.put.lat=ucx-put " \
		"ucx.tag.lat.block=ucx-tag-sleep fi.write.bw=libfabric-write fi.read.bw=libfabric-read " \
		"fi.send.bw=libfabric-send fi.lat.poll=libfabric-poll fi.lat.block=libfabric-sread", kv, " ")
	for (i = 1; i <= n; i++) { split(kv[i], pair, "="); short[pair[1]] = pair[2] }
	# table rows: ours | label | raw TCP peer | UCX peer | libfabric peer
	nrows = split("ndk.write.bw ndk.read.bw ndk.send.bw ndk.send.lat.poll ndk.send.lat.block ndk.write.lat.poll", row_ours, " ")
	split("RDMA Write bw|RDMA Read bw|Send bw|Send lat, poll|Send lat, blocking|Write lat, poll", row_label, "|")
	split("tcp.stream.bw tcp.stream.bw tcp.stream.bw tcp.lat.poll tcp.lat.block tcp.lat.poll", row_raw, " ")
	split("ucx.put.bw ucx.get.bw ucx.tag.bw ucx.tag.lat ucx.tag.lat.block ucx.put.lat", row_ucx, " ")
	split("fi.write.bw fi.read.bw fi.send.bw fi.lat.poll fi.lat.block -", row_lf, " ")
}

FILENAME ~ /machine\.txt$/ {
	i = index($0, "=")
	if (i) { k = substr($0, 1, i - 1); M[k] = substr($0, i + 1); mkeys[++nm] = k }
	next
}

FNR == 1 { next } # samples.csv header

{
	id = $1; s = $2; st = $6
	note = $0
	for (i = 1; i <= 6; i++) sub(/^[^,]*,/, "", note)
	gsub(/^"|"$/, "", note)
	if (!((id, s) in seen)) { seen[id, s] = 1; order[++nids] = id SUBSEP s }
	if (!(id in idseen)) { idseen[id] = 1; ids[++nidl] = id }
	if (!(s in sizeseen)) { sizeseen[s] = 1; sizes[++nsz] = s }
	reps[id, s]++
	if (st == "ok") {
		vals[id, s] = vals[id, s] " " $4
		if ($5 != "") cpus[id, s] = cpus[id, s] " " $5
		okn[id, s]++
	} else {
		bad[id, s] = st
		why[id, s] = note
	}
}

END {
	for (k = 1; k <= nids; k++) {
		split(order[k], p, SUBSEP)
		id = p[1]; s = p[2]
		med[id, s] = median(vals[id, s])
		cmed[id, s] = median(cpus[id, s])
	}
	for (k = 1; k <= nidl; k++)
		if (ids[k] ~ /^ndk\./) has_ndk = 1

	# ---- results.csv ----
	f = out "/results.csv"
	print "id,what,size,unit,median,min,max,reps_ok,reps,cpu_ns_per_byte,status,note" > f
	for (k = 1; k <= nids; k++) {
		split(order[k], p, SUBSEP)
		id = p[1]; s = p[2]
		st = okn[id, s] ? (okn[id, s] == reps[id, s] ? "ok" : "partial") : bad[id, s]
		printf "%s,%s,%s,%s,%s,%s,%s,%d,%d,%s,%s,\"%s\"\n", id, what[id], s, unit(id), med[id, s],
			minmax(vals[id, s], "min"), minmax(vals[id, s], "max"), okn[id, s], reps[id, s],
			cmed[id, s], st, (st == "ok" ? "" : why[id, s]) > f
	}
	close(f)

	# ---- comparisons and targets (computed once, used by JSON and Markdown) ----
	nc = 0
	for (r = 1; r <= nrows; r++) {
		for (z = 1; z <= nsz; z++) {
			s = sizes[z]
			o = med[row_ours[r], s]
			split(row_raw[r] " " row_ucx[r] " " row_lf[r], peers, " ")
			best = ""; bestid = ""
			for (q = 1; q <= 3; q++) {
				pid = peers[q]
				if (pid == "-" || med[pid, s] == "") continue
				v = med[pid, s]
				if (best == "" || (row_ours[r] ~ /bw$/ && v > best) || (row_ours[r] !~ /bw$/ && v < best)) { best = v; bestid = pid }
				if (o != "" && v + 0 != 0) {
					nc++
					C_ours[nc] = row_ours[r]; C_peer[nc] = pid; C_size[nc] = s
					C_ratio[nc] = o / v
				}
			}
			bestpeer[r, s] = bestid
		}
	}

	# issue 5 targets: [test, sizes, peer kind, bound, direction]
	nt = 0
	for (z = 1; z <= nsz; z++) {
		s = sizes[z]
		if (s == 65536 || s == 1048576) {
			for (r = 1; r <= 3; r++) {
				if (r == 2) { add_target(r, s, "tcp.stream.bw", 0.9, ">="); continue }
				if (bestpeer[r, s] != "tcp.stream.bw") add_target(r, s, bestpeer[r, s], 1.0, ">=", 1)
				add_target(r, s, "tcp.stream.bw", 1.0, ">=")
			}
		}
		if (s == 8) {
			add_target(4, s, "tcp.lat.poll", 1.2, "<=")
			add_target(5, s, "tcp.lat.block", 1.1, "<=")
		}
	}

	write_json()
	write_md()
}

function add_target(r, s, pid, bound, dir, isbest,    o, v, x) {
	nt++
	T_best[nt] = isbest
	T_ours[nt] = row_ours[r]; T_label[nt] = row_label[r]; T_size[nt] = s
	T_peer[nt] = pid; T_bound[nt] = bound; T_dir[nt] = dir
	o = med[row_ours[r], s]; v = (pid == "" ? "" : med[pid, s])
	if (o == "" || v == "" || v + 0 == 0) { T_ratio[nt] = ""; T_state[nt] = "not measured"; return }
	x = o / v
	T_ratio[nt] = x
	T_state[nt] = ((dir == ">=" && x >= bound) || (dir == "<=" && x <= bound)) ? "met" : "missed"
}

function write_json(    f, k, p, id, s, first, i) {
	f = out "/results.json"
	printf "{\n  \"machine\": {" > f
	for (i = 1; i <= nm; i++)
		printf "%s\n    %s: %s", (i > 1 ? "," : ""), jstr(mkeys[i]), jstr(M[mkeys[i]]) > f
	printf "\n  },\n  \"results\": [" > f
	for (k = 1; k <= nids; k++) {
		split(order[k], p, SUBSEP)
		id = p[1]; s = p[2]
		printf "%s\n    {\"id\": %s, \"what\": %s, \"size\": %d, \"unit\": %s, \"median\": %s, " \
			"\"values\": [%s], \"reps_ok\": %d, \"reps\": %d, \"cpu_ns_per_byte\": %s, \"status\": %s%s}",
			(k > 1 ? "," : ""), jstr(id), jstr(what[id]), s, jstr(unit(id)), jnum(med[id, s]),
			jlist(vals[id, s]), okn[id, s], reps[id, s], jnum(cmed[id, s]),
			jstr(okn[id, s] ? "ok" : bad[id, s]),
			(okn[id, s] ? "" : ", \"note\": " jstr(why[id, s])) > f
	}
	printf "\n  ],\n  \"comparisons\": [" > f
	for (k = 1; k <= nc; k++)
		printf "%s\n    {\"ours\": %s, \"peer\": %s, \"size\": %d, \"ratio\": %.4f}", (k > 1 ? "," : ""),
			jstr(C_ours[k]), jstr(C_peer[k]), C_size[k], C_ratio[k] > f
	printf "\n  ],\n  \"reliable\": %s,\n  \"targets\": [", (M["other_cpu_pct"] + 0 >= 10 ? "false" : "true") > f
	for (k = 1; k <= nt; k++)
		printf "%s\n    {\"ours\": %s, \"size\": %d, \"peer\": %s, \"bound\": \"%s %.1f\", \"ratio\": %s, \"state\": %s}",
			(k > 1 ? "," : ""), jstr(T_ours[k]), T_size[k], jstr(T_peer[k]), T_dir[k], T_bound[k],
			(T_ratio[k] == "" ? "null" : sprintf("%.4f", T_ratio[k])), jstr(T_state[k]) > f
	printf "\n  ]\n}\n" > f
	close(f)
}

function jlist(list,    n, a, i, s) {
	n = split(list, a, " ")
	s = ""
	for (i = 1; i <= n; i++) s = s (i > 1 ? ", " : "") (a[i] + 0)
	return s
}

function cell_ratio(o, pid, s) {
	if (pid == "-") return "—"
	return ratio(o, med[pid, s]) == "" ? "" : ratio(o, med[pid, s]) "×"
}

function cell_peer(pid, s) {
	if (pid == "-") return "—"
	if (med[pid, s] != "") return show(pid, s)
	if ((pid, s) in seen) return "failed"
	return ""
}

function write_md(    f, r, z, s, o, ocell, cpu, k, ndk_note) {
	f = out "/table.md"
	noisy = M["other_cpu_pct"] + 0 >= 10
	printf "Loopback, one connection; median of %s repetitions of %s s each, ours and the peers interleaved. " \
		"Machine: %s, %s cores (%s), Linux %s, %s; load average %s at the start; other work took %s%% of the CPU time during the run. " \
		"Peers: iperf3 %s, sockperf %s, UCX %s, libfabric %s.\n\n",
		M["reps"], M["seconds"], M["cpu"], M["cores"], M["virt"], M["kernel"], M["os"],
		M["load_start"], M["other_cpu_pct"], M["iperf3"], M["sockperf"], M["ucx"], M["libfabric"] > f
	if (noisy)
		printf "**Warning: other work took %s%% of the CPU time during this run, so these numbers (busy-poll latencies above all) do not describe this machine; rerun it on a quiet one.**\n\n", M["other_cpu_pct"] > f
	print "| Test | Size | ndkperf (iwarp) | raw TCP | ours/TCP | UCX (tcp) | ours/UCX | libfabric (tcp) | ours/libfabric | CPU ns/B ours · TCP · libfabric |" > f
	print "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" > f
	for (r = 1; r <= nrows; r++) {
		if (!(row_ours[r] in idseen) && !(row_raw[r] in idseen) && !(row_ucx[r] in idseen) && !(row_lf[r] in idseen))
			continue
		for (z = 1; z <= nsz; z++) {
			s = sizes[z]
			o = med[row_ours[r], s]
			if (o != "") ocell = show(row_ours[r], s)
			else if (bad[row_ours[r], s] == "unavailable") { ocell = "unavailable"; ndk_note = why[row_ours[r], s] }
			else if ((row_ours[r], s) in seen) ocell = "failed"
			else ocell = ""
			cpu = ""
			if (row_ours[r] ~ /bw$/)
				cpu = fmt_cpu(cmed[row_ours[r], s]) " · " fmt_cpu(cmed[row_raw[r], s]) " · " fmt_cpu(cmed[row_lf[r], s])
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row_label[r], fmt_size(s), ocell,
				cell_peer(row_raw[r], s), cell_ratio(o, row_raw[r], s),
				cell_peer(row_ucx[r], s), cell_ratio(o, row_ucx[r], s),
				cell_peer(row_lf[r], s), cell_ratio(o, row_lf[r], s), cpu > f
		}
	}
	print "" > f
	if (ndk_note != "") printf "ndkperf: unavailable (%s).\n\n", ndk_note > f
	print "Bandwidth: payload GB/s (10^9 B/s); ratio ours/peer, higher is better. Latency: one-way µs " \
		"(half the median round trip); ratio ours/peer, lower is better. CPU ns/B: user+system CPU time " \
		"of both ends per payload byte, where the tool reports it (iperf3, fi_peer, ndkperf)." > f
	print "" > f
	print "Peers: raw TCP = iperf3 (bandwidth) and sockperf (latency; its messages are 14 B at least and " \
		"1048575 B at most, so the 8 B and 1 MiB rows use those); UCX = ucx_perftest with UCX_TLS=tcp " \
		"(ucp_put_bw, ucp_get, tag_bw; ucp_put_lat, tag_lat busy-polling and tag_lat -E sleep for blocking); libfabric = bench/fi_peer on the " \
		"tcp provider, FI_EP_MSG" (M["bw_poll"] == 1 ? ", busy-polling in bandwidth runs like ndkperf --poll." : ", blocking in bandwidth runs.") > f
	if (nt) {
		print "" > f
		print "Targets (issue 5):" > f
		print "" > f
		for (k = 1; k <= nt; k++)
			printf "- %s %s: ours/%s = %s (target %s %.1f): %s\n", T_label[k], fmt_size(T_size[k]),
				(T_peer[k] == "" ? "best peer" : short[T_peer[k]] (T_best[k] ? " (best peer)" : "")),
				(T_ratio[k] == "" ? "n/a" : ratio(T_ratio[k], 1)), T_dir[k], T_bound[k],
				T_state[k] (noisy && T_state[k] != "not measured" ? " (unreliable: other work on the machine)" : "") > f
	}
	close(f)
}

function fmt_cpu(v) { return v == "" ? "–" : sprintf("%.2f", v) }
