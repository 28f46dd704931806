#!/usr/bin/env bash
# What the store layer costs on top of the transfer engine, measured in one run: for each block
# size and path (TCP, same-host shared memory), in REPEAT interleaved rounds,
#   - the engine alone: `yuebing-bench transfer`, one initiator thread writing / reading batches of
#     BATCH blocks into a target's registered buffer;
#   - the store: `yuebing-bench store` against a yuebing-master and one yuebing-store on
#     127.0.0.1, BatchPut / BatchGetInto of BATCH objects of the same size (master round trips,
#     checksums, leases included; every byte read back is checked, outside the timed calls);
# and prints the medians and the ratios store put / engine write and store get / engine read
# (issue #14's target: >= 0.8 at 1-4 MiB on both paths).
#   bench/run_store_vs_engine.sh [BUILD_DIR]    (default: build)
# Environment: SIZES (1MB,4MB), BATCH (16), REPEAT (3), DURATION seconds per engine run (2),
# STORE_BYTES per size and store run (512MB), STORE_SIZE of the store's segment (2GB).
# Exit status: 0 when every run succeeded (whatever the ratios), 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BIN="$BUILD/bench/yuebing-bench"
SIZES="${SIZES:-1MB,4MB}"
BATCH="${BATCH:-16}"
REPEAT="${REPEAT:-3}"
DURATION="${DURATION:-2}"
STORE_BYTES="${STORE_BYTES:-512MB}"
STORE_SIZE="${STORE_SIZE:-2GB}"
source bench/local_cluster_lib.sh

start_master "$BUILD"
start_store "$BUILD" store --global_segment_size="$STORE_SIZE"

declare -A TARGET_ADDR TARGET_LEN TARGET_PORT
for protocol in tcp shm; do
  port=$(free_port)
  TARGET_PORT[$protocol]=$port
  "$BIN" transfer --mode=target --protocol="$protocol" --local_server_name="127.0.0.1:$port" \
    --buffer_size=256MB --duration=100000 >"$WORK/target_$protocol" 2>&1 &
  PIDS+=($!)
  wait_line "$WORK/target_$protocol" "^READY " 30
  read -r _ _ addr len < <(grep '^READY ' "$WORK/target_$protocol" | head -1)
  TARGET_ADDR[$protocol]=$addr
  TARGET_LEN[$protocol]=$len
done

declare -A V  # label -> space-separated values over the rounds
engine() {  # <protocol> <write|read> <size>
  local out
  out=$(timeout $((DURATION + 60)) "$BIN" transfer --mode=initiator --protocol="$1" \
    --segment_id="127.0.0.1:${TARGET_PORT[$1]}" --target_buffer="${TARGET_ADDR[$1]}" \
    --target_buffer_size="${TARGET_LEN[$1]}" --buffer_size=256MB --operation="$2" \
    --block_size="$3" --batch_size="$BATCH" --threads=1 --duration="$DURATION" --verify \
    --report=json 2>"$WORK/err" | grep '^{' | tail -1) || {
    cat "$WORK/err" >&2
    return 1
  }
  V[engine_$1_$2_$3]+="$(json_field "$out" gbps) "
}
store() {  # <protocol> <size>
  local out shm=true
  [[ $1 == tcp ]] && shm=false
  out=$(timeout 300 "$BIN" store --master_server_address="127.0.0.1:$RPC_PORT" \
    --value_sizes="$2" --batch_size="$BATCH" --store_shm="$shm" --store_phases=data \
    --store_bytes_per_size="$STORE_BYTES" --report=json 2>"$WORK/err" | grep '^{' | tail -1) || {
    cat "$WORK/err" >&2
    return 1
  }
  for figure in put_failures get_failures get_mismatches; do
    if [[ "$(json_field "$out" "$figure")" != 0 ]]; then
      echo "store run ($1, $2): $figure = $(json_field "$out" "$figure")" >&2
      return 1
    fi
  done
  V[store_$1_put_$2]+="$(json_field "$out" put_gbps) "
  V[store_$1_get_$2]+="$(json_field "$out" get_gbps) "
}

IFS=',' read -r -a SIZE_LIST <<<"$SIZES"
for round in $(seq 1 "$REPEAT"); do
  echo "round $round/$REPEAT" >&2
  for size in "${SIZE_LIST[@]}"; do
    for protocol in tcp shm; do
      engine "$protocol" write "$size"
      engine "$protocol" read "$size"
      store "$protocol" "$size"
    done
  done
done

printf '\nstore against the transfer engine, 127.0.0.1, %s CPUs, %s\n' "$(nproc)" \
  "$(date -u +%Y-%m-%dT%H:%MZ)"
printf 'median of %s rounds; batches of %s; engine runs of %s s, store runs of %s per size\n' \
  "$REPEAT" "$BATCH" "$DURATION" "$STORE_BYTES"
printf '%-6s %-6s %-4s %14s %14s %7s\n' path size op "engine GB/s" "store GB/s" ratio
for size in "${SIZE_LIST[@]}"; do
  for protocol in tcp shm; do
    for pair in write:put read:get; do
      e=$(median "${V[engine_${protocol}_${pair%%:*}_$size]}")
      s=$(median "${V[store_${protocol}_${pair##*:}_$size]}")
      awk -v p="$protocol" -v z="$size" -v o="${pair##*:}" -v e="$e" -v s="$s" \
        'BEGIN { printf "%-6s %-6s %-4s %14.2f %14.2f %7.2f\n", p, z, o, e, s, (e > 0 ? s / e : 0) }'
    done
  done
done
