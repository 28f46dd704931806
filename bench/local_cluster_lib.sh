# shellcheck shell=bash
# Sourced (after `cd` to the repository root) by the scripts that run a yuebing-master and stores
# on 127.0.0.1 for a benchmark or a soak. It provides:
#   WORK            a new temporary directory, removed on exit
#   PIDS            background processes to stop on exit (append: PIDS+=($!))
#   CLEANUP_PATHS   more paths to remove on exit (append)
#   free_port       prints a free TCP port on 127.0.0.1
#   wait_line FILE TEXT [SECONDS]   waits (default 10 s) until FILE contains TEXT; on timeout
#                   prints FILE on stderr and returns 1
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
# shellcheck disable=SC2317  # invoked by trap
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK" "${CLEANUP_PATHS[@]}"
}
trap cleanup EXIT
