#!/usr/bin/env bash
# Mixed cluster soak: the master's resident memory, threads and open files stay flat while the
# cluster around it changes. On 127.0.0.1 it runs a yuebing-master (--client_ttl=2), a stable
# store A and a store B that is killed (kill -9) every KILL_EVERY seconds and started again once
# the master has expired it, and for DURATION seconds:
#   - one churn client (`yuebing-bench churn`: batch put, get, remove of fresh keys) whose puts
#     prefer store A: none of its calls may fail and no byte may be wrong;
#   - a stream of short-lived clients, one after another, each with its own 16 MB segment (so
#     each join mounts and each exit unmounts), churning for 2 s with puts preferring store B:
#     calls that hit B while it is down may fail, wrong bytes may not.
# It samples the master's VmRSS, thread count and open file descriptors every second and fails
# when, after the first WARMUP seconds, RSS grows by more than MAX_GROWTH_PCT percent over its
# warm-up maximum, or threads or descriptors end more than THREAD_SLACK / FD_SLACK above theirs.
#   tests/soak/cluster_soak.sh [BUILD_DIR]    (default: build)
# Exit status: 0 pass, 1 fail (growth, a failed churn client, a dead master), 2 bad settings.
# Run by scripts/test with its defaults; figures in docs/reliability.md ("Cluster soak").
# Environment: DURATION (60), WARMUP (20), KILL_EVERY (10), MAX_GROWTH_PCT (5), THREAD_SLACK (2),
# FD_SLACK (8), SAMPLES_OUT (file for "seconds rss_kb threads fds" samples; default none).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
DURATION="${DURATION:-60}"
WARMUP="${WARMUP:-20}"
KILL_EVERY="${KILL_EVERY:-10}"
MAX_GROWTH_PCT="${MAX_GROWTH_PCT:-5}"
THREAD_SLACK="${THREAD_SLACK:-2}"
FD_SLACK="${FD_SLACK:-8}"
CLIENT_TTL=2  # seconds: a killed store's segment name is free again after this
if ((WARMUP >= DURATION)); then
  echo "WARMUP ($WARMUP) must be below DURATION ($DURATION)" >&2
  exit 2
fi
source bench/local_cluster_lib.sh
RPC_PORT=$(free_port)
MASTER_ADDR="127.0.0.1:$RPC_PORT"
status_field() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

"$BUILD/tools/master/yuebing-master" --rpc_port="$RPC_PORT" --rpc_address=127.0.0.1 \
  --metrics_port="$(free_port)" --client_ttl="$CLIENT_TTL" >"$WORK/master.log" 2>&1 &
MASTER=$!
PIDS+=("$MASTER")
wait_line "$WORK/master.log" "yuebing-master listening" 30

# start_store NAME PORT: a store whose engine listens on PORT (so a restart keeps its segment
# name); prints its pid.
start_store() {
  : >"$WORK/$1.log"
  "$BUILD/tools/store/yuebing-store" --master_server_address="$MASTER_ADDR" \
    --global_segment_size=256MB --local_hostname="127.0.0.1:$2" >>"$WORK/$1.log" 2>&1 &
  echo $!
}
PORT_A=$(free_port)
PORT_B=$(free_port)
STORE_A=$(start_store a "$PORT_A")
PIDS+=("$STORE_A")
wait_line "$WORK/a.log" "yuebing-store ready" 30
STORE_B=$(start_store b "$PORT_B")
wait_line "$WORK/b.log" "yuebing-store ready" 30

"$BUILD/bench/yuebing-bench" churn --master_server_address="$MASTER_ADDR" --block_size=4KB \
  --batch_size=64 --duration="$DURATION" --churn_preferred_segment="127.0.0.1:$PORT_A" \
  >"$WORK/churn.out" 2>"$WORK/churn.err" &
CHURN=$!
PIDS+=("$CHURN")

