#!/usr/bin/env bash
# Runs the transfer engine benchmark and its baselines on 127.0.0.1 and prints a summary table:
#   memcpy (1 and 4 MiB), raw TCP stream (1 and 4 MiB), TCP ping-pong (4 KiB),
#   yuebing TCP and shm, write and read, 1 and 4 MiB blocks, and a 4 KiB batch=1 latency run.
# Usage: bench/run_transfer_bench.sh [build_dir]      (default ./build)
# Environment: DURATION (s per run, 5), BUFFER_SIZE (per side, 512MB), BATCH_SIZE (8),
#   THREADS (1), PORT_BASE (17400), VERIFY (1: every transfer run ends with --verify),
#   RESULTS (file for the raw JSON lines; default <build_dir>/transfer_bench_results.jsonl),
#   STRICT (1: exit 1 when a target is missed), BLOCKS (block sizes of the throughput runs,
#   "1MB 4MB"; a shorter list makes a quick smoke run, as the ctest entry does).
# Exit status: 0 when every run succeeded (and, with STRICT=1, every target was met).
set -uo pipefail

BUILD_DIR=${1:-./build}
BIN="$BUILD_DIR/bench/yuebing-bench"
DURATION=${DURATION:-5}
BUFFER_SIZE=${BUFFER_SIZE:-512MB}
BATCH_SIZE=${BATCH_SIZE:-8}
THREADS=${THREADS:-1}
PORT_BASE=${PORT_BASE:-17400}
VERIFY=${VERIFY:-1}
RESULTS=${RESULTS:-$BUILD_DIR/transfer_bench_results.jsonl}
STRICT=${STRICT:-0}
read -r -a BLOCKS <<<"${BLOCKS:-1MB 4MB}"
RUN_LIMIT=$((DURATION + 60))       # hard bound on any one client/initiator process
TARGET_LIFETIME=$((DURATION * 8 + 120))

if [[ ! -x "$BIN" ]]; then
  echo "no $BIN; build it: cmake --build $BUILD_DIR --target yuebing-bench" >&2
  exit 2
fi
WORK=$(mktemp -d)
: >"$RESULTS"
BG_PIDS=()
FAILED=0

# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  local pid
  for pid in "${BG_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 1 30); do
    local alive=0
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

# record <label> <exit status>: keeps the JSON report in $WORK/out for the table and the
# results file; a non-zero status or a missing report marks the run failed.
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
  R[$label]=$json
  echo "{\"label\":\"$label\",${json#\{}" >>"$RESULTS"
}

run_memcpy() {  # <block>
  echo "memcpy $1" >&2
  timeout "$RUN_LIMIT" "$BIN" memcpy --block_size="$1" --buffer_size="$BUFFER_SIZE" \
    --duration="$DURATION" --report=json >"$WORK/out" 2>"$WORK/err"
  record "memcpy_$1" $?
}

run_socket() {  # <label> <block> [--pingpong]
  local label=$1 block=$2 port=$((PORT_BASE + 1)) rc
  echo "socket $label" >&2
  timeout "$RUN_LIMIT" "$BIN" socket --mode=server --port="$port" --duration=30 >"$WORK/srv" 2>&1 &
  local server=$!
  BG_PIDS+=("$server")
  timeout "$RUN_LIMIT" "$BIN" socket --mode=client --port="$port" --block_size="$block" \
    --duration="$DURATION" --report=json "${@:3}" >"$WORK/out" 2>"$WORK/err"
  rc=$?
  wait "$server" 2>/dev/null || { rc=1; cat "$WORK/srv" >>"$WORK/err"; }
  record "$label" $rc
}

# start_target <protocol> <port>: sets TARGET_PID, TARGET_ADDR, TARGET_LEN.
start_target() {
  local protocol=$1 port=$2 out="$WORK/target_$1"
  timeout "$TARGET_LIFETIME" "$BIN" transfer --mode=target --protocol="$protocol" \
    --local_server_name="127.0.0.1:$port" --buffer_size="$BUFFER_SIZE" \
    --duration="$TARGET_LIFETIME" >"$out" 2>"$out.err" &
  TARGET_PID=$!
  BG_PIDS+=("$TARGET_PID")
  for _ in $(seq 1 300); do  # at most 30 s
    if grep -q '^READY ' "$out"; then
      read -r _ _ TARGET_ADDR TARGET_LEN < <(grep '^READY ' "$out" | head -1)
      return 0
    fi
    kill -0 "$TARGET_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "target ($protocol) did not become ready:" >&2
  cat "$out.err" >&2
  return 1
}

stop_target() {
  kill -TERM "$TARGET_PID" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$TARGET_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$TARGET_PID" 2>/dev/null
  wait "$TARGET_PID" 2>/dev/null
}

