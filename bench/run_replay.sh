#!/usr/bin/env bash
# Trace replay, end to end on this machine: starts a yuebing-master and two yuebing-store
# processes on 127.0.0.1 with segments too small for the trace's working set (so the master must
# evict), replays the conversation trace with `yuebing-bench replay`, and prints the hit rate next
# to an ideal LRU of the same capacity (read from the master's /metrics).
#   bench/run_replay.sh [BUILD_DIR]    (default: build)
# Environment: BLOCK_BYTES (16KB), STORE_SIZE per store (128MB), MAX_REQUESTS (0: all),
# TRACE (bench/traces/conversation_trace.jsonl), REPORT (text|json), MASTER_FLAGS (extra
# yuebing-master flags; default none: the master's defaults. Read leases end with each read, so
# the 10 s default lease no longer pins blocks while the replay runs the trace ~200x faster than
# recorded).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BLOCK_BYTES="${BLOCK_BYTES:-16KB}"
STORE_SIZE="${STORE_SIZE:-128MB}"
MAX_REQUESTS="${MAX_REQUESTS:-0}"
TRACE="${TRACE:-bench/traces/conversation_trace.jsonl}"
REPORT="${REPORT:-text}"
read -r -a MASTER_EXTRA <<<"${MASTER_FLAGS-}"
source bench/local_cluster_lib.sh

start_master "$BUILD" "${MASTER_EXTRA[@]}"
for i in 1 2; do start_store "$BUILD" "store$i" --global_segment_size="$STORE_SIZE"; done

CAPACITY=$(python3 - "$METRICS_PORT" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
for line in text.splitlines():
    if line.startswith("yuebing_master_capacity_bytes"):
        print(int(float(line.split()[-1])))
        break
else:
    sys.exit("no yuebing_master_capacity_bytes in /metrics")
PY
)
echo "cluster: master 127.0.0.1:$RPC_PORT (${MASTER_EXTRA[*]:-default flags}), 2 stores of" \
  "$STORE_SIZE, capacity $CAPACITY bytes; blocks of $BLOCK_BYTES"
"$BUILD/bench/yuebing-bench" replay --master_server_address="127.0.0.1:$RPC_PORT" \
  --trace="$TRACE" --block_bytes="$BLOCK_BYTES" --capacity_bytes="$CAPACITY" \
  --max_requests="$MAX_REQUESTS" --report="$REPORT"
echo "cluster metrics after the replay:"
python3 - "$METRICS_PORT" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
for line in text.splitlines():
    name = line.split("{")[0].split(" ")[0]
    if name.startswith("yuebing_master_") and any(
            w in name for w in ("objects", "used_bytes", "capacity_bytes", "evict")):
        print("  " + line)
PY
