#!/usr/bin/env bash
# What one control-plane round trip costs on this machine, against the floor of a raw socket:
# starts a yuebing-master on 127.0.0.1, then in REPEAT interleaved rounds runs
#   - raw TCP ping-pong of a MESSAGE-byte message (8-byte reply), client blocking in recv();
#   - the same with the client spinning on the reply;
#   - `yuebing-bench master-rpc`: single-key IsExist calls (one BatchExist) from a store client,
#     one at a time: over the master's fast path (the default; the client polls for the reply
#     first), the same with the client sleeping on it (YUEBING_MASTER_REPLY_SPIN_US=0), and over
#     gRPC (YUEBING_MASTER_FAST_RPC=0; sleeps);
# and prints the medians of their p50/p99 and the ratio of each RPC's p50 to the ping-pong that
# waits the same way (spinning or blocking: the comparable floor).
#   bench/run_master_rpc_bench.sh [BUILD_DIR]    (default: build)
# Environment: DURATION seconds per run (3), REPEAT rounds (3), MESSAGE bytes (64).
# Exit status: 0 when every run succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BIN="$BUILD/bench/yuebing-bench"
DURATION="${DURATION:-3}"
REPEAT="${REPEAT:-3}"
MESSAGE="${MESSAGE:-64}"
source bench/local_cluster_lib.sh
start_master "$BUILD"

declare -A P50 P99
pingpong() {  # <label> [--busy_poll]
  local port out server
  port=$(free_port)
  timeout 60 "$BIN" socket --mode=server --port="$port" --duration=30 >/dev/null 2>&1 &
  server=$!
  sleep 0.2
  out=$(timeout 60 "$BIN" socket --mode=client --port="$port" --pingpong "${@:2}" \
    --block_size="$MESSAGE" --duration="$DURATION" --report=json | grep '^{' | tail -1)
  wait "$server" || true
  P50[$1]+="$(json_field "$out" rtt_p50_us) "
  P99[$1]+="$(json_field "$out" rtt_p99_us) "
}
for round in $(seq 1 "$REPEAT"); do
  echo "round $round/$REPEAT" >&2
  pingpong pingpong
  pingpong pingpong_spin --busy_poll
  for path in rpc rpc_sleep grpc; do
    case $path in
      rpc) vars=(-u YUEBING_MASTER_REPLY_SPIN_US YUEBING_MASTER_FAST_RPC=1) ;;  # the defaults
      rpc_sleep) vars=(YUEBING_MASTER_REPLY_SPIN_US=0 YUEBING_MASTER_FAST_RPC=1) ;;
      grpc) vars=(YUEBING_MASTER_FAST_RPC=0) ;;
    esac
    out=$(env "${vars[@]}" timeout 120 "$BIN" \
      master-rpc --master_server_address="127.0.0.1:$RPC_PORT" --duration="$DURATION" \
      --report=json 2>"$WORK/rpc.err" | grep '^{' | tail -1) || {
      cat "$WORK/rpc.err" >&2
      exit 1
    }
    frames=$(python3 -c "import urllib.request as u, sys
for line in u.urlopen(sys.argv[1], timeout=10).read().decode().splitlines():
    if line.startswith('yuebing_master_fast_rpc_frames_total '): print(line.split()[1])" \
      "http://127.0.0.1:$METRICS_PORT/metrics")
    if [ "$path" != grpc ] && [ "${frames:-0}" = "${last_frames:-0}" ]; then
      echo "the fast-path run made no fast-path call (fell back to gRPC?)" >&2
      exit 1
    fi
    last_frames=$frames
    P50[$path]+="$(json_field "$out" rpc_p50_us) "
    P99[$path]+="$(json_field "$out" rpc_p99_us) "
  done
done

printf '\nmaster control-plane round trip, 127.0.0.1, %s CPUs, %s\n' "$(nproc)" \
  "$(date -u +%Y-%m-%dT%H:%MZ)"
printf 'median of %s rounds of %s s runs; ping-pong message %s bytes\n' "$REPEAT" "$DURATION" \
  "$MESSAGE"
for label in pingpong pingpong_spin rpc rpc_sleep grpc; do
  printf '%-40s p50 %8.1f us   p99 %8.1f us\n' \
    "$(case $label in pingpong) echo "raw TCP ping-pong, blocking";;
       pingpong_spin) echo "raw TCP ping-pong, client spins";;
       rpc) echo "IsExist (fast path, 1 key)";;
       rpc_sleep) echo "IsExist (fast path, client sleeps)";;
       grpc) echo "IsExist (gRPC BatchExist, 1 key)";; esac)" \
    "$(median "${P50[$label]}")" "$(median "${P99[$label]}")"
done
awk -v r="$(median "${P50[rpc]}")" -v g="$(median "${P50[grpc]}")" \
  -v q="$(median "${P50[rpc_sleep]}")" -v b="$(median "${P50[pingpong]}")" \
  -v s="$(median "${P50[pingpong_spin]}")" 'BEGIN {
    printf "RPC p50 / spinning ping-pong p50: %.2f (issue #14 target <= 2.0)\n", r / s
    printf "RPC p50 / blocking ping-pong p50: %.2f\n", r / b
    printf "RPC (client sleeps) p50 / blocking ping-pong p50: %.2f\n", q / b
    printf "gRPC p50 / blocking ping-pong p50: %.2f (the path used with a cluster secret or TLS)\n", g / b
  }'
