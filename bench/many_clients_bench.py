#!/usr/bin/env python3
"""Many store clients on one host against one store server and one master (as 8 TP ranks).

For each transport (tcp: clients use TCP only; shm: same-host shared memory, the default on one
host) the script starts a yuebing-master and one yuebing-store of --store-size on 127.0.0.1, then:

  data   `yuebing-bench store --store_phases=data`: batched put then get (every byte checked) of
         --bytes-per-client of one value size, --batch objects per call; first one client alone
         (the baseline), then --clients processes at once; each size is its own run;
  exist  `yuebing-bench store --store_phases=exist`: batched Exist of --exist-batch keys per
         call for --duration seconds, one client alone, then --clients at once.

The processes of a run connect first and make their first call together (--start_at, a wall
clock time); aggregate rates are the bytes (or keys) of every process over the window from the
first call of any of them to the end of the last. It prints the aggregate, the single client's rate and their
ratio for each row, and the master's batched keys/s against issue #14's target (>= 1M keys/s).
Exit status 0 when every run succeeded with exact bytes.

  python3 bench/many_clients_bench.py [--build-dir build] [--clients 8]
      [--sizes 4KB,64KB,1MB,4MB] [--bytes-per-client 256MB] [--transports tcp,shm]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from python_store_bench import Child, free_port, parse_size  # noqa: E402
from stray_processes import warn_stray_processes  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KEYS_PER_S_TARGET = 1_000_000


def start_cluster(build: Path, store_size: str) -> tuple:
    rpc, metrics = free_port(), free_port()
    master = Child([str(build / "tools/master/yuebing-master"), f"--rpc_port={rpc}",
                    "--rpc_address=127.0.0.1", f"--metrics_port={metrics}"])
    master.wait_for("yuebing-master listening")
    address = f"127.0.0.1:{rpc}"
    store = Child([str(build / "tools/store/yuebing-store"), f"--master_server_address={address}",
                   f"--global_segment_size={store_size}"])
    store.wait_for("yuebing-store ready")
    return address, [store, master]


def run_clients(build: Path, count: int, flags: List[str], timeout: float) -> List[List[dict]]:
    """`count` yuebing-bench store processes whose first calls start together; their reports."""
    procs = []
    start_at = time.time() + 1.0 + 0.25 * count  # time for every process to connect
    for i in range(count):
        argv = [str(build / "bench/yuebing-bench"), "store", "--report=json",
                f"--key_tag=c{i}-{count}-", f"--start_at={start_at:.3f}", *flags]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    reports = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise RuntimeError(f"a client ran past {timeout} s")
        if proc.returncode != 0:
            raise RuntimeError(f"client failed ({proc.returncode}): {err.strip()[-2000:]}")
        reports.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
    return reports


def aggregate(reports: List[List[dict]], test: str, key: str, value) -> Dict[str, float]:
    """Per phase: total bytes over the union of the processes' windows, failures, mismatches."""
    rows = [r for per_proc in reports for r in per_proc
            if r.get("test") == test and r.get(key) == value]
    out: Dict[str, float] = {}
    for phase in ("put", "get"):
        seconds = window(rows, phase)
        total = sum(r[f"{phase}_bytes"] for r in rows)
        out[f"{phase}_gbps"] = total / seconds / 1e9 if seconds > 0 else 0.0
        out[f"{phase}_failures"] = sum(r[f"{phase}_failures"] for r in rows)
    out["mismatches"] = sum(r.get("get_mismatches", 0) for r in rows)
    return out


def window(rows: List[dict], phase: str) -> float:
    """Seconds from the earliest start to the latest end of `phase` over `rows`."""
    starts = [r[f"{phase}_wall_start"] for r in rows if r[f"{phase}_wall_start"] > 0]
    ends = [r[f"{phase}_wall_end"] for r in rows if r[f"{phase}_wall_end"] > 0]
    return max(ends) - min(starts) if starts and ends else 0.0


