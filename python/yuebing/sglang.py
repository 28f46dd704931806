"""An SGLang HiCache storage backend (L3) on yuebing: SGLang's own ``mooncake`` backend class
(``MooncakeStore``) over the ``mooncake`` alias, loadable through SGLang's ``dynamic`` backend.

Load it into SGLang with::

    python -m sglang.launch_server ... --enable-hierarchical-cache \\
        --hicache-storage-backend dynamic \\
        --hicache-storage-backend-extra-config '{"backend_name": "yuebing",
            "module_path": "yuebing.sglang", "class_name": "YuebingHiCacheStorage",
            "master_server_address": "10.0.0.1:50051"}'

Because it is SGLang's class, object keys, the v1 zero-copy page interface, the v2 interface of
hybrid models (Mamba, SWA, DSA and draft side pools), TP/PP/DCP/split-head suffixes, the
``extra_backend_tag``/model key prefix, configuration parsing and ``check_server`` are exactly
those of ``--hicache-storage-backend mooncake``: a cluster filled through one is read through the
other. What this class adds (see docs/sglang.md):

- SGLang's cache controller uses a ``dynamic`` backend's zero-copy page functions only when the
  extra config says ``"interface_v1": 1``; without it the controller calls
  ``batch_set(keys, tensors)``, which SGLang's Mooncake class refuses, and L3 never fills. The
  constructor sets ``interface_v1`` in the extra config, so the backend works without it.
- MHA host pools in the ``layer_first`` layout (SGLang's class supports them only for MLA): each
  page's K of every layer is one object and its V another, written and read as multi-buffer
  objects with the usual ``{page}_{tp_rank}_k/_v`` keys.

Importing this module needs SGLang (and torch); it raises ImportError naming the cause otherwise.
"""

from __future__ import annotations

from typing import Any, List, Optional

try:
    from sglang.srt.mem_cache.storage.mooncake_store.mooncake_store import MooncakeStore
except Exception as e:  # ImportError, or a partial install failing inside its imports
    raise ImportError(
        "yuebing.sglang is an SGLang storage backend and needs the sglang package (and torch): "
        f"{type(e).__name__}: {e}") from e

__all__ = ["YuebingHiCacheStorage"]


class YuebingHiCacheStorage(MooncakeStore):
    """SGLang's ``MooncakeStore`` on a yuebing cluster, as a ``dynamic`` storage backend.

    ``YuebingHiCacheStorage(storage_config, kwargs)`` is how SGLang's dynamic factory builds it
    (``kwargs`` is the factory's keyword dict and may carry ``mem_pool_host``, which standalone
    storage needs); ``YuebingHiCacheStorage(storage_config, mem_pool_host)`` is how the builtin
    ``mooncake`` backend is built, and works too. Errors are SGLang's: RuntimeError when the
    client cannot be set up, ValueError for a bad configuration.
    """

    def __init__(self, storage_config: Any = None, kwargs: Any = None):
        extra = getattr(storage_config, "extra_config", None)
        if isinstance(extra, dict):
            # Read by the cache controller after the backend is built: zero-copy page functions
            # are this backend's only data path.
            extra["interface_v1"] = 1
        mem_pool_host = kwargs.get("mem_pool_host") if isinstance(kwargs, dict) else kwargs
        super().__init__(storage_config, mem_pool_host)

    def _get_mha_buffer_meta(self, keys: List[str], indices: Any):
        """Object keys, pointers and sizes of MHA pages; layer-first pools give one multi-buffer
        object per page and part (the K of every layer, then the V of every layer)."""
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(indices)
        obj_keys: List[str] = []
        for key in keys:
            obj_keys.append(f"{key}_{self.mha_suffix}_k")
            obj_keys.append(f"{key}_{self.mha_suffix}_v")
        if len(ptrs) == len(obj_keys):
            return obj_keys, ptrs, sizes
        per_page = len(ptrs) // len(keys) if keys else 0
        if not keys or per_page * len(keys) != len(ptrs) or per_page % 2:
            raise RuntimeError(f"host pool gave {len(ptrs)} buffers for {len(keys)} MHA pages")
        # get_page_buffer_meta lists each page's layers in order, K then V for each layer.
        obj_ptrs: List[List[int]] = []
        obj_sizes: List[List[int]] = []
        for page in range(len(keys)):
            first = page * per_page
            for part in (0, 1):
                chosen = range(first + part, first + per_page, 2)
                obj_ptrs.append([ptrs[i] for i in chosen])
                obj_sizes.append([sizes[i] for i in chosen])
        return obj_keys, obj_ptrs, obj_sizes

    def close(self) -> Optional[Any]:
        """Closes the store client (SGLang's close only stops its own metrics)."""
        result = super().close()
        if self.store is not None:
            self.store.close()
        return result
