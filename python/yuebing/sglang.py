"""An SGLang HiCache storage backend (L3) on yuebing, zero-copy (the v1 page interface).

Load it into SGLang with the ``dynamic`` storage backend::

    python -m sglang.launch_server ... --enable-hierarchical-cache \\
        --hicache-storage-backend dynamic \\
        --hicache-storage-backend-extra-config '{"backend_name": "yuebing",
            "module_path": "yuebing.sglang", "class_name": "YuebingHiCacheStorage",
            "master_server_address": "10.0.0.1:50051"}'

Settings come from the extra config (the MooncakeConfig field names: master_server_address,
local_hostname, metadata_server, global_segment_size, local_buffer_size, protocol, device_name)
when it names ``master_server_address``; otherwise from MOONCAKE_CONFIG_PATH or the MOONCAKE_*
environment variables (see yuebing.config). See docs/sglang.md.

Object keys (one object per page and part, as SGLang's mooncake backend names them, so both
backends share a cache): MHA ``{page_hash}_{tp_rank}_k`` and ``..._v`` (``{tp_rank}_{pp_rank}``
with pipeline parallelism), MLA ``{page_hash}__k`` (``{page_hash}_{pp_rank}_k`` with pipeline
parallelism; only the storage writer rank stores, all ranks read). The bytes are moved straight
between the registered host KV pool and the cluster (batch_put_from / batch_get_into, or their
multi-buffer forms for layer-first pools).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, List, Optional, Sequence

from yuebing.config import MooncakeConfig
from yuebing.store import MooncakeDistributedStore

logger = logging.getLogger(__name__)

try:  # SGLang's interface; the factory requires a subclass of it.
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as _Base
except Exception:  # pragma: no cover - sglang/torch not installed
    _Base = object  # type: ignore[assignment,misc]

_CONFIG_FIELDS = {f.name for f in dataclasses.fields(MooncakeConfig)}


def _config_from(extra: Optional[dict]) -> MooncakeConfig:
    if extra and extra.get("master_server_address"):
        data = {k: v for k, v in extra.items() if k in _CONFIG_FIELDS}
        data.setdefault("local_hostname", "localhost")
        data.setdefault("metadata_server", "P2PHANDSHAKE")
        return MooncakeConfig.from_dict(data)
    return MooncakeConfig.load_from_env()


def _ok_put(rc: int) -> bool:
    return rc == 0


def _ok_get(rc: int) -> bool:
    return rc > 0


class YuebingHiCacheStorage(_Base):
    """SGLang ``HiCacheStorage`` on a yuebing cluster.

    ``YuebingHiCacheStorage(storage_config, kwargs)`` is how SGLang's dynamic backend factory
    builds it; ``store=`` gives an already set-up MooncakeDistributedStore instead (tests).
    """

    def __init__(self, storage_config: Any = None, kwargs: Optional[dict] = None, *,
                 store: Optional[MooncakeDistributedStore] = None):
        self.storage_config = storage_config
        extra = getattr(storage_config, "extra_config", None) or {}
        tp_rank = getattr(storage_config, "tp_rank", 0) or 0
        pp_rank = getattr(storage_config, "pp_rank", 0) or 0
        pp_size = getattr(storage_config, "pp_size", 1) or 1
        self.is_mla = bool(getattr(storage_config, "is_mla_model", False))
        if pp_size > 1:
            self.mha_suffix, self.mla_suffix = f"{tp_rank}_{pp_rank}", f"{pp_rank}"
        else:
            self.mha_suffix, self.mla_suffix = f"{tp_rank}", ""
        writer = getattr(storage_config, "is_storage_writer", None)
        self.is_writer = bool(writer) if writer is not None else (not self.is_mla or tp_rank == 0)
        self.key_prefix = str(extra.get("key_prefix") or "")
        self.mem_pool_host = None
        self._registered: List[int] = []
        self._own_store = store is None
        if store is None:
            store = MooncakeDistributedStore()
            rc = store.setup_from_config(_config_from(extra))
            if rc != 0:
                raise RuntimeError(f"yuebing store setup failed with code {rc}")
        self.store = store

    # ---- keys ----------------------------------------------------------------------------
    def _page_keys(self, page_hash: str) -> List[str]:
        base = f"{self.key_prefix}{page_hash}"
        if self.is_mla:
            return [f"{base}_{self.mla_suffix}_k"]
        return [f"{base}_{self.mha_suffix}_k", f"{base}_{self.mha_suffix}_v"]

    @property
    def parts_per_page(self) -> int:
        return 1 if self.is_mla else 2

    # ---- host pool ------------------------------------------------------------------------
    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Registers the host KV pool's buffer(s) with the store for zero-copy transfers."""
        self.mem_pool_host = mem_pool_host
        buffers = getattr(mem_pool_host, "kv_buffer", None)
        if buffers is None:
            return
        if not isinstance(buffers, (list, tuple)):
            buffers = [buffers]
        for buf in buffers:
            ptr, size = buf.data_ptr(), buf.numel() * buf.element_size()
            rc = self.store.register_buffer(ptr, size)
            if rc != 0:
                raise RuntimeError(f"yuebing register_buffer failed with code {rc}")
            self._registered.append(ptr)

    def _page_meta(self, keys: Sequence[str], host_indices: Any):
        """(object keys, pointers, sizes), one entry per object; multi-buffer entries are lists."""
        pool = self.mem_pool_host
        if pool is None:
            raise RuntimeError("register_mem_pool_host() was not called")
        if len(host_indices) != len(keys) * pool.page_size:
            raise ValueError(f"{len(keys)} keys need {len(keys) * pool.page_size} host indices, "
                             f"got {len(host_indices)}")
        ptrs, sizes = pool.get_page_buffer_meta(host_indices)
        obj_keys = [k for h in keys for k in self._page_keys(h)]
        if len(ptrs) != len(obj_keys):  # layer-first: several buffers per object
            if not obj_keys or len(ptrs) % len(obj_keys):
                raise RuntimeError(f"host pool gave {len(ptrs)} buffers for {len(obj_keys)} "
                                   "objects")
            n = len(ptrs) // len(obj_keys)
            if not self.is_mla:  # MHA layer-first alternates k, v per layer
                per_page = 2 * n
                new_p, new_s = [], []
                for p in range(len(keys)):
                    chunk = range(p * per_page, (p + 1) * per_page)
                    for part in (0, 1):
                        new_p.append([ptrs[i] for i in chunk if (i - p * per_page) % 2 == part])
                        new_s.append([sizes[i] for i in chunk if (i - p * per_page) % 2 == part])
                return obj_keys, new_p, new_s
            ptrs = [ptrs[i:i + n] for i in range(0, len(ptrs), n)]
            sizes = [sizes[i:i + n] for i in range(0, len(sizes), n)]
        return obj_keys, ptrs, sizes

    def _group(self, ok: List[bool]) -> List[bool]:
        n = self.parts_per_page
        return [all(ok[i:i + n]) for i in range(0, len(ok), n)]

    # ---- v1 zero-copy page interface ------------------------------------------------------
    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """The number of leading pages of `keys` whose objects are all in the cluster."""
        if not keys:
            return 0
        obj_keys = [k for h in keys for k in self._page_keys(h)]
        found = self.store.batch_is_exist(obj_keys)
        for page, ok in enumerate(self._group([r == 1 for r in found])):
            if not ok:
                return page
        return len(keys)

    def batch_get_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        if not keys:
            return []
        obj_keys, ptrs, sizes = self._page_meta(keys, host_indices)
        if ptrs and isinstance(ptrs[0], list):
            rcs = self.store.batch_get_into_multi_buffers(obj_keys, ptrs, sizes)
        else:
            rcs = self.store.batch_get_into(obj_keys, ptrs, sizes)
        return self._group([_ok_get(rc) for rc in rcs])

    def batch_set_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        if not keys:
            return []
        if not self.is_writer:  # MLA: one writer rank stores the shared pages
            return [True] * len(keys)
        obj_keys, ptrs, sizes = self._page_meta(keys, host_indices)
        exists = self.store.batch_is_exist(obj_keys)
        todo = [i for i, e in enumerate(exists) if e != 1]
        ok = [e == 1 for e in exists]
        if todo:
            tk = [obj_keys[i] for i in todo]
            tp = [ptrs[i] for i in todo]
            ts = [sizes[i] for i in todo]
            if isinstance(tp[0], list):
                rcs = self.store.batch_put_from_multi_buffers(tk, tp, ts)
            else:
                rcs = self.store.batch_put_from(tk, tp, ts)
            for i, rc in zip(todo, rcs):
                ok[i] = _ok_put(rc)
        return self._group(ok)

    # ---- single-object forms (zero-copy: target_location is an address) ------------------
    def exists(self, key: str) -> bool:
        return self.store.is_exist(key) == 1

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        if target_location is None or target_sizes is None:
            data = self.store.get(key)
            return data if data else None
        return self.store.get_into(key, target_location, target_sizes) > 0

    def batch_get(self, keys: List[str], target_locations: Any = None,
                  target_sizes: Any = None) -> Any:
        if target_locations is None or target_sizes is None:
            return [self.get(k) for k in keys]
        rcs = self.store.batch_get_into(list(keys), list(target_locations), list(target_sizes))
        for i, rc in enumerate(rcs):
            if rc <= 0:
                return i
        return len(keys)

    def set(self, key: str, value: Any = None, target_location: Any = None,
            target_sizes: Any = None) -> bool:
        if self.exists(key):
            return True
        if target_location is not None and target_sizes is not None:
            return self.store.put_from(key, target_location, target_sizes) == 0
        if value is None:
            return False
        if not isinstance(value, (bytes, bytearray, memoryview)):
            value = value.contiguous().cpu().numpy().tobytes()  # a tensor
        return self.store.put(key, bytes(value)) == 0

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        if target_locations is not None and target_sizes is not None:
            return all(self.set(k, None, p, s)
                       for k, p, s in zip(keys, target_locations, target_sizes))
        return all(self.set(k, v) for k, v in zip(keys, values or []))

    def clear(self) -> None:
        self.store.remove_all()

    def close(self) -> None:
        for ptr in self._registered:
            self.store.unregister_buffer(ptr)
        self._registered.clear()
        if self._own_store:
            self.store.close()