def exist_rate(reports: List[List[dict]]) -> tuple:
    rows = [r for per_proc in reports for r in per_proc if r.get("test") == "store_exist"]
    keys = sum(r["exist_ops"] for r in rows)
    failures = sum(r["exist_failures"] for r in rows)
    seconds = window(rows, "exist")
    return (keys / seconds if seconds > 0 else 0.0), failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default=str(REPO / "build"))
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sizes", default="4KB,64KB,1MB,4MB")
    parser.add_argument("--bytes-per-client", default="256MB")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--exist-batch", type=int, default=4096)
    parser.add_argument("--duration", type=int, default=5, help="seconds of each exist run")
    parser.add_argument("--store-size", default="3GB")
    parser.add_argument("--transports", default="tcp,shm")
    args = parser.parse_args()
    warn_stray_processes()
    build = Path(args.build_dir)
    sizes = [s for s in args.sizes.split(",") if s]
    failed = False
    lines = []
    for transport in [t for t in args.transports.split(",") if t]:
        if transport not in ("tcp", "shm"):
            parser.error(f"unknown transport {transport}")
        address, children = start_cluster(build, args.store_size)
        try:
            common = [f"--master_server_address={address}",
                      f"--store_shm={'true' if transport == 'shm' else 'false'}"]
            data = [*common, "--store_phases=data",
                    f"--store_bytes_per_size={args.bytes_per_client}",
                    f"--batch_size={args.batch}"]
            exist = [*common, "--store_phases=exist", f"--exist_batch={args.exist_batch}",
                     f"--duration={args.duration}"]
            t0 = time.monotonic()
            one, many = [], []
            for size in sizes:
                one += run_clients(build, 1, [*data, f"--value_sizes={size}"], timeout=1800)
                many += run_clients(build, args.clients, [*data, f"--value_sizes={size}"],
                                    timeout=1800)
            one_exist = run_clients(build, 1, exist, timeout=300)
            many_exist = run_clients(build, args.clients, exist, timeout=300)
            print(f"[{transport}] runs took {time.monotonic() - t0:.0f} s", file=sys.stderr)
        finally:
            for child in children:
                child.stop()
        for text in sizes:
            size = parse_size(text)
            a1 = aggregate(one, "store", "value_size", size)
            an = aggregate(many, "store", "value_size", size)
            bad = sum(a1[k] + an[k] for k in ("put_failures", "get_failures", "mismatches"))
            failed |= bad > 0
            for phase in ("put", "get"):
                ratio = an[f"{phase}_gbps"] / a1[f"{phase}_gbps"] if a1[f"{phase}_gbps"] else 0
                lines.append(f"| {transport} | {text} | batch {phase} | {a1[f'{phase}_gbps']:.2f} | "
                             f"{an[f'{phase}_gbps']:.2f} | {ratio:.2f} |")
            if bad:
                lines.append(f"| {transport} | {text} | FAILURES/MISMATCHES | {bad} | | |")
        r1, f1 = exist_rate(one_exist)
        rn, fn = exist_rate(many_exist)
        failed |= (f1 + fn) > 0
        verdict = "met" if rn >= KEYS_PER_S_TARGET else "not met"
        lines.append(f"| {transport} | {args.exist_batch} keys/call | batch Exist keys/s | "
                     f"{r1:,.0f} | {rn:,.0f} ({verdict}: >= 1M) | {rn / r1 if r1 else 0:.2f} |")
    print(f"\n{args.clients} clients vs 1 against one store server ({args.store_size}) and one "
          f"master, 127.0.0.1, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}")
    print(f"{args.bytes_per_client} per client per size, batch {args.batch}; GB/s = all bytes over "
          "the window from the first call of any client to the end of the last")
    print(f"| transport | size | op | 1 client | {args.clients} clients (aggregate) | ratio |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
