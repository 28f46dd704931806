#!/usr/bin/env bash
# Runs the transfer engine benchmark and its baselines on 127.0.0.1 and prints a summary table:
#   memcpy and raw TCP stream (per block size), TCP ping-pong (4 KiB), yuebing TCP and shm
#   write/read (per block size), and a 4 KiB batch_size=1 threads=1 TCP latency run. The 4 KiB
#   ping-pong runs twice: blocking in recv(), and with the client spinning on the reply.
# The runs are interleaved in REPEAT rounds and the table shows the median of each figure, so
# that load from neighbours on a shared machine hits baselines and engine runs alike.
# Usage: bench/run_transfer_bench.sh [build_dir]      (default ./build)
# Environment:
#   DURATION     seconds per run (2)             REPEAT       rounds (3)
#   BLOCKS       "block:batch_size ..." of the throughput runs ("1MB:32 4MB:8": 32 MiB per batch)
#   BUFFER_SIZE  registered buffer per side (256MB; larger than the caches)
#   THREADS      initiator threads (1)          PORT_BASE    first port used (17400)
#   VERIFY       1: every transfer run ends with --verify (1)
#   RESULTS      file for the raw JSON lines (<build_dir>/transfer_bench_results.jsonl)
#   STRICT       1: exit 1 when a target is missed (0)
# Exit status: 0 when every run succeeded (and, with STRICT=1, every target was met).
set -uo pipefail

