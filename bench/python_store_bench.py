#!/usr/bin/env python3
"""Same workload through Mooncake's Python store API on yuebing and on upstream Mooncake.

For each backend the script starts a cluster on 127.0.0.1 (a master and one process that
contributes --store-size of memory), then a client process that runs rounds of

    put_batch / get_batch            (bytes API: the binding copies)
    batch_put_from / batch_get_into  (zero-copy API over registered numpy buffers)
    put / get                        (one object per call)

with --batch objects of each --sizes value per call, and prints throughput and per-call latency
side by side. Objects are removed after each round, so the store never fills up.

In the same run it measures a ceiling: one raw loopback TCP stream (`yuebing-bench socket`, the
project's raw-socket baseline) sending buffers of each size, and names the rows where twice
upstream's rate is above that ceiling (a store over TCP on this host cannot be expected there).

Backends:
  yuebing      this repository's package (pip install .) with the binaries of --build-dir;
               same-host shared memory is switched off (YUEBING_ENABLE_SHM=0): data goes over TCP
  yuebing-shm  the same with shared memory on (the default deployment on one host)
  mooncake     the upstream `mooncake-transfer-engine-non-cuda` wheel, installed for the benchmark
               only into --upstream-dir (--install-upstream does `pip install --target`); it is
               never a dependency of yuebing. Its TCP transport is used.

Example:
  python3 bench/python_store_bench.py --install-upstream --sizes 4KiB,1MiB --batch 16
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

from stray_processes import warn_stray_processes

REPO = Path(__file__).resolve().parents[1]
UPSTREAM_PACKAGE = "mooncake-transfer-engine-non-cuda"
OPS = ["put_batch", "get_batch", "batch_put_from", "batch_get_into", "put", "get"]


def parse_size(text: str) -> int:
    t = text.strip().lower().replace("ib", "").replace("b", "")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Child:
    """A process whose output is collected; wait_for() blocks until a line contains a text."""

    def __init__(self, argv: List[str], env: Optional[Dict[str, str]] = None):
        self.argv = argv
        self.lines: List[str] = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        with self.cond:
            while time.monotonic() < deadline:
                for line in self.lines:
                    if text in line:
                        return line
                if self.proc.poll() is not None:
                    break
                self.cond.wait(0.2)
        raise RuntimeError(f"{self.argv[0]}: no {text!r}; output:\n" + "\n".join(self.lines[-30:]))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


# --- the client side (runs in its own process) --------------------------------------------------


def import_store(impl: str):
    if impl == "yuebing":
        from yuebing.store import MooncakeDistributedStore
        return MooncakeDistributedStore, "yuebing"
    import mooncake
    from mooncake.store import MooncakeDistributedStore

    if getattr(mooncake, "IMPLEMENTATION", "") == "yuebing":
        raise SystemExit("`mooncake` resolves to yuebing's alias, not upstream: check --upstream-dir")
    try:
        from importlib.metadata import version
        ver = version(UPSTREAM_PACKAGE)
    except Exception:  # noqa: BLE001
        ver = "?"
    return MooncakeDistributedStore, f"mooncake {ver}"


def connect(impl: str, master: str, segment: int, local_buffer: int):
    cls, label = import_store(impl)
    store = cls()
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", segment, local_buffer, "tcp", "", master)
    if rc != 0:
        raise SystemExit(f"{impl}: setup failed with {rc}")
    return store, label


def run_holder(args) -> None:
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    store, _ = connect(args.impl, args.master, parse_size(args.store_size), 16 << 20)
    print("holder ready", flush=True)
    while not stop.wait(0.5):
        pass
    store.close()


def percentile(values: List[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run_worker(args) -> None:
    import numpy as np

    store, label = connect(args.impl, args.master, 0, parse_size(args.local_buffer))
    results = {"label": label, "rows": []}
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        n = args.batch
        src = np.random.default_rng(size).integers(0, 256, n * size, dtype=np.uint8)
        dst = np.zeros(n * size, dtype=np.uint8)
        if store.register_buffer(src.ctypes.data, src.nbytes) != 0 or \
                store.register_buffer(dst.ctypes.data, dst.nbytes) != 0:
            raise SystemExit(f"{label}: register_buffer failed")
        values = [src[i * size:(i + 1) * size].tobytes() for i in range(n)]
        src_ptrs = [src.ctypes.data + i * size for i in range(n)]
        dst_ptrs = [dst.ctypes.data + i * size for i in range(n)]
        sizes = [size] * n
        stats = {op: {"lat": [], "bytes": 0, "time": 0.0, "errors": 0} for op in OPS}

        def timed(op, fn, nbytes, ok):
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
            if record:
                s = stats[op]
                s["lat"].append(dt)
                s["time"] += dt
                s["bytes"] += nbytes
                if not ok(out):
                    s["errors"] += 1
            return out

        def clean(keys):
            try:
                store.batch_remove(keys, True)
            except TypeError:
                for k in keys:
                    store.remove(k)

        for r in range(args.warmup + args.rounds):
            record = r >= args.warmup
            check = r in (args.warmup, args.warmup + args.rounds - 1)
            keys = [f"b{size}-{r}-{i}" for i in range(n)]
            timed("put_batch", lambda: store.put_batch(keys, values), n * size, lambda rc: rc == 0)
            got = timed("get_batch", lambda: store.get_batch(keys), n * size,
                        lambda v: len(v) == n and all(len(x) == size for x in v))
            if check and got != values:
                raise SystemExit(f"{label}: get_batch returned wrong bytes")
            clean(keys)
            keys = [f"z{size}-{r}-{i}" for i in range(n)]
            timed("batch_put_from", lambda: store.batch_put_from(keys, src_ptrs, sizes),
                  n * size, lambda rcs: all(rc == 0 for rc in rcs))
            if check:
                dst[:] = 0
            timed("batch_get_into", lambda: store.batch_get_into(keys, dst_ptrs, sizes), n * size,
                  lambda rcs: all(rc == size for rc in rcs))
            if check and not np.array_equal(src, dst):
                raise SystemExit(f"{label}: batch_get_into returned wrong bytes")
            clean(keys)
            keys = [f"s{size}-{r}-{i}" for i in range(n)]
            for i in range(n):
                timed("put", lambda: store.put(keys[i], values[i]), size, lambda rc: rc == 0)
            for i in range(n):
                timed("get", lambda: store.get(keys[i]), size, lambda v: len(v) == size)
            clean(keys)
        store.unregister_buffer(src.ctypes.data)
        store.unregister_buffer(dst.ctypes.data)
        for op in OPS:
            s = stats[op]
            results["rows"].append({
                "op": op, "size": size, "batch": n if op not in ("put", "get") else 1,
                "mib_s": s["bytes"] / (1 << 20) / s["time"] if s["time"] else 0.0,
                "p50_ms": percentile(s["lat"], 50) * 1e3,
                "p99_ms": percentile(s["lat"], 99) * 1e3,
                "calls": len(s["lat"]), "errors": s["errors"],
            })
    store.close()
    print("RESULT " + json.dumps(results), flush=True)


# --- the parent: clusters, workers and the report ---------------------------------------------


def start_cluster(backend: str, args, env: Dict[str, str]) -> List[Child]:
    rpc, metrics = free_port(), free_port()
    master_address = f"127.0.0.1:{rpc}"
    children: List[Child] = []
    try:
        if backend.startswith("yuebing"):
            build = Path(args.build_dir).resolve()
            master = Child([str(build / "tools/master/yuebing-master"), f"--rpc_port={rpc}",
                            "--rpc_address=127.0.0.1", f"--metrics_port={metrics}"], env)
            children.append(master)
            master.wait_for("yuebing-master listening")
            holder = Child([str(build / "tools/store/yuebing-store"),
                            f"--master_server_address={master_address}",
                            f"--global_segment_size={args.store_size}"], env)
            children.append(holder)
            holder.wait_for("yuebing-store ready")
        else:
            binary = Path(args.upstream_dir) / "mooncake" / "mooncake_master"
            master = Child([str(binary), f"--rpc_port={rpc}", "--rpc_address=127.0.0.1",
                            f"--metrics_port={metrics}", "--enable_http_metadata_server=false"],
                           env)
            children.append(master)
            wait_port(rpc)
            holder = Child([args.python, __file__, "--role", "holder", "--impl", "mooncake",
                            "--master", master_address, "--store-size", args.store_size], env)
            children.append(holder)
            holder.wait_for("holder ready")
    except Exception:
        for c in reversed(children):
            c.stop()
        raise
    args.master = master_address
    return children


def run_backend(backend: str, args) -> Optional[dict]:
    env = dict(os.environ)
    impl = "yuebing" if backend.startswith("yuebing") else "mooncake"
    if backend == "yuebing":
        env["YUEBING_ENABLE_SHM"] = "0"
    if impl == "mooncake":
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(args.upstream_dir).resolve())] + env.get("PYTHONPATH", "").split(os.pathsep))
        env.setdefault("MC_STORE_MEMCPY", "0")
        if args.upstream_malloc_tuning:
            # What yuebing's module does with mallopt at import, given to upstream by variables.
            env.setdefault("MALLOC_MMAP_THRESHOLD_", str(32 << 20))
            env.setdefault("MALLOC_TRIM_THRESHOLD_", str(256 << 20))
    env.setdefault("YUEBING_LOG_LEVEL", "warn")
    children = start_cluster(backend, args, env)
    try:
        worker = Child([args.python, __file__, "--role", "worker", "--impl", impl, "--master",
                        args.master, "--sizes", args.sizes, "--batch", str(args.batch),
                        "--rounds", str(args.rounds), "--warmup", str(args.warmup),
                        "--local-buffer", args.local_buffer], env)
        worker.proc.wait(args.timeout)
        for line in worker.lines:
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
                result["backend"] = backend
                return result
        print(f"[{backend}] failed (exit {worker.proc.returncode}):\n" +
              "\n".join(worker.lines[-30:]), file=sys.stderr)
        return None
    finally:
        for c in reversed(children):
            c.stop()


def raw_tcp_stream_mib_s(size: int, args) -> Optional[float]:
    """One loopback TCP stream of `size`-byte sends for 2 s (yuebing-bench socket); None on failure."""
    bench = Path(args.build_dir) / "bench" / "yuebing-bench"
    if not bench.exists():
        print(f"no {bench}: raw TCP ceiling skipped", file=sys.stderr)
        return None
    port = free_port()
    server = subprocess.Popen([str(bench), "socket", "--mode=server", f"--port={port}",
                               "--duration=30"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        client = subprocess.run([str(bench), "socket", "--mode=client", f"--port={port}",
                                 f"--block_size={size}", "--duration=2", "--report=json"],
                                capture_output=True, text=True, timeout=60)
        if client.returncode != 0:
            print(f"raw TCP stream of {human(size)} failed: {client.stderr[-500:]}", file=sys.stderr)
            return None
        return json.loads(client.stdout.strip().splitlines()[-1])["gbps"] * 1e9 / (1 << 20)
    finally:
        server.kill()
        server.wait()


def merge_runs(runs: List[dict]) -> dict:
    """One result per backend: the median over repeated runs of each figure."""
    def median(values):
        ordered = sorted(values)
        return ordered[len(ordered) // 2]

    merged = dict(runs[0])
    merged["rows"] = []
    for i, row in enumerate(runs[0]["rows"]):
        out = dict(row)
        for field in ("mib_s", "p50_ms", "p99_ms"):
            out[field] = median([r["rows"][i][field] for r in runs])
        out["errors"] = sum(r["rows"][i]["errors"] for r in runs)
        merged["rows"].append(out)
    merged["runs"] = len(runs)
    return merged


def report_ceiling(results: List[dict], ceiling: Dict[int, float], args) -> None:
    """Prints the raw TCP stream per size and the rows where 2x upstream is above it."""
    if not ceiling:
        return
    print(f"\nraw loopback TCP stream (yuebing-bench socket, one connection, 2 s, median of "
          f"{args.repeat}): " + ", ".join(f"{human(n)} {v:.0f} MiB/s" for n, v in ceiling.items()))
    upstream = next((r for r in results if r["backend"] == "mooncake"), None)
    if upstream is None:
        return
    above = [f"{row['op']} {human(row['size'])} (2x = {2 * row['mib_s']:.0f})"
             for row in upstream["rows"]
             if row["size"] in ceiling and 2 * row["mib_s"] > ceiling[row["size"]]]
    print("rows where 2x upstream is above the raw TCP stream: " + (", ".join(above) or "none"))


def report(results: List[dict], args) -> None:
    print(f"\nworkload: --batch {args.batch} objects per batch call, {args.rounds} rounds "
          f"(+{args.warmup} warm-up), one store server of {args.store_size}, 127.0.0.1; "
          f"medians of {args.repeat} alternating run(s) per backend")
    head = f"{'op':<16}{'size':>7}{'batch':>6}"
    for r in results:
        head += f" | {r['label'] + (' shm' if r['backend'] == 'yuebing-shm' else ''):^26}"
    if len(results) > 1:
        head += f" | {'x vs ' + results[-1]['label'].split()[0]:>10}"
    print(head)
    sub = " " * 29 + "".join(f" | {'MiB/s':>8} {'p50 ms':>8} {'p99 ms':>8}" for _ in results)
    print(sub)
    print("-" * len(sub))
    base = results[-1] if len(results) > 1 else None
    for i, row in enumerate(results[0]["rows"]):
        line = f"{row['op']:<16}{human(row['size']):>7}{row['batch']:>6}"
        for r in results:
            x = r["rows"][i]
            err = "!" if x["errors"] else " "
            line += f" | {x['mib_s']:>8.1f} {x['p50_ms']:>8.3f} {x['p99_ms']:>7.3f}{err}"
        if base is not None and base["rows"][i]["mib_s"] > 0:
            line += f" | {results[0]['rows'][i]['mib_s'] / base['rows'][i]['mib_s']:>9.2f}x"
        print(line)
    if any(x["errors"] for r in results for x in r["rows"]):
        print("! = some calls of this row returned an error")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--role", choices=["main", "worker", "holder"], default="main",
                   help=argparse.SUPPRESS)
    p.add_argument("--impl", default="yuebing", help=argparse.SUPPRESS)
    p.add_argument("--master", default="", help=argparse.SUPPRESS)
    p.add_argument("--backends", default="",
                   help="comma list of yuebing, yuebing-shm, mooncake (default: yuebing and, "
                        "when installed, mooncake)")
    p.add_argument("--sizes", default="1MiB", help="object sizes, e.g. 4KiB,1MiB")
    p.add_argument("--batch", type=int, default=16, help="objects per batch call")
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3,
                   help="runs per backend, alternating backends; figures are medians")
    p.add_argument("--store-size", default="2GB", help="memory of the store server")
    p.add_argument("--local-buffer", default="512MB", help="client local_buffer_size")
    p.add_argument("--build-dir", default=os.environ.get("YUEBING_BUILD_DIR", str(REPO / "build")))
    p.add_argument("--upstream-dir", default=str(REPO / "build-py" / "upstream-mooncake"),
                   help="where the upstream wheel is (or is to be) installed")
    p.add_argument("--install-upstream", action="store_true",
                   help=f"pip install {UPSTREAM_PACKAGE} --target --upstream-dir first")
    p.add_argument("--upstream-malloc-tuning", action="store_true",
                   help="give upstream the malloc settings yuebing applies to itself at import")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--timeout", type=float, default=900, help="seconds per backend")
    p.add_argument("--json", default="", help="also write the results to this file")
    p.add_argument("--no-ceiling", action="store_true",
                   help="skip the raw loopback TCP stream measured per size")
    args = p.parse_args()

    if args.role == "worker":
        return run_worker(args)
    if args.role == "holder":
        return run_holder(args)
    warn_stray_processes()

    if args.install_upstream and not (Path(args.upstream_dir) / "mooncake" / "store.so").exists():
        subprocess.check_call([args.python, "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", "--target", args.upstream_dir,
                               UPSTREAM_PACKAGE])
    have_upstream = any((Path(args.upstream_dir) / "mooncake").glob("store*.so"))
    backends = [b for b in args.backends.split(",") if b] or \
        (["yuebing", "mooncake"] if have_upstream else ["yuebing"])
    if "mooncake" in backends and not have_upstream:
        print(f"upstream Mooncake not found in {args.upstream_dir}; use --install-upstream",
              file=sys.stderr)
        backends.remove("mooncake")
    runs: Dict[str, List[dict]] = {b: [] for b in backends}
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    streams: Dict[int, List[float]] = {n: [] for n in sizes}
    for repeat in range(args.repeat):  # backends alternate, so drifts of the machine hit all
        for backend in backends:
            print(f"[{backend}] run {repeat + 1}/{args.repeat} ...", file=sys.stderr, flush=True)
            result = run_backend(backend, args)
            if result is not None:
                runs[backend].append(result)
        if not args.no_ceiling:
            for n in sizes:
                rate = raw_tcp_stream_mib_s(n, args)
                if rate is not None:
                    streams[n].append(rate)
    results = [merge_runs(r) for r in runs.values() if r]
    if not results:
        raise SystemExit("no backend produced results")
    report(results, args)
    ceiling = {n: sorted(v)[len(v) // 2] for n, v in streams.items() if v}
    report_ceiling(results, ceiling, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