VISITS=0
VISIT_FAIL=0
visitor=""
T0=$SECONDS
NEXT_KILL=$KILL_EVERY
KILLS=0
WARM_RSS=0 WARM_THREADS=0 WARM_FDS=0
: >"$WORK/samples"
while kill -0 "$CHURN" 2>/dev/null; do
  sleep 1
  t=$((SECONDS - T0))
  # One short-lived client at a time: a new one when the last has left.
  if [[ -z "$visitor" ]] || ! kill -0 "$visitor" 2>/dev/null; then
    if [[ -n "$visitor" ]]; then
      wait "$visitor" || VISIT_FAIL=$((VISIT_FAIL + 1))
      VISITS=$((VISITS + 1))
    fi
    if ((t + 3 < DURATION)); then
      "$BUILD/bench/yuebing-bench" churn --master_server_address="$MASTER_ADDR" \
        --block_size=16KB --batch_size=16 --duration=2 --store_segment_size=16MB \
        --churn_preferred_segment="127.0.0.1:$PORT_B" --churn_tolerate_failures \
        >>"$WORK/visitors.out" 2>>"$WORK/visitors.err" &
      visitor=$!
    else
      visitor=""
    fi
  fi
  if ((t >= NEXT_KILL && t + CLIENT_TTL + 5 < DURATION)); then
    kill -9 "$STORE_B" 2>/dev/null || true
    wait "$STORE_B" 2>/dev/null || true
    # The master keeps the dead store's segment until its client TTL passes; then the restarted
    # store (same engine port, so the same segment name) mounts it anew.
    sleep $((CLIENT_TTL + 1))
    STORE_B=$(start_store b "$PORT_B")
    if ! wait_line "$WORK/b.log" "yuebing-store ready" 10; then
      echo "FAIL: store B did not come back after kill $((KILLS + 1))" >&2
      exit 1
    fi
    KILLS=$((KILLS + 1))
    NEXT_KILL=$((NEXT_KILL + KILL_EVERY))
  fi
  kill -0 "$MASTER" 2>/dev/null || break
  rss=$(status_field "$MASTER" VmRSS)
  threads=$(status_field "$MASTER" Threads)
  nfd=$(fds "$MASTER")
  echo "$t $rss $threads $nfd" >>"$WORK/samples"
  if ((t <= WARMUP)); then
    ((rss > WARM_RSS)) && WARM_RSS=$rss
    ((threads > WARM_THREADS)) && WARM_THREADS=$threads
    ((nfd > WARM_FDS)) && WARM_FDS=$nfd
  fi
  END_RSS=$rss END_THREADS=$threads END_FDS=$nfd
done
PIDS+=("$STORE_B")
CHURN_RC=0
wait "$CHURN" || CHURN_RC=$?
if [[ -n "$visitor" ]]; then
  wait "$visitor" || VISIT_FAIL=$((VISIT_FAIL + 1))
  VISITS=$((VISITS + 1))
fi
[[ -n "${SAMPLES_OUT:-}" ]] && cp "$WORK/samples" "$SAMPLES_OUT"
[[ -n "${VISITORS_OUT:-}" ]] && cp "$WORK/visitors.out" "$WORK/visitors.err" "$VISITORS_OUT"
cat "$WORK/churn.out"
kill -0 "$MASTER" 2>/dev/null || { echo "FAIL: the master died" >&2; cat "$WORK/master.log" >&2; exit 1; }
if ((CHURN_RC != 0)); then
  echo "FAIL: the churn client on the stable store failed:" >&2
  cat "$WORK/churn.err" >&2
  exit 1
fi
if ((VISIT_FAIL > 0)); then
  echo "FAIL: $VISIT_FAIL of $VISITS short-lived clients failed (wrong bytes, or could not start):" >&2
  tail -20 "$WORK/visitors.err" >&2
  exit 1
fi
if ((WARM_RSS == 0 || ${END_RSS:-0} == 0)); then
  echo "FAIL: no samples after warm-up (DURATION $DURATION, WARMUP $WARMUP)" >&2
  exit 1
fi
VISITOR_FAILED_CALLS=$(awk '$1 ~ /_failures:$/ {n += $2} END {print n + 0}' "$WORK/visitors.out")
GROWTH=$(python3 -c "print(f'{($END_RSS - $WARM_RSS) * 100 / $WARM_RSS:.2f}')")
echo "cluster soak: ${DURATION} s, ${KILLS} kills of store B, ${VISITS} short-lived clients" \
  "(${VISITOR_FAILED_CALLS} of their calls failed while B was down, none with wrong bytes)"
echo "master after ${WARMUP} s warm-up (max) -> end: RSS ${WARM_RSS} -> ${END_RSS} kB" \
  "(${GROWTH}%), threads ${WARM_THREADS} -> ${END_THREADS}, fds ${WARM_FDS} -> ${END_FDS}"
FAILED=0
if ! python3 -c "import sys; sys.exit(0 if $GROWTH <= $MAX_GROWTH_PCT else 1)"; then
  echo "FAIL: master RSS grew ${GROWTH}% (limit ${MAX_GROWTH_PCT}%)" >&2
  FAILED=1
fi
if ((END_THREADS > WARM_THREADS + THREAD_SLACK)); then
  echo "FAIL: master threads ${WARM_THREADS} -> ${END_THREADS} (slack ${THREAD_SLACK})" >&2
  FAILED=1
fi
if ((END_FDS > WARM_FDS + FD_SLACK)); then
  echo "FAIL: master fds ${WARM_FDS} -> ${END_FDS} (slack ${FD_SLACK})" >&2
  FAILED=1
fi
((FAILED == 0)) && echo "PASS: master RSS, threads and fds flat after warm-up"
exit "$FAILED"
