"""Tensor methods of MooncakeDistributedStore (present when torch is importable).

A tensor object is stored as ``[header][raw bytes]``. The header (a multiple of 64 bytes, so the
data stays aligned) is: magic ``b"YBT1"``, uint32 header length, uint16 ndim, uint16 dtype-name
length, int64 shape[ndim], the dtype name (e.g. ``float32``), zero padding. Tensors on another
device are copied to the CPU first; reads return CPU tensors. torch is imported on first use.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any, List, Optional, Sequence, Tuple

_MAGIC = b"YBT1"
_FIXED = struct.Struct("<4sIHH")
_ALIGN = 64
_INVALID_PARAMS = -600


def _torch():
    import torch

    return torch


def _header(tensor) -> bytes:
    name = str(tensor.dtype).replace("torch.", "").encode()
    shape = tuple(int(d) for d in tensor.shape)
    body = _FIXED.size + 8 * len(shape) + len(name)
    length = (body + _ALIGN - 1) // _ALIGN * _ALIGN
    out = _FIXED.pack(_MAGIC, length, len(shape), len(name))
    out += struct.pack(f"<{len(shape)}q", *shape) + name
    return out + b"\0" * (length - body)


def _parse_header(view: memoryview) -> Optional[Tuple[int, Tuple[int, ...], Any]]:
    """(header length, shape, dtype) or None when the bytes are not a stored tensor."""
    torch = _torch()
    if len(view) < _FIXED.size:
        return None
    magic, length, ndim, name_len = _FIXED.unpack_from(view, 0)
    if magic != _MAGIC or length > len(view) or _FIXED.size + 8 * ndim + name_len > length:
        return None
    shape = struct.unpack_from(f"<{ndim}q", view, _FIXED.size)
    name = bytes(view[_FIXED.size + 8 * ndim:_FIXED.size + 8 * ndim + name_len]).decode()
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        return None
    return length, tuple(shape), dtype


def _data_view(tensor):
    """A CPU, contiguous uint8 numpy view of the tensor's bytes (keeps the tensor alive)."""
    torch = _torch()
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous().reshape(-1)
    if t.numel() == 0:
        return None
    return t.view(torch.uint8).numpy()


def _tensor_from(buffer, view: memoryview):
    """A tensor over the bytes of `buffer` (no copy), or None for non-tensor bytes."""
    torch = _torch()
    parsed = _parse_header(view)
    if parsed is None:
        return None
    length, shape, dtype = parsed
    numel = 1
    for d in shape:
        numel *= d
    itemsize = torch.empty((), dtype=dtype).element_size()
    if length + numel * itemsize > len(view):
        return None
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buffer, dtype=dtype, count=numel, offset=length).reshape(shape)


def _parts(tensor) -> List[Any]:
    data = _data_view(tensor)
    header = _header(tensor)
    return [header] if data is None else [header, data]


def _check_tensors(tensors: Sequence[Any]) -> bool:
    torch = _torch()
    return all(isinstance(t, torch.Tensor) for t in tensors)


def _write_one(store, key: str, tensor, config, upsert: bool) -> int:
    if not _check_tensors([tensor]):
        return _INVALID_PARAMS
    parts = _parts(tensor)
    if config is None:
        return store.upsert_parts(key, *parts) if upsert else store.put_parts(key, *parts)
    if upsert:
        return store.upsert_parts(key, *parts, config=config)
    return store.put_parts(key, *parts, config=config)


def _write_many(store, keys, tensors, config, upsert: bool) -> List[int]:
    import numpy as np

    keys = list(keys)
    tensors = list(tensors)
    if len(keys) != len(tensors) or not _check_tensors(tensors):
        return [_INVALID_PARAMS] * len(keys)
    keep, ptrs, sizes = [], [], []
    for tensor in tensors:
        row_ptrs, row_sizes = [], []
        for part in _parts(tensor):
            array = np.frombuffer(part, dtype=np.uint8) if isinstance(part, bytes) else part
            keep.append(array)
            row_ptrs.append(array.ctypes.data)
            row_sizes.append(array.nbytes)
        ptrs.append(row_ptrs)
        sizes.append(row_sizes)
    method = (store.batch_upsert_from_multi_buffers if upsert
              else store.batch_put_from_multi_buffers)
    if config is None:
        return method(keys, ptrs, sizes)
    return method(keys, ptrs, sizes, config)


def _split(tensor, tp_size: int, split_dim: int):
    return _torch().chunk(tensor, tp_size, dim=split_dim)


def _tp_key(key: str, rank: int) -> str:
    return f"{key}_tp_{rank}"


# --- methods installed on MooncakeDistributedStore ---


def put_tensor(self, key: str, tensor) -> int:
    """Stores a tensor (copied to CPU if needed). 0 or a negative error code."""
    return _write_one(self, key, tensor, None, False)


def pub_tensor(self, key: str, tensor, config=None) -> int:
    """put_tensor with replication settings."""
    return _write_one(self, key, tensor, config, False)


def upsert_tensor(self, key: str, tensor) -> int:
    return _write_one(self, key, tensor, None, True)


def upsert_pub_tensor(self, key: str, tensor, config=None) -> int:
    return _write_one(self, key, tensor, config, True)


def batch_put_tensor(self, keys: List[str], tensors_list: list) -> List[int]:
    return _write_many(self, keys, tensors_list, None, False)


def batch_pub_tensor(self, keys: List[str], tensors_list: list, config=None) -> List[int]:
    return _write_many(self, keys, tensors_list, config, False)


def batch_upsert_tensor(self, keys: List[str], tensors_list: list) -> List[int]:
    return _write_many(self, keys, tensors_list, None, True)


