#!/usr/bin/env bash
# Builds the self-contained wheel and proves it installs and runs on a Debian 12 root that has
# python3 and nothing else of ours (no -dev packages, no gRPC, no Abseil):
#   1. `pip wheel .` (reusing build-py/ when scripts/test-python built it), then
#      `auditwheel repair`, which copies every shared library the extension and the packaged
#      binaries need into the wheel (yuebing.libs/) and tags it manylinux. libibverbs is not among
#      them: the RDMA transport opens it with dlopen when the host has it.
#   2. debootstrap --variant=minbase bookworm (+ python3, python3-venv) into a scratch folder,
#      from the mirror this machine's apt uses.
#   3. In that root, in a fresh PID namespace (everything started there dies with it): a venv,
#      `pip install --no-index` of the wheel, then yuebing-master and yuebing-store from the
#      console scripts and a put/get through `mooncake.store` with every byte compared.
# Needs root (debootstrap, chroot, unshare). Usage: tests/packaging/wheel_in_clean_debian.sh
# Environment: YUEBING_WHEEL_WORK (scratch folder; default a new temp dir, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "wheel_in_clean_debian: needs root (debootstrap, chroot)" >&2
  exit 1
fi
work="${YUEBING_WHEEL_WORK:-$(mktemp -d /tmp/yuebing-wheel.XXXXXX)}"
cleanup() {
  if [ -z "${YUEBING_WHEEL_WORK:-}" ]; then rm -rf --one-file-system "$work"; fi
}
trap cleanup EXIT
python=(python3)

echo "== building the wheel"
CMAKE_BUILD_PARALLEL_LEVEL="${YUEBING_JOBS:-2}" "${python[@]}" -m pip wheel -q --no-deps \
  --no-build-isolation --disable-pip-version-check -w "$work/dist" .
"${python[@]}" -m auditwheel repair -w "$work/wheelhouse" \
  "$work"/dist/yuebing-*.whl 2>&1 | grep -E "Fixed-up wheel|error|Error" || true
wheel=$(ls "$work"/wheelhouse/yuebing-*manylinux*.whl)
echo "wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

# The Debian mirror apt uses here (deb822 .sources or one-line sources.list), else
# debootstrap's own default.
mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
  grep -v security | head -n1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hsE '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security |
    head -n1 || true)
fi
echo "== debootstrap bookworm (minbase + python3) ${mirror:+from $mirror}"
root="$work/root"
debootstrap --variant=minbase --include=python3,python3-venv bookworm "$root" ${mirror:+"$mirror"} \
  >"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log"; exit 1; }
cp "$wheel" "$root/tmp/"

cat >"$root/tmp/quick_start.sh" <<'INNER'
set -eu
python3 -m venv /venv
/venv/bin/pip install -q --no-index --disable-pip-version-check /tmp/yuebing-*.whl
# Nothing of ours outside the venv: the wheel must carry every library it needs.
if ls /usr/lib/x86_64-linux-gnu | grep -qE 'libgrpc|libabsl|libprotobuf|libibverbs'; then
  echo "the clean root has gRPC/Abseil/protobuf/libibverbs installed" >&2; exit 1
fi
/venv/bin/yuebing-master --rpc_port=50551 --rpc_address=127.0.0.1 --metrics_port=0 \
  >/tmp/master.log 2>&1 &
for _ in $(seq 1 100); do grep -q "listening" /tmp/master.log && break; sleep 0.1; done
/venv/bin/yuebing-store --master_server_address=127.0.0.1:50551 --global_segment_size=64MB \
  >/tmp/store.log 2>&1 &
for _ in $(seq 1 100); do grep -q "ready" /tmp/store.log && break; sleep 0.1; done
cat /tmp/master.log /tmp/store.log
/venv/bin/python - <<'PY'
import os
from mooncake.store import MooncakeDistributedStore

store = MooncakeDistributedStore()
assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", "127.0.0.1:50551") == 0
values = {f"key-{i}": os.urandom(4096 << i) for i in range(8)}
for key, value in values.items():
    assert store.put(key, value) == 0, key
wrong = [key for key, value in values.items() if store.get(key) != value]
assert not wrong, f"wrong bytes for {wrong}"
store.close()
# protocol "rdma" on a host without libibverbs: the engine finds no device and uses TCP.
rdma = MooncakeDistributedStore()
assert rdma.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "rdma", "", "127.0.0.1:50551") == 0
assert all(rdma.get(key) == value for key, value in values.items())
rdma.close()
print(f"clean-root quick start: {len(values)} objects put and read back byte-exact")
PY
INNER
echo "== quick start inside the clean root"
# A PID namespace of its own: when its first process ends, the master and store end with it.
unshare --fork --pid --mount-proc="$root/proc" chroot "$root" /bin/sh /tmp/quick_start.sh
umount "$root/proc" 2>/dev/null || true
echo "wheel_in_clean_debian: passed"
