#!/usr/bin/env bash
# Disk tier throughput on this machine: a yuebing-master and one yuebing-store with a small
# memory segment and a disk tier in a temp directory; `yuebing-bench spill` writes more than the
# memory (so most of it is spilled) and reads everything back.
#   bench/run_spill_bench.sh [BUILD_DIR]    (default: build)
# Environment: STORE_SIZE (64MB), SSD_CAPACITY (2GB), SPILL_BYTES (512MB), BLOCK (1MB),
# SSD_DIR (a new directory under TMPDIR or /tmp; removed afterwards), REPORT (text|json).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
STORE_SIZE="${STORE_SIZE:-64MB}"
SSD_CAPACITY="${SSD_CAPACITY:-2GB}"
SPILL_BYTES="${SPILL_BYTES:-512MB}"
BLOCK="${BLOCK:-1MB}"
REPORT="${REPORT:-text}"
source bench/local_cluster_lib.sh
SSD_DIR="${SSD_DIR:-$WORK/ssd}"
CLEANUP_PATHS+=("$SSD_DIR")
start_master "$BUILD"
start_store "$BUILD" store --global_segment_size="$STORE_SIZE" --ssd_path="$SSD_DIR" \
  --ssd_capacity="$SSD_CAPACITY"
echo "store: $STORE_SIZE memory, disk tier $SSD_CAPACITY in $SSD_DIR ($(df -T "$SSD_DIR" | awk 'NR==2{print $2}'))"
timeout 600 "$BUILD/bench/yuebing-bench" spill --master_server_address="127.0.0.1:$RPC_PORT" \
  --spill_bytes="$SPILL_BYTES" --block_size="$BLOCK" --report="$REPORT"
echo "disk tier after the run: $(find "$SSD_DIR" -name '*.obj' | wc -l) files," \
  "$(du -sh "$SSD_DIR" | cut -f1)"