def batch_upsert_pub_tensor(self, keys: List[str], tensors_list: list, config=None) -> List[int]:
    return _write_many(self, keys, tensors_list, config, True)


def get_tensor(self, key: str):
    """The stored tensor (CPU), or None on a miss, an error or bytes that are not a tensor."""
    buffer = self.get_buffer(key)
    if buffer is None:
        return None
    return _tensor_from(buffer, memoryview(buffer))


def batch_get_tensor(self, keys: List[str]) -> list:
    out = []
    for buffer in self.batch_get_buffer(list(keys)):
        out.append(None if buffer is None else _tensor_from(buffer, memoryview(buffer)))
    return out


def get_tensor_into(self, key: str, buffer_ptr: int, size: int):
    """Reads the object into [buffer_ptr, buffer_ptr+size) and returns a tensor over that memory
    (no copy), or None. The caller keeps the memory alive while the tensor is used."""
    read = self.get_into(key, buffer_ptr, size)
    if read <= 0:
        return None
    raw = (ctypes.c_uint8 * read).from_address(buffer_ptr)
    return _tensor_from(raw, memoryview(raw).cast("B"))


def batch_get_tensor_into(self, keys: List[str], buffer_ptrs: List[int], sizes: List[int]):
    """One tensor (None on a miss) per key; upstream's rule for bad arguments (lists of other
    lengths, a null pointer): -600 for every key, nothing read."""
    keys, buffer_ptrs, sizes = list(keys), list(buffer_ptrs), list(sizes)
    if len(buffer_ptrs) != len(keys) or len(sizes) != len(keys) or 0 in buffer_ptrs:
        return [_INVALID_PARAMS] * len(keys)
    results = self.batch_get_into(keys, buffer_ptrs, sizes)
    out = []
    for read, ptr in zip(results, buffer_ptrs):
        if read <= 0:
            out.append(None)
            continue
        raw = (ctypes.c_uint8 * read).from_address(ptr)
        out.append(_tensor_from(raw, memoryview(raw).cast("B")))
    return out


def put_tensor_from(self, key: str, buffer_ptr: int, size: int) -> int:
    """Stores ``size`` bytes already laid out as [header][data] (as get_tensor_into leaves them)."""
    return self.put_from(key, buffer_ptr, size)


def batch_put_tensor_from(self, keys: List[str], buffer_ptrs: List[int],
                          sizes: List[int]) -> List[int]:
    return self.batch_put_from(list(keys), list(buffer_ptrs), list(sizes))


def put_tensor_with_tp(self, key: str, tensor, tp_rank: int = 0, tp_size: int = 1,
                       split_dim: int = 0) -> int:
    """Stores the tensor, or with tp_size > 1 its tp_size chunks along split_dim as
    ``{key}_tp_{rank}`` (every chunk, whatever tp_rank). 0 or the first error."""
    return pub_tensor_with_tp(self, key, tensor, None, tp_rank, tp_size, split_dim)


def pub_tensor_with_tp(self, key: str, tensor, config=None, tp_rank: int = 0, tp_size: int = 1,
                       split_dim: int = 0) -> int:
    if tp_size <= 1:
        return _write_one(self, key, tensor, config, False)
    if not _check_tensors([tensor]):
        return _INVALID_PARAMS
    chunks = _split(tensor, tp_size, split_dim)
    keys = [_tp_key(key, rank) for rank in range(len(chunks))]
    for code in _write_many(self, keys, chunks, config, False):
        if code != 0:
            return code
    return 0


def batch_put_tensor_with_tp(self, base_keys: List[str], tensors_list: list, tp_rank: int = 0,
                             tp_size: int = 1, split_dim: int = 0) -> List[int]:
    return [put_tensor_with_tp(self, k, t, tp_rank, tp_size, split_dim)
            for k, t in zip(base_keys, tensors_list)]


def batch_pub_tensor_with_tp(self, base_keys: List[str], tensors_list: list, config=None,
                             tp_rank: int = 0, tp_size: int = 1,
                             split_dim: int = 0) -> List[int]:
    return [pub_tensor_with_tp(self, k, t, config, tp_rank, tp_size, split_dim)
            for k, t in zip(base_keys, tensors_list)]


def get_tensor_with_tp(self, key: str, tp_rank: int = 0, tp_size: int = 1, split_dim: int = 0):
    """The chunk of rank tp_rank (``{key}_tp_{tp_rank}``), or the whole tensor for tp_size <= 1."""
    return get_tensor(self, key if tp_size <= 1 else _tp_key(key, tp_rank))


def batch_get_tensor_with_tp(self, base_keys: List[str], tp_rank: int = 0,
                             tp_size: int = 1) -> list:
    keys = list(base_keys) if tp_size <= 1 else [_tp_key(k, tp_rank) for k in base_keys]
    return batch_get_tensor(self, keys)


_METHODS = (
    put_tensor, pub_tensor, upsert_tensor, upsert_pub_tensor,
    batch_put_tensor, batch_pub_tensor, batch_upsert_tensor, batch_upsert_pub_tensor,
    get_tensor, batch_get_tensor, get_tensor_into, batch_get_tensor_into,
    put_tensor_from, batch_put_tensor_from,
    put_tensor_with_tp, pub_tensor_with_tp, batch_put_tensor_with_tp, batch_pub_tensor_with_tp,
    get_tensor_with_tp, batch_get_tensor_with_tp,
)


def install(cls) -> None:
    """Adds the tensor methods to the store class."""
    for function in _METHODS:
        setattr(cls, function.__name__, function)