BUILD_DIR=${1:-./build}
BIN="$BUILD_DIR/bench/yuebing-bench"
DURATION=${DURATION:-2}
REPEAT=${REPEAT:-3}
read -r -a BLOCKS <<<"${BLOCKS:-1MB:32 4MB:8}"
BUFFER_SIZE=${BUFFER_SIZE:-256MB}
THREADS=${THREADS:-1}
PORT_BASE=${PORT_BASE:-17400}
VERIFY=${VERIFY:-1}
RESULTS=${RESULTS:-$BUILD_DIR/transfer_bench_results.jsonl}
STRICT=${STRICT:-0}
RUN_LIMIT=$((DURATION + 60))  # hard bound on any one client/initiator process
RUNS_PER_ROUND=$((${#BLOCKS[@]} * 6 + 4))
TARGET_LIFETIME=$((REPEAT * RUNS_PER_ROUND * (DURATION + 5) + 60))
TCP_PORT=$((PORT_BASE + 10))
SHM_PORT=$((PORT_BASE + 20))
SOCKET_PORT=$((PORT_BASE + 1))

if [[ ! -x "$BIN" ]]; then
  echo "no $BIN; build it: cmake --build $BUILD_DIR --target yuebing-bench" >&2
  exit 2
fi
WORK=$(mktemp -d)
: >"$RESULTS"
BG_PIDS=()
FAILED=0
FELL_BACK=0

# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local pid alive
  for pid in "${BG_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 1 30); do
    alive=0
    for pid in "${BG_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for pid in "${BG_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# field <json line> <key>: the value of a top-level key of our flat JSON reports.
field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2 | tr -d '"'; }

# record <label> <exit status>: keeps the JSON report in $WORK/out (one more sample of
# <label>); a non-zero status or a missing report marks the run failed.
declare -A R
record() {
  local label=$1 rc=$2 json
  json=$(grep '^{' "$WORK/out" | tail -1)
  if [[ $rc != 0 || -z "$json" ]]; then
    echo "  FAILED: $label (exit $rc)" >&2
    tail -5 "$WORK/err" >&2
    FAILED=1
    return
  fi
  R[$label]+="$json"$'\n'
  if [[ $label == shm_* && $(field "$json" path_tcp_bytes) != 0 ]]; then
    echo "  WARNING: $label moved $(field "$json" path_tcp_bytes) bytes over TCP, not shm" >&2
    FELL_BACK=1
  fi
  echo "{\"label\":\"$label\",${json#\{}" >>"$RESULTS"
}

run_memcpy() {  # <block>
  echo "  memcpy $1" >&2
  timeout "$RUN_LIMIT" "$BIN" memcpy --block_size="$1" --buffer_size="$BUFFER_SIZE" \
    --duration="$DURATION" --report=json >"$WORK/out" 2>"$WORK/err"
  record "memcpy_$1" $?
}

run_socket() {  # <label> <block> [--pingpong]
  local label=$1 block=$2 rc server
  echo "  socket $label" >&2
  timeout "$RUN_LIMIT" "$BIN" socket --mode=server --port="$SOCKET_PORT" --duration=30 \
    >"$WORK/srv" 2>&1 &
  server=$!
  BG_PIDS+=("$server")
  timeout "$RUN_LIMIT" "$BIN" socket --mode=client --port="$SOCKET_PORT" --block_size="$block" \
    --duration="$DURATION" --report=json "${@:3}" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  wait "$server" 2>/dev/null || { rc=1; cat "$WORK/srv" >>"$WORK/err"; }
  record "$label" $rc
}

# start_target <protocol> <port>: starts it in the background; sets T_ADDR[protocol] and
# T_LEN[protocol] from its READY line.
declare -A T_ADDR T_LEN T_PID
start_target() {
  local protocol=$1 port=$2 out="$WORK/target_$1" addr len
  timeout "$TARGET_LIFETIME" "$BIN" transfer --mode=target --protocol="$protocol" \
    --local_server_name="127.0.0.1:$port" --buffer_size="$BUFFER_SIZE" \
    --duration="$TARGET_LIFETIME" >"$out" 2>"$out.err" &
  T_PID[$protocol]=$!
  BG_PIDS+=("$!")
  for _ in $(seq 1 300); do  # at most 30 s
    if grep -q '^READY ' "$out"; then
      read -r _ _ addr len < <(grep '^READY ' "$out" | head -1)
      T_ADDR[$protocol]=$addr
      T_LEN[$protocol]=$len
      return 0
    fi
    kill -0 "${T_PID[$protocol]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "target ($protocol) did not become ready:" >&2
  cat "$out.err" >&2
  FAILED=1
  return 1
}

stop_target() {  # <protocol>
  local pid=${T_PID[$1]:-}
  [[ -z "$pid" ]] && return
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

run_transfer() {  # <label> <protocol> <operation> <block> <batch> [extra flags...]
  local label=$1 protocol=$2 operation=$3 block=$4 batch=$5 port=$TCP_PORT verify=()
  [[ $protocol == shm ]] && port=$SHM_PORT
  [[ -z "${T_ADDR[$protocol]:-}" ]] && return  # its target failed to start (reported)
  [[ "$VERIFY" == 1 ]] && verify=(--verify)
  echo "  transfer $label" >&2
  timeout "$RUN_LIMIT" "$BIN" transfer --mode=initiator --protocol="$protocol" \
    --segment_id="127.0.0.1:$port" --target_buffer="${T_ADDR[$protocol]}" \
    --target_buffer_size="${T_LEN[$protocol]}" --buffer_size="$BUFFER_SIZE" \
    --operation="$operation" --block_size="$block" --batch_size="$batch" --threads="$THREADS" \
    --duration="$DURATION" --report=json "${verify[@]}" "${@:6}" >"$WORK/out" 2>"$WORK/err"
  record "$label" $?
}

started=$(date +%s)
start_target tcp "$TCP_PORT"
start_target shm "$SHM_PORT"
for round in $(seq 1 "$REPEAT"); do
  echo "round $round/$REPEAT" >&2
  for spec in "${BLOCKS[@]}"; do
    block=${spec%%:*}
    batch=${spec#*:}
    run_memcpy "$block"
    run_socket "socket_$block" "$block"
    for protocol in tcp shm; do
      for op in write read; do
        run_transfer "${protocol}_${op}_${block}" "$protocol" "$op" "$block" "$batch"
      done
    done
  done
  run_socket pingpong_4KB 4KB --pingpong
  run_socket pingpong_4KB_spin 4KB --pingpong --busy_poll
  for op in write read; do
    run_transfer "tcp_${op}_4KB_lat" tcp "$op" 4KB 1 --threads=1
  done
done
stop_target tcp
stop_target shm

# ---- table ----
# get <label> <key>: the median over the rounds of a figure (lower middle for an even count).
get() {
  local line
  while IFS= read -r line; do
    [[ -n "$line" ]] && field "$line" "$2"
  done <<<"${R[$1]:-}" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}
MISSED=0
# row <figure> <value> <unit> [<baseline> <baseline label> <ge|lt> <target>]
row() {
  awk -v f="$1" -v v="$2" -v u="$3" -v b="${4:-}" -v bl="${5:-}" -v c="${6:-}" -v t="${7:-}" '
  BEGIN {
    if (v == "") { printf "%-30s %13s\n", f, "FAILED"; exit 2 }
    val = sprintf("%.2f %s", v, u)
    if (c == "ge") {
      r = (b > 0) ? v / b : 0; ok = r >= t
      printf "%-30s %13s  %-24s %6.2f  %-6s %s\n", f, val, sprintf("%.2f %s", b, bl), r,
             ">=" t, ok ? "met" : "NOT MET"
      exit ok ? 0 : 1
    }
    if (c == "lt") {
      ok = v < t
      printf "%-30s %13s  %-24s %6s  %-6s %s\n", f, val, sprintf("%.1f us %s", b, bl), "",
             "<" t, ok ? "met" : "NOT MET"
      exit ok ? 0 : 1
    }
    printf "%-30s %13s\n", f, val
  }'
  case $? in 1) MISSED=1 ;; 2) FAILED=1 ;; esac
}

echo
echo "yuebing transfer benchmark, 127.0.0.1, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "median of $REPEAT rounds of ${DURATION}s runs; blocks:batch ${BLOCKS[*]};" \
  "threads=$THREADS; buffer $BUFFER_SIZE per side"
printf '%-30s %13s  %-24s %6s  %-6s %s\n' figure value baseline ratio target verdict
for spec in "${BLOCKS[@]}"; do
  block=${spec%%:*}
  row "memcpy $block" "$(get "memcpy_$block" gbps)" GB/s
  row "raw TCP stream $block" "$(get "socket_$block" gbps)" GB/s
done
row "raw TCP ping-pong 4KB p50" "$(get pingpong_4KB rtt_p50_us)" us
row "raw TCP ping-pong 4KB p99" "$(get pingpong_4KB rtt_p99_us)" us
row "  same, client spins: p50" "$(get pingpong_4KB_spin rtt_p50_us)" us
row "  same, client spins: p99" "$(get pingpong_4KB_spin rtt_p99_us)" us
for protocol in tcp shm; do
  for op in write read; do
    for spec in "${BLOCKS[@]}"; do
      block=${spec%%:*}
      if [[ $protocol == tcp ]]; then
        row "yuebing tcp $op $block" "$(get "tcp_${op}_$block" gbps)" GB/s \
          "$(get "socket_$block" gbps)" "raw TCP" ge 0.9
      else
        row "yuebing shm $op $block" "$(get "shm_${op}_$block" gbps)" GB/s \
          "$(get "memcpy_$block" gbps)" memcpy ge 0.8
      fi
    done
  done
done
for op in write read; do
  row "yuebing tcp $op 4KB b=1 p50" "$(get "tcp_${op}_4KB_lat" batch_p50_us)" us \
    "$(get pingpong_4KB_spin rtt_p50_us)" "spin ping-pong" lt 50
  row "yuebing tcp $op 4KB b=1 p99" "$(get "tcp_${op}_4KB_lat" batch_p99_us)" us
done
[[ $FELL_BACK == 1 ]] && echo "WARNING: some shm runs fell back to TCP (see above)"
echo "raw JSON: $RESULTS; wall time $(($(date +%s) - started)) s"

[[ $FAILED == 1 ]] && exit 1
[[ $STRICT == 1 && $MISSED == 1 ]] && exit 1
exit 0
