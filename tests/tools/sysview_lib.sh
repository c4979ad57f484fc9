# Shared by the system view tests (sourced): a private network namespace with lo when one can be
# made (else the host's loopback, ports chosen by the kernel), a temporary NDK_RUNTIME_DIR of the
# test's own, the processes it started killed at exit, and helpers to start ndkperf and run
# ndkinfo. Sets: build, tmp, ndkperf, ndkinfo, pids. Usage: . sysview_lib.sh BUILD_DIR
build=$1
ndkperf=$build/tools/ndkperf/ndkperf
ndkinfo=$build/tools/ndkinfo/ndkinfo
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$ndkperf" ] && [ -x "$ndkinfo" ] || skip "ndkperf or ndkinfo is not built in $build"
[ -e "$build/providers/ndk-iwarp.so" ] || skip "the iwarp provider is not built"
command -v python3 >/dev/null || skip "python3 is not installed"
if [ -z "${NDK_SV_IN_NETNS:-}" ] && command -v unshare >/dev/null && command -v ip >/dev/null &&
   unshare -n true 2>/dev/null; then
  NDK_SV_IN_NETNS=1 exec unshare -n "$0" "$@"
fi
[ -n "${NDK_SV_IN_NETNS:-}" ] && ip link set lo up
tmp=$(mktemp -d)
pids=()
sv_cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap sv_cleanup EXIT
export NDK_PROVIDER_PATH=$build/providers NDK_CONFIG=/nonexistent NDK_PROVIDERS=iwarp
export NDK_RUNTIME_DIR=$tmp/run
unset NDK_SYSVIEW

# Starts an ndkperf server on 127.0.0.1 (any port); sets srv_pid, port and srv_log.
nsrv=0
start_server() {
  nsrv=$((nsrv + 1))
  srv_log=$tmp/server$nsrv.log
  : >"$srv_log"     # the background child opens it in its own time
  "$ndkperf" -s 127.0.0.1:0 "$@" >>"$srv_log" 2>&1 &
  srv_pid=$!
  pids+=("$srv_pid")
  for _ in $(seq 200); do
    port=$(sed -n 's/^ndkperf server listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$srv_log" || true)
    [ -n "$port" ] && return 0
    kill -0 "$srv_pid" 2>/dev/null || fail "the ndkperf server exited: $(cat "$srv_log")"
    sleep 0.05
  done
  fail "the ndkperf server did not listen: $(cat "$srv_log")"
}

# Runs ndkinfo with the arguments; its output in $tmp/out, its standard error in $tmp/err.
info() { "$ndkinfo" "$@" >"$tmp/out" 2>"$tmp/err"; }
