#!/usr/bin/env python3
"""Put latency of one client while another client's segment of many objects unmounts, through the
real processes and the `mooncake` Python API (yuebing's binding under upstream's name).

Starts a yuebing-master on 127.0.0.1; client A (its own process) mounts a segment, fills it with
--objects objects of 16 bytes (put_batch, 4096 keys a call) and, when told, closes (its store
unmounts the segment: the master drops every object on it); client B (another process) puts and
removes 4 KiB objects one at a time in a loop from before A's close until after it. Prints B's put
latency p50/p99/max in the second before A's close and during it, their ratio, and how long the
close took. Fails when any call fails or an object of A is still there after its close.

    python3 bench/master_unmount_bench.py [--build build] [--objects 1000000]
"""
import argparse
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import tempfile
import time

VALUE = b"v" * 16
BATCH = 4096


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_store(master, segment_bytes):
    from mooncake.store import MooncakeDistributedStore

    store = MooncakeDistributedStore()
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", segment_bytes, 16 << 20, "tcp", "", master)
    if rc != 0:
        raise RuntimeError(f"setup failed: {rc}")
    return store


def client_a(master, objects, ready, go, results):
    try:
        # 64 bytes a slot (the master's allocation alignment) plus room to spare.
        store = new_store(master, max(64 << 20, objects * 64 * 5 // 4))
        start = time.monotonic()
        for first in range(0, objects, BATCH):
            keys = [f"a-{i}" for i in range(first, min(objects, first + BATCH))]
            rc = store.put_batch(keys, [VALUE] * len(keys))
            if rc != 0:
                raise RuntimeError(f"put_batch at {first} failed: {rc}")
        results.put(("filled", time.monotonic() - start))
        ready.set()
        go.wait()
        begin = time.monotonic()
        rc = store.close()
        end = time.monotonic()
        results.put(("closed", begin, end, rc))
    except Exception as e:  # reported to the parent, which fails the run
        results.put(("error", f"client A: {e}"))
        ready.set()


def client_b(master, stop, results):
    try:
        from mooncake.store import ReplicateConfig

        store = new_store(master, 64 << 20)
        own = ReplicateConfig()
        own.preferred_segment = store.get_hostname()  # B's puts stay on B's segment throughout
        value = b"b" * 4096
        samples = []
        i = 0
        while not stop.is_set():
            key = f"b-{i}"
            t0 = time.monotonic()
            rc = store.put(key, value, own)
            t1 = time.monotonic()
            if rc != 0 or store.remove(key) != 0:
                raise RuntimeError(f"put/remove of {key} failed: {rc}")
            samples.append((t0, t1 - t0))
            i += 1
        results.put(("samples", samples))
        store.close()
    except Exception as e:
        results.put(("error", f"client B: {e}"))


def quantile(latencies, q):
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(latencies):
    if not latencies:
        return "n=0"
    return (f"n={len(latencies):<7} p50 {quantile(latencies, 0.5) * 1e6:8.1f} us  "
            f"p99 {quantile(latencies, 0.99) * 1e6:8.1f} us  max {max(latencies) * 1e6:9.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--objects", type=int, default=1_000_000)
    args = parser.parse_args()
    port = free_port()
    master = f"127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as work:
        log = open(os.path.join(work, "master.log"), "w")
        proc = subprocess.Popen(
            [os.path.join(args.build, "tools/master/yuebing-master"), f"--rpc_port={port}",
             "--rpc_address=127.0.0.1", "--metrics_port=0"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            return run(master, args.objects, proc)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def run(master, objects, master_proc):
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", int(master.split(":")[1])), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or master_proc.poll() is not None:
                print("FAIL: the master did not start", file=sys.stderr)
                return 1
            time.sleep(0.05)
    ctx = mp.get_context("spawn")
    ready, go, stop = ctx.Event(), ctx.Event(), ctx.Event()
    results = ctx.Queue()
    a = ctx.Process(target=client_a, args=(master, objects, ready, go, results))
    a.start()
    ready.wait()
    b = ctx.Process(target=client_b, args=(master, stop, results))
    b.start()
    time.sleep(3)  # B's baseline (its setup, then about two seconds of puts)
    go.set()
    got = {}
    while "closed" not in got and "error" not in got:
        item = results.get(timeout=600)
        got[item[0]] = item[1:]
    time.sleep(1)
    stop.set()
    while "samples" not in got and "error" not in got:
        item = results.get(timeout=60)
        got[item[0]] = item[1:]
    a.join(30)
    b.join(30)
    if "error" in got:
        print(f"FAIL: {got['error'][0]}", file=sys.stderr)
        return 1
    begin, end, rc = got["closed"]
    samples = got["samples"][0]
    before = [d for t, d in samples if begin - 1.0 <= t < begin]
    during = [d for t, d in samples if begin <= t < end]
    print(f"objects: {objects} on A (filled in {got['filled'][0]:.1f} s)")
    print(f"A's close (unmount of its segment): {end - begin:.3f} s, rc {rc}")
    print(f"B put latency, 1 s before:  {summary(before)}")
    print(f"B put latency, during close: {summary(during)}")
    if before and during:
        print(f"p99 during / before: {quantile(during, 0.99) / quantile(before, 0.99):.2f}")
    # Nothing of A is left (sampled), through a fresh client.
    check = new_store(master, 16 << 20)
    left = sum(check.is_exist(f"a-{i}") == 1 for i in range(0, objects, max(1, objects // 1000)))
    check.close()
    if rc != 0 or left:
        print(f"FAIL: close rc {rc}, {left} sampled objects of A still there", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
