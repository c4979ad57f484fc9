#!/usr/bin/env bash
# bench/verbs-guest.sh - the verbs rows of `make bench` (issue 16 item 3): in the interop QEMU
# guest (tests/interop/verbs.sh, cells bench-rxe and bench-siw), ndkperf over the verbs provider
# against perftest on the same device (rxe0, siw0), interleaved: each repetition runs ndkperf and
# perftest back to back, in the order ndkperf-perftest and then perftest-ndkperf.
#   write bandwidth  ndkperf -t write -z SIZE -n N -d 32 --poll  vs  ib_write_bw -R -s SIZE -n N -t 32
#   send latency     ndkperf -t send --lat -z 8 -n N (events)     vs  ib_send_lat -R -s 8 -n N -e
#                    and the client's CPU time per round trip (bash's time, user + system)
# Both tools are timed alike from outside: two client runs with N1 and N2 iterations, the
# difference of their wall-clock times (start-up and connection set-up cancel; perftest's cycle
# counter is unusable under TCG). Latency is half a round trip. Only the ratios mean anything:
# bandwidth ndkperf/perftest (1.0 = the same, below 1 slower), latency ndkperf/perftest (above 1
# slower).
#
#   bench/verbs-guest.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/verbs-guest.md and OUT_DIR/verbs-guest.csv; exit 77 with one line when the guest
# cannot boot here (no qemu, no image and not root, no verbs provider built), 1 when a cell failed.
# Environment: BENCH_VERBS (1; 0 skips), BENCH_VERBS_REPS (3), BENCH_BW_SIZE (65536),
# BENCH_BW_ITERS1/BENCH_BW_ITERS (200/1000), BENCH_LAT_ITERS1/BENCH_LAT_ITERS (200/1000),
# INTEROP_CACHE (guest image cache).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$1
out=$2
[ "${BENCH_VERBS:-1}" = 1 ] || { echo "bench: verbs rows skipped (BENCH_VERBS=${BENCH_VERBS})"; exit 77; }
mkdir -p "$out"
gdir=$out/verbs-guest
log=$out/verbs-guest.log

set +e
BENCH_REPS=${BENCH_VERBS_REPS:-3} VERBS_CELLS="bench-rxe bench-siw" INTEROP_OUT="$gdir" \
	"$here/../tests/interop/verbs.sh" "$build" >"$log" 2>&1
rc=$?
set -e
if [ $rc = 77 ]; then
	echo "bench: verbs rows skipped: $(grep -m1 '^SKIPPED:' "$log" | sed 's/^SKIPPED: //')"
	exit 77
fi

csv=$out/verbs-guest.csv
cat "$gdir"/share/results/bench-*.csv 2>/dev/null | awk 'NR == 1 || $0 !~ /^dev,/' >"$csv" || true
md=$out/verbs-guest.md
awk -F, '
	NR == 1 { next }
	{ k = $1 SUBSEP $2; v[k, $4, ++n[k, $4]] = $5; rv[k, $4, $3] = $5; unit[k] = $6; keys[k] = 1; if ($3 > nrep) nrep = $3 }
	function median(k, t,    m, i, j, a, x) {
		m = n[k, t]
		for (i = 1; i <= m; i++) a[i] = v[k, t, i]
		for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return m ? (m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2) : ""
	}
	END {
		print "## verbs provider against perftest on the same device (QEMU guest, TCG: ratios only)"
		print ""
		print "| device | measurement | ndkperf (verbs) | perftest | ratio of medians | ratio per repetition: median (min-max), pairs | runs each |"
		print "|---|---|---|---|---|---|---|"
		for (k in keys) {
			split(k, p, SUBSEP)
			a = median(k, "ndk"); b = median(k, "pt")
			r = (a != "" && b != "" && b > 0) ? sprintf("%.2f", a / b) : "n/a"
			# the ratio of each repetition, whose two runs were back to back: the spread says how
			# far the noise of the guest moves it
			m = 0
			for (i = 1; i <= nrep; i++)
				if (rv[k, "pt", i] > 0 && rv[k, "ndk", i] != "") pr[k, "q", ++m] = rv[k, "ndk", i] / rv[k, "pt", i]
			n[k, "q"] = m
			for (i = 1; i <= m; i++) v[k, "q", i] = pr[k, "q", i]
			pm = median(k, "q"); lo = hi = ""
			for (i = 1; i <= m; i++) { x = pr[k, "q", i]; if (lo == "" || x < lo) lo = x; if (hi == "" || x > hi) hi = x }
			sp = m ? sprintf("%.2f (%.2f-%.2f), %d", pm, lo, hi, m) : "n/a"
			tool = p[2] ~ /lat/ ? "ib_send_lat" : "ib_write_bw"
			printf "| %s | %s (%s, vs %s) | %s | %s | %s | %s | %d |\n", p[1], p[2], unit[k], tool, a, b, r, sp, n[k, "ndk"] | "sort"
		}
		close("sort")
		print ""
		print "Both timed from outside (wall-clock difference of an N1- and an N2-iteration run). Bandwidth: a ratio below 1 means ndkperf is slower; latency (half a round trip, median of the repetitions): above 1 means slower; send.lat.8.cpu is the client process'"'"'s CPU time (user + system, the same difference) per round trip: above 1 means ndkperf over verbs spends more CPU per message than perftest."
	}' "$csv" >"$md"
cat "$md"
[ $rc = 0 ] || { echo "bench: a verbs bench cell failed (rc $rc; $log)"; exit 1; }