run_transfer() {  # <label> <protocol> <port> <operation> <block> [extra flags...]
  local label=$1 protocol=$2 port=$3 operation=$4 block=$5
  local verify=()
  [[ "$VERIFY" == 1 ]] && verify=(--verify)
  echo "transfer $label" >&2
  timeout "$RUN_LIMIT" "$BIN" transfer --mode=initiator --protocol="$protocol" \
    --segment_id="127.0.0.1:$port" --target_buffer="$TARGET_ADDR" \
    --target_buffer_size="$TARGET_LEN" --buffer_size="$BUFFER_SIZE" --operation="$operation" \
    --block_size="$block" --batch_size="$BATCH_SIZE" --threads="$THREADS" \
    --duration="$DURATION" --report=json "${verify[@]}" "${@:6}" >"$WORK/out" 2>"$WORK/err"
  record "$label" $?
}

started=$(date +%s)
for block in "${BLOCKS[@]}"; do run_memcpy "$block"; done
for block in "${BLOCKS[@]}"; do run_socket "socket_$block" "$block"; done
run_socket pingpong_4KB 4KB --pingpong

port=$((PORT_BASE + 10))
if start_target tcp "$port"; then
  for op in write read; do
    for block in "${BLOCKS[@]}"; do
      run_transfer "tcp_${op}_${block}" tcp "$port" "$op" "$block"
    done
  done
  for op in write read; do
    run_transfer "tcp_${op}_4KB_lat" tcp "$port" "$op" 4KB --batch_size=1 --threads=1
  done
  stop_target
else
  FAILED=1
fi
port=$((PORT_BASE + 20))
if start_target shm "$port"; then
  for op in write read; do
    for block in "${BLOCKS[@]}"; do
      run_transfer "shm_${op}_${block}" shm "$port" "$op" "$block"
    done
  done
  stop_target
else
  FAILED=1
fi

# ---- table ----
get() { local j=${R[$1]:-}; [[ -n "$j" ]] && field "$j" "$2"; }
MISSED=0
# row <figure> <value> <unit> <baseline> <baseline label> <compare: ge|lt> <target>
row() {
  awk -v f="$1" -v v="$2" -v u="$3" -v b="${4:-}" -v bl="${5:-}" -v c="${6:-}" -v t="${7:-}" 'BEGIN {
    if (v == "") { printf "%-30s %13s\n", f, "FAILED"; exit 2 }
    val = sprintf("%.2f %s", v, u)
    if (c == "ge") { r = (b > 0) ? v / b : 0; ok = r >= t
      printf "%-30s %13s  %-22s %6.2f  %-6s %s\n", f, val, sprintf("%.2f %s", b, bl), r,
             ">=" t, ok ? "met" : "NOT MET"; exit ok ? 0 : 1 }
    if (c == "lt") { ok = v < t
      printf "%-30s %13s  %-22s %6s  %-6s %s\n", f, val, sprintf("%.1f us %s", b, bl), "",
             "<" t, ok ? "met" : "NOT MET"; exit ok ? 0 : 1 }
    printf "%-30s %13s\n", f, val }'
  case $? in 1) MISSED=1 ;; 2) FAILED=1 ;; esac
}

echo
echo "yuebing transfer benchmark, 127.0.0.1, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "each run ${DURATION}s, batch_size=$BATCH_SIZE threads=$THREADS buffer=$BUFFER_SIZE per side"
printf '%-30s %13s  %-22s %6s  %-6s %s\n' figure value baseline ratio target verdict
for block in "${BLOCKS[@]}"; do
  row "memcpy $block" "$(get "memcpy_${block}" gbps)" GB/s
  row "raw TCP stream $block" "$(get "socket_${block}" gbps)" GB/s
done
row "raw TCP ping-pong 4KB p50" "$(get pingpong_4KB rtt_p50_us)" us
for op in write read; do
  for block in "${BLOCKS[@]}"; do
    row "yuebing tcp $op $block" "$(get "tcp_${op}_${block}" gbps)" GB/s \
      "$(get "socket_${block}" gbps)" "raw TCP" ge 0.9
  done
done
for op in write read; do
  for block in "${BLOCKS[@]}"; do
    row "yuebing shm $op $block" "$(get "shm_${op}_${block}" gbps)" GB/s \
      "$(get "memcpy_${block}" gbps)" memcpy ge 0.8
  done
done
for op in write read; do
  row "yuebing tcp $op 4KB b=1 p50" "$(get tcp_${op}_4KB_lat batch_p50_us)" us \
    "$(get pingpong_4KB rtt_p50_us)" "(ping-pong)" lt 50
  row "yuebing tcp $op 4KB b=1 p99" "$(get tcp_${op}_4KB_lat batch_p99_us)" us
done
echo "raw JSON: $RESULTS; wall time $(($(date +%s) - started)) s"

[[ $FAILED == 1 ]] && exit 1
[[ $STRICT == 1 && $MISSED == 1 ]] && exit 1
exit 0
