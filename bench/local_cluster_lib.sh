# shellcheck shell=bash
# Sourced (after `cd` to the repository root) by the scripts that run a yuebing-master and stores
# on 127.0.0.1 for a benchmark or a soak. It provides:
#   WORK            a new temporary directory, removed on exit
#   PIDS            background processes to stop on exit (append: PIDS+=($!))
#   CLEANUP_PATHS   more paths to remove on exit (append)
#   free_port       prints a free TCP port on 127.0.0.1
#   wait_line FILE TEXT [SECONDS]   waits (default 10 s) until FILE contains TEXT; on timeout
#                   prints FILE on stderr and returns 1
#   start_master BUILD [FLAGS...]   starts BUILD's yuebing-master on 127.0.0.1 (log
#                   $WORK/master.log), sets RPC_PORT and METRICS_PORT, waits until it listens
#   start_store BUILD NAME [FLAGS...]   starts a yuebing-store of that master (log
#                   $WORK/NAME.log) and waits (30 s at most) until it is ready
#   json_field JSON KEY             prints KEY's value from a one-line JSON report
#   median "V1 V2 ..."              prints the median (the lower middle for an even count)
# and, when sourced, warns on stderr about yuebing processes that are already running: a benchmark
# shares the CPUs with them (on 2026-12-07 idle clusters left over from profiling skewed a
# morning's figures).
WORK=$(mktemp -d)
PIDS=()
CLEANUP_PATHS=()
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_line() {
  local tries=$((${3:-10} * 20))
  for _ in $(seq 1 "$tries"); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "timed out waiting for '$2' in $1:" >&2
  cat "$1" >&2
  return 1
}
start_master() {
  RPC_PORT=$(free_port)
  METRICS_PORT=$(free_port)
  "$1/tools/master/yuebing-master" --rpc_port="$RPC_PORT" --rpc_address=127.0.0.1 \
    --metrics_port="$METRICS_PORT" "${@:2}" >"$WORK/master.log" 2>&1 &
  PIDS+=($!)
  wait_line "$WORK/master.log" "yuebing-master listening"
}
start_store() {
  "$1/tools/store/yuebing-store" --master_server_address="127.0.0.1:$RPC_PORT" "${@:3}" \
    >"$WORK/$2.log" 2>&1 &
  PIDS+=($!)
  wait_line "$WORK/$2.log" "yuebing-store ready" 30
}
json_field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2 | tr -d '"'; }
median() {
  tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK" "${CLEANUP_PATHS[@]}"
}
trap cleanup EXIT
# (bench/stray_processes.py is the Python benchmarks' copy of this check.)
if stray=$(pgrep -r R,S,D -d ' ' '^(yuebing-(master|store|bench|client)|mooncake_master)$' \
  2>/dev/null); then
  echo "warning: processes of a cluster already running (pids $stray): this run's figures share" \
    "the CPUs with them" >&2
fi
