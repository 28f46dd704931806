#!/usr/bin/env bash
# Master memory soak under object churn: starts a yuebing-master and one yuebing-store on
# 127.0.0.1, runs `yuebing-bench churn` (one client: batch put, batch get, batch remove of
# BATCH x BLOCK fresh keys in a loop, so no object outlives its iteration) for DURATION seconds,
# samples the master's resident memory (VmRSS) every SAMPLE_S seconds, and fails when the RSS at
# the end exceeds the RSS at the end of warm-up by more than MAX_GROWTH_PCT percent.
# Warm-up is the first WARMUP seconds of churn: long enough for every structure that is sized by
# the churn rate rather than by the objects ever written (read leases and the retired ranges
# they hold back, which last --default_kv_lease_ttl; hash tables and key arenas reaching their
# steady capacity) to fill. The warm-up RSS is the largest sample taken in it.
#   tests/soak/master_churn_soak.sh [BUILD_DIR]    (default: build)
# Exit status: 0 when the RSS stayed within bounds, 1 when it grew too much or the churn client
# failed (any put, get or remove error, or wrong bytes read), 2 for bad settings.
# Run by scripts/test with its defaults; figures and history in docs/reliability.md ("Master memory under
# churn").
# Environment: DURATION (45), WARMUP (15; must be below DURATION and above the lease TTL),
# SAMPLE_S (1), BLOCK (4KB), BATCH (64), STORE_SIZE (512MB), MAX_GROWTH_PCT (5),
# MASTER_FLAGS (extra yuebing-master flags; default none: the master's defaults, 10 s lease;
# leases end with each read, so removed objects' bytes are freed at once),
# SAMPLES_OUT (file to write "seconds rss_kb objects" samples to; default: none),
# MASTER_WRAPPER (a command the master runs under, e.g. "valgrind --tool=massif"; default: none).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
DURATION="${DURATION:-45}"
WARMUP="${WARMUP:-15}"
SAMPLE_S="${SAMPLE_S:-1}"
BLOCK="${BLOCK:-4KB}"
BATCH="${BATCH:-64}"
STORE_SIZE="${STORE_SIZE:-512MB}"
MAX_GROWTH_PCT="${MAX_GROWTH_PCT:-5}"
read -r -a MASTER_WRAP <<<"${MASTER_WRAPPER:-}"
read -r -a MASTER_EXTRA <<<"${MASTER_FLAGS-}"
if ((WARMUP >= DURATION)); then
  echo "WARMUP ($WARMUP) must be below DURATION ($DURATION)" >&2
  exit 2
fi
source bench/local_cluster_lib.sh
RPC_PORT=$(free_port)
METRICS_PORT=$(free_port)
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
objects() { awk '/^churn:/ {n = $2} END {print n}' "$WORK/churn.err" 2>/dev/null; }

"${MASTER_WRAP[@]}" "$BUILD/tools/master/yuebing-master" --rpc_port="$RPC_PORT" --rpc_address=127.0.0.1 \
  --metrics_port="$METRICS_PORT" "${MASTER_EXTRA[@]}" >"$WORK/master.log" 2>&1 &
MASTER=$!
PIDS+=("$MASTER")
wait_line "$WORK/master.log" "yuebing-master listening" 30
"$BUILD/tools/store/yuebing-store" --master_server_address="127.0.0.1:$RPC_PORT" \
  --global_segment_size="$STORE_SIZE" >"$WORK/store.log" 2>&1 &
PIDS+=($!)
wait_line "$WORK/store.log" "yuebing-store ready" 30

START_RSS=$(rss_kb "$MASTER")
"$BUILD/bench/yuebing-bench" churn --master_server_address="127.0.0.1:$RPC_PORT" \
  --block_size="$BLOCK" --batch_size="$BATCH" --duration="$DURATION" \
  >"$WORK/churn.out" 2>"$WORK/churn.err" &
CHURN=$!
PIDS+=("$CHURN")
T0=$SECONDS
WARM_RSS=0
WARM_OBJECTS=0
: >"$WORK/samples"
while kill -0 "$CHURN" 2>/dev/null; do
  sleep "$SAMPLE_S"
  kill -0 "$CHURN" 2>/dev/null || break
  t=$((SECONDS - T0))
  rss=$(rss_kb "$MASTER")
  n=$(objects)
  echo "$t $rss ${n:-0}" >>"$WORK/samples"
  if ((t <= WARMUP)); then
    ((rss > WARM_RSS)) && WARM_RSS=$rss
    WARM_OBJECTS=${n:-0}
  fi
  END_RSS=$rss
done
CHURN_RC=0
wait "$CHURN" || CHURN_RC=$?
[[ -n "${SAMPLES_OUT:-}" ]] && cp "$WORK/samples" "$SAMPLES_OUT"
cat "$WORK/churn.out"
if ((CHURN_RC != 0)); then
  echo "FAIL: the churn client failed:" >&2
  cat "$WORK/churn.err" >&2
  exit 1
fi
kill -0 "$MASTER" 2>/dev/null || { echo "FAIL: the master died" >&2; cat "$WORK/master.log" >&2; exit 1; }
TOTAL=$(awk '$1=="objects_written:" {print $2}' "$WORK/churn.out")
TOTAL=${TOTAL:-$(objects)}
if ((WARM_RSS == 0 || ${END_RSS:-0} == 0)); then
  echo "FAIL: no RSS samples after warm-up (DURATION $DURATION, WARMUP $WARMUP)" >&2
  exit 1
fi
GROWTH=$(python3 -c "print(f'{($END_RSS - $WARM_RSS) * 100 / $WARM_RSS:.2f}')")
PER_OBJ=$(python3 -c "n=${TOTAL:-0}-$WARM_OBJECTS; print(f'{($END_RSS - $WARM_RSS) * 1024 / n:.2f}' if n > 0 else 'n/a')")
echo "master RSS: start ${START_RSS} kB, after ${WARMUP} s warm-up ${WARM_RSS} kB" \
  "(${WARM_OBJECTS} objects written), end ${END_RSS} kB (${TOTAL} objects written):" \
  "growth ${GROWTH}% after warm-up, ${PER_OBJ} bytes per object written since"
if python3 -c "import sys; sys.exit(0 if $GROWTH <= $MAX_GROWTH_PCT else 1)"; then
  echo "PASS: master RSS grew ${GROWTH}% (limit ${MAX_GROWTH_PCT}%)"
else
  echo "FAIL: master RSS grew ${GROWTH}% after warm-up (limit ${MAX_GROWTH_PCT}%)" >&2
  exit 1
fi
