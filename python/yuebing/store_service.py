"""A store process with a REST API: Mooncake's ``mooncake.mooncake_store_service`` on yuebing.

    python -m yuebing.store_service --config store.json --port 8080 [-D key=value ...]
    python -m mooncake.mooncake_store_service ...          # the same module, upstream's name

The process sets up a ``MooncakeDistributedStore`` (config from ``--config`` or the MOONCAKE_*
variables, see yuebing.config; ``-D field=value`` overrides a field), retrying once a second for
up to ``--max-wait-time`` seconds, then serves (aiohttp, ``pip install aiohttp``):

==========================  ======  ===========================================================
path                        method  body -> answer
==========================  ======  ===========================================================
/api/put                    PUT     {"key", "value" (text)} -> {"status": "success"}
/api/get/{key}              GET     the value's bytes (application/octet-stream); 404 if absent
/api/exist/{key}            GET     {"exists": bool}
/api/remove/{key}           DELETE  {"status": "success"}
/api/remove_all             DELETE  {"status": "success removed N keys"}
/api/mount_shm              POST    {"name", "size", "offset"?, "protocol"?, "location"?}
/api/unmount_shm            POST    {"segment_ids", "grace_period_seconds"?}
/api/mount                  POST    {"size" (positive int), "protocol"?, "location"?}
/api/unmount                POST    {"segment_ids", "grace_period_seconds"?}
/api/unmount_local_disk     POST    {"grace_period_seconds"? (0..3600)}
/api/reconfigure            POST    {"mode": "prefill"} or {"mode": "decode", "path", "size", ...}
==========================  ======  ===========================================================

Errors are JSON ``{"error": text}`` with 400 (bad request) or 500 (the store refused or failed).
The segment endpoints call the store's ``mount_segment``/``unmount_segment``/
``allocate_and_mount_segment``/``unmount_and_free_segment``/``unmount_local_disk_segment``, which
yuebing's store does not have yet (docs/compatibility.md): with it they answer 500 naming the
missing method. Unlike upstream, store calls run on worker threads (the binding releases the
GIL), so one slow call does not stall the other requests, and a body that is not a JSON object
is a 400, not a 500.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
from typing import Any, Dict, List, Optional, Tuple

try:
    from aiohttp import web
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("yuebing.store_service needs aiohttp: pip install aiohttp") from e

# Module-level names as upstream's (its tests patch them here).
from yuebing._signals import unblock_shutdown_signals as _unblock_shutdown_signals
from yuebing.config import MooncakeConfig
from yuebing.store import MooncakeDistributedStore

logger = logging.getLogger(__name__)

# The longest /api/unmount_local_disk may hold its caller (a preStop hook), in seconds.
_MAX_UNMOUNT_LOCAL_DISK_GRACE_PERIOD_SECONDS = 3600
_MAX_BODY_BYTES = 100 * 1024 * 1024


def _shm_name_to_path(name: Any) -> Optional[str]:
    """``/dev/shm/<name>`` for a plain shared-memory name (one leading '/' allowed), else None."""
    if not isinstance(name, str):
        return None
    plain = name[1:] if name.startswith("/") else name
    if plain in ("", ".", "..") or "/" in plain:
        return None
    return "/dev/shm/" + plain


def _install_shutdown_signal_handlers(loop, shutdown_event: asyncio.Event) -> None:
    """SIGINT and SIGTERM set `shutdown_event` (from the loop's thread)."""

    def on_signal(signum) -> None:
        logger.info("signal %s: shutting down", signum)
        shutdown_event.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no unix signals
            signal.signal(sig, lambda signum, _frame: loop.call_soon_threadsafe(on_signal, signum))


def _answer(http_status: int, **body: Any) -> web.Response:
    """A JSON answer: `body` as an object (its "status" field is not the HTTP status)."""
    return web.Response(status=http_status, text=json.dumps(body), content_type="application/json")


def _error(http_status: int, message: str, **extra: Any) -> web.Response:
    return _answer(http_status, error=message, **extra)


async def _json_object(request) -> Tuple[Optional[Dict[str, Any]], Optional[web.Response]]:
    """The request's JSON object body, or the 400 answer for a malformed or non-object one."""
    try:
        data = await request.json()
    except Exception:  # aiohttp raises JSONDecodeError or a content error
        return None, _error(400, "Malformed JSON body")
    if not isinstance(data, dict):
        return None, _error(400, "Request body must be a JSON object")
    return data, None


async def _unmount_request(request) -> Tuple[Dict[str, Any], List[str], Optional[web.Response]]:
    """(body, segment ids, None), or the 400 answer for a bad body or no segment_ids (one id may
    be given as a string)."""
    data, bad = await _json_object(request)
    if bad is not None:
        return {}, [], bad
    ids = data.get("segment_ids", [])
    ids = [ids] if isinstance(ids, str) else list(ids) if isinstance(ids, (list, tuple)) else []
    return data, ids, None if ids else _error(400, "Missing segment_ids")


class MooncakeStoreService:
    """One store (``self.store``) and its REST API. Handlers are coroutines on one event loop;
    segment state (``current_mode``, ``mounted_segment_ids``, ``last_mount_info``) changes under
    ``_state_lock``."""

    def __init__(self, config_path: Optional[str] = None, cli_config: Optional[dict] = None):
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
        self.store = None
        self.current_mode = "prefill"  # "prefill" (no extra segments) or "decode"
        self.mounted_segment_ids: List[str] = []
        self.last_mount_info: Dict[str, Any] = {}
        self._state_lock = asyncio.Lock()
        self._runner = None
        self.config = (MooncakeConfig.from_file(config_path) if config_path else
                       MooncakeConfig.load_from_env())
        for key, value in (cli_config or {}).items():
            if hasattr(self.config, key):
                setattr(self.config, key, value)
            else:
                logger.warning("ignoring unknown config field %r", key)

    def _setup_dict(self) -> Dict[str, Any]:
        c = self.config
        return {
            "local_hostname": c.local_hostname,
            "metadata_server": c.metadata_server,
            "global_segment_size": c.global_segment_size,
            "local_buffer_size": c.local_buffer_size,
            "protocol": c.protocol,
            "rdma_devices": c.device_name,
            "master_server_addr": c.master_server_address,
            "enable_ssd_offload": c.enable_ssd_offload,
            "ssd_offload_path": c.ssd_offload_path,
            "tenant_id": c.tenant_id,
            "enable_client_http_server": getattr(c, "enable_client_http_server", False),
            "client_http_port": getattr(c, "client_http_port", 9300),
        }

    async def start_store_service(self, max_wait_time: float = 60,
                                  shutdown_event: Optional[asyncio.Event] = None) -> bool:
        """Sets up the store, retrying once a second until it works (True), `max_wait_time`
        seconds pass or `shutdown_event` is set (False; a store already set up is closed)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_time
        attempt = 0
        while True:
            if shutdown_event is not None and shutdown_event.is_set():
                logger.info("store start-up cancelled by a shutdown request")
                return False
            if loop.time() >= deadline:
                logger.error("the store did not start within %ss (%d attempts)", max_wait_time,
                             attempt)
                return False
            attempt += 1
            try:
                # On the loop's thread: nothing else is served yet, and callers may schedule
                # loop callbacks from setup().
                self.store = MooncakeDistributedStore()
                ret = self.store.setup(self._setup_dict())
                if ret != 0:
                    raise RuntimeError(f"setup returned {ret}")
            except Exception as e:  # the master may not be up yet: try again
                self.store = None
                wait = max(0.0, min(1.0, deadline - loop.time()))
                logger.warning("store start-up attempt %d failed: %s; next in %.1fs", attempt, e,
                               wait)
                if shutdown_event is None:
                    await asyncio.sleep(wait)
                    continue
                try:
                    await asyncio.wait_for(shutdown_event.wait(), timeout=wait)
                except asyncio.TimeoutError:
                    pass
                continue
            await asyncio.sleep(0)  # a signal that came during setup() is seen now
            if shutdown_event is not None and shutdown_event.is_set():
                logger.info("store start-up cancelled by a shutdown request")
                await self.stop()
                return False
            logger.info("store started on %s", self.config.local_hostname)
            return True

    async def start_http_service(self, port: int = 8080, host: str = "0.0.0.0") -> bool:
        app = web.Application(client_max_size=_MAX_BODY_BYTES)
        app.add_routes([
            web.put("/api/put", self.handle_put),
            web.get("/api/get/{key}", self.handle_get),
            web.get("/api/exist/{key}", self.handle_exist),
            web.delete("/api/remove/{key}", self.handle_remove),
            web.delete("/api/remove_all", self.handle_remove_all),
            web.post("/api/mount_shm", self.handle_mount_shm),
            web.post("/api/unmount_shm", self.handle_unmount_shm),
            web.post("/api/mount", self.handle_mount),
            web.post("/api/unmount", self.handle_unmount),
            web.post("/api/unmount_local_disk", self.handle_unmount_local_disk),
            web.post("/api/reconfigure", self.handle_reconfigure),
        ])
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        logger.info("REST API on %s:%d", host, port)
        return True

    async def stop(self) -> None:
        """Stops the REST API and closes the store. Idempotent."""
        runner, self._runner = getattr(self, "_runner", None), None
        if runner is not None:
            await runner.cleanup()
        store, self.store = self.store, None
        if store is not None:
            ret = store.close()
            if ret != 0:
                logger.warning("store close returned %s", ret)

    # --- objects ---

    async def handle_put(self, request) -> web.Response:
        data, bad = await _json_object(request)
        if bad is not None:
            return bad
        key, value = data.get("key"), data.get("value")
        if not key or value is None:
            return _error(400, "Missing key or value")
        if not isinstance(key, str) or not isinstance(value, str):
            return _error(400, "key and value must be strings")
        try:
            ret = await asyncio.to_thread(self.store.put, key, value.encode())
        except Exception as e:
            return self._failed("put", e)
        return _error(500, "PUT operation failed") if ret != 0 else _answer(200, status="success")

    async def handle_get(self, request) -> web.Response:
        key = request.match_info["key"]
        try:
            missing = await self._missing(key)
            if missing is not None:
                return missing
            value = await asyncio.to_thread(self.store.get, key)
            if value is None:
                return _error(500, "GET operation failed")
            if value == b"":  # an empty value, or removed since the check: ask again
                missing = await self._missing(key)
                if missing is not None:
                    return missing
        except Exception as e:
            return self._failed("get", e)
        return web.Response(status=200, body=value, content_type="application/octet-stream")

    async def _missing(self, key: str) -> Optional[web.Response]:
        """404 when `key` does not exist, 500 when the check fails, else None."""
        exists = await asyncio.to_thread(self.store.is_exist, key)
        if exists < 0:
            return _error(500, "Exist check failed")
        return _error(404, "Key not found") if not exists else None

    async def handle_exist(self, request) -> web.Response:
        try:
            exists = await asyncio.to_thread(self.store.is_exist, request.match_info["key"])
        except Exception as e:
            return self._failed("exist", e)
        if exists < 0:  # an error code: not "exists" (bool(-1) is True)
            return _error(500, "Exist check failed")
        return _answer(200, exists=exists > 0)

    async def handle_remove(self, request) -> web.Response:
        try:
            ret = await asyncio.to_thread(self.store.remove, request.match_info["key"])
        except Exception as e:
            return self._failed("remove", e)
        if ret != 0:
            return _error(500, "Remove operation failed")
        return _answer(200, status="success")

    async def handle_remove_all(self, request) -> web.Response:
        try:
            removed = await asyncio.to_thread(self.store.remove_all)
        except Exception as e:
            return self._failed("remove_all", e)
        if removed < 0:
            return _error(500, "RemoveAll operation failed")
        return _answer(200, status=f"success removed {removed} keys")

    # --- segments ---

    async def handle_mount_shm(self, request) -> web.Response:
        data, bad = await _json_object(request)
        if bad is not None:
            return bad
        path = _shm_name_to_path(data.get("name"))
        size = data.get("size")
        if path is None or size is None:
            return _error(400, "Missing or invalid name or size")
        try:
            result = await asyncio.to_thread(
                self.store.mount_segment, path, size, data.get("offset", 0),
                data.get("protocol", self.config.protocol), data.get("location", ""))
        except Exception as e:
            return self._failed("mount_shm", e)
        if result["ret"] != 0:
            return _error(500, f"Mount failed, ret={result['ret']}")
        return _answer(200, status="success", segment_ids=list(result["segment_ids"]))

    async def handle_unmount_shm(self, request) -> web.Response:
        data, ids, bad = await _unmount_request(request)
        if bad is not None:
            return bad
        grace = data.get("grace_period_seconds", 0)
        failed = []
        try:
            async with self._state_lock:
                # One at a time: a batch reports only its first error.
                for sid in ids:
                    if await asyncio.to_thread(self.store.unmount_segment, [sid], grace) != 0:
                        failed.append(sid)
                    elif sid in self.mounted_segment_ids:
                        self.mounted_segment_ids.remove(sid)
                if not self.mounted_segment_ids:
                    self.current_mode = "prefill"
        except Exception as e:
            return self._failed("unmount_shm", e)
        if failed:
            return _error(500, "Unmount failed for one or more segments",
                          failed_segment_ids=failed)
        return _answer(200, status="success")

    async def handle_mount(self, request) -> web.Response:
        data, bad = await _json_object(request)
        if bad is not None:
            return bad
        size = data.get("size")
        if type(size) is not int or size <= 0:  # not bool, float or text
            return _error(400, "Invalid size, must be a positive integer")
        try:
            result = await asyncio.to_thread(self.store.allocate_and_mount_segment, size,
                                             data.get("protocol", self.config.protocol),
                                             data.get("location", ""))
        except Exception as e:
            return self._failed("mount", e)
        if result["ret"] != 0:
            return _error(500, f"Allocate and mount failed, ret={result['ret']}")
        return _answer(200, status="success", segment_ids=list(result["segment_ids"]),
                       allocated_size=result["allocated_size"])

    async def handle_unmount(self, request) -> web.Response:
        data, ids, bad = await _unmount_request(request)
        if bad is not None:
            return bad
        try:
            ret = await asyncio.to_thread(self.store.unmount_and_free_segment, ids,
                                          data.get("grace_period_seconds", 0))
        except Exception as e:
            return self._failed("unmount", e)
        if ret != 0:
            return _error(500, f"Unmount and free failed, ret={ret}")
        return _answer(200, status="success")

    async def handle_unmount_local_disk(self, request) -> web.Response:
        """Takes this store's disk tier out (a preStop hook), then holds the caller for
        ``grace_period_seconds`` so that reads already under way finish."""
        data, bad = await _json_object(request)
        if bad is not None:
            return bad
        grace = data.get("grace_period_seconds", 0)
        if type(grace) is not int or not 0 <= grace <= _MAX_UNMOUNT_LOCAL_DISK_GRACE_PERIOD_SECONDS:
            return _error(400, "Invalid grace_period_seconds, must be a non-negative integer no "
                          f"greater than {_MAX_UNMOUNT_LOCAL_DISK_GRACE_PERIOD_SECONDS}")
        try:
            ret = await asyncio.to_thread(self.store.unmount_local_disk_segment, grace)
        except Exception as e:
            return self._failed("unmount_local_disk", e)
        if ret != 0:
            return _error(500, f"Unmount local disk failed, ret={ret}")
        return _answer(200, status="success")

    async def handle_reconfigure(self, request) -> web.Response:
        """``prefill``: unmount the extra segments. ``decode``: mount `path` first, then retire
        the segments mounted before (make before break: a failed mount keeps them serving)."""
        data, bad = await _json_object(request)
        if bad is not None:
            return bad
        mode = str(data.get("mode", "")).lower()
        try:
            if mode == "decode":
                return await self._reconfigure_decode(data)
            if mode == "prefill":
                return await self._reconfigure_prefill()
        except Exception as e:
            return self._failed("reconfigure", e)
        return _error(400, "Invalid mode. Use 'decode' or 'prefill'")

    async def _reconfigure_decode(self, data: Dict[str, Any]) -> web.Response:
        path, size = data.get("path"), data.get("size")
        if not path or size is None:
            return _error(400, "Missing path or size for decode mode")
        mount = {"path": path, "offset": data.get("offset", 0), "size": size,
                 "protocol": data.get("protocol", self.config.protocol),
                 "location": data.get("location", "")}
        async with self._state_lock:
            previous = list(self.mounted_segment_ids)
            result = await asyncio.to_thread(self.store.mount_segment, path, size, mount["offset"],
                                             mount["protocol"], mount["location"])
            if result["ret"] != 0:
                if previous:
                    logger.warning("reconfigure: mounting %s failed (%s); the previous decode "
                                   "segments keep serving", path, result["ret"])
                    return _error(500, f"Mount failed, ret={result['ret']}; keeping previous "
                                  "decode segments", mode=self.current_mode)
                self.current_mode = "prefill"
                self.mounted_segment_ids.clear()
                self.last_mount_info.clear()
                return _error(500, f"Mount failed, ret={result['ret']}; rolled back to prefill",
                              mode=self.current_mode)
            # Retire the old segments one by one; those that fail stay tracked for a retry.
            still_mounted = []
            for sid in previous:
                if await asyncio.to_thread(self.store.unmount_segment, [sid]) != 0:
                    still_mounted.append(sid)
            if still_mounted:
                logger.warning("reconfigure: could not unmount %s; kept for a later retry",
                               still_mounted)
            self.mounted_segment_ids = list(result["segment_ids"]) + still_mounted
            self.current_mode = "decode"
            self.last_mount_info = mount
            return _answer(200, status="success", mode=self.current_mode,
                           segment_ids=self.mounted_segment_ids)

    async def _reconfigure_prefill(self) -> web.Response:
        async with self._state_lock:
            if self.mounted_segment_ids:
                ret = await asyncio.to_thread(self.store.unmount_segment, self.mounted_segment_ids)
                if ret != 0:
                    return _error(500, f"Unmount failed, ret={ret}")
                self.mounted_segment_ids.clear()
            self.current_mode = "prefill"
            self.last_mount_info.clear()
        return _answer(200, status="success", mode=self.current_mode)

    @staticmethod
    def _failed(operation: str, e: Exception) -> web.Response:
        logger.error("%s failed: %s", operation, e)
        return _error(500, str(e))


def parse_arguments(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="yuebing store with Mooncake's REST API")
    parser.add_argument("--config", help="JSON config file (default: MOONCAKE_* variables)")
    parser.add_argument("-D", "--define", action="append", default=[],
                        help="override a config field: -Dlocal_hostname=host (repeatable)")
    parser.add_argument("--port", type=int, default=8080, help="REST API port (8080)")
    parser.add_argument("--max-wait-time", type=float, default=60,
                        help="seconds to keep retrying the store's setup (60)")
    return parser.parse_args(argv)


async def main() -> None:
    args = parse_arguments()
    overrides = {}
    for item in args.define:
        key, sep, value = item.partition("=")
        if sep:
            overrides[key] = value
        else:
            logger.warning("ignoring -D %r (expected key=value)", item)
    service = MooncakeStoreService(args.config, overrides)
    shutdown = asyncio.Event()
    _install_shutdown_signal_handlers(asyncio.get_running_loop(), shutdown)
    _unblock_shutdown_signals()
    try:
        if not await service.start_store_service(max_wait_time=args.max_wait_time,
                                                 shutdown_event=shutdown):
            if shutdown.is_set():
                return
            raise RuntimeError("the store did not start")
        await service.start_http_service(args.port)
        logger.info("store service running")
        await shutdown.wait()
    finally:
        await service.stop()


def sync_main() -> None:
    """Entry point of ``yuebing-store-service`` (upstream: ``mc_store_rest_server``)."""
    asyncio.run(main())


if __name__ == "__main__":
    sync_main()
