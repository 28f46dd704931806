"""Tensor methods of MooncakeDistributedStore (present when torch is importable).

A tensor object is stored as ``[header][raw bytes]``. The header (a multiple of 64 bytes, so the
data stays aligned) is: magic ``b"YBT1"``, uint32 header length, uint16 ndim, uint16 dtype-name
length, int64 shape[ndim], the dtype name (e.g. ``float32``), zero padding. Tensors on another
device are copied to the CPU first; reads return CPU tensors. torch is imported on first use.

Tensor-parallel writes store tp_size equal chunks along split_dim as ``{key}_tp_{rank}`` (every
chunk, whatever tp_rank); a dimension that tp_size does not divide is refused with -600, as
upstream. The ``*_from`` forms take memory laid out as ``[header][data]`` (what ``*_into`` leaves)
and store exactly the object found there; ``size`` may be larger (the rest is ignored).
"""

from __future__ import annotations

import ctypes
import json
import operator
import struct
from typing import Any, List, Optional, Sequence, Tuple

_MAGIC = b"YBT1"
_FIXED = struct.Struct("<4sIHH")
_ALIGN = 64
_INVALID_PARAMS = -600
_FILE_NOT_FOUND = -1100


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


def _layout(view: memoryview) -> Optional[Tuple[int, Tuple[int, ...], Any, int, int]]:
    """(header length, shape, dtype, numel, data bytes) of a stored tensor whose header and data
    fit in `view`, else None."""
    torch = _torch()
    parsed = _parse_header(view)
    if parsed is None:
        return None
    length, shape, dtype = parsed
    numel = 1
    for d in shape:
        numel *= d
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    if length + nbytes > len(view):
        return None
    return length, shape, dtype, numel, nbytes


def _tensor_from(buffer, view: memoryview):
    """A tensor over the bytes of `buffer` (no copy), or None for non-tensor bytes."""
    torch = _torch()
    layout = _layout(view)
    if layout is None:
        return None
    length, shape, dtype, numel, _ = layout
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buffer, dtype=dtype, count=numel, offset=length).reshape(shape)


def _memory(buffer_ptr: int, size: int):
    """A ctypes byte array over [buffer_ptr, buffer_ptr+size) (no copy), or None for a null
    pointer or a size that is not positive."""
    try:
        buffer_ptr, size = operator.index(buffer_ptr), operator.index(size)
    except TypeError:
        return None
    if buffer_ptr <= 0 or size <= 0:
        return None
    return (ctypes.c_uint8 * size).from_address(buffer_ptr)


def _object_size(buffer_ptr: int, size: int) -> Optional[int]:
    """The byte count of the stored-tensor object ([header][data]) at buffer_ptr when one lies
    within `size` bytes there, else None (upstream's check of a ``*_from`` buffer)."""
    raw = _memory(buffer_ptr, size)
    if raw is None:
        return None
    layout = _layout(memoryview(raw).cast("B"))
    return None if layout is None else layout[0] + layout[4]


def _tensor_at(buffer_ptr: int, size: int):
    """The tensor stored at [buffer_ptr, buffer_ptr+size) as a view of that memory, or None."""
    raw = _memory(buffer_ptr, size)
    return None if raw is None else _tensor_from(raw, memoryview(raw).cast("B"))


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


def _shards(tensor, tp_size: int, split_dim: int):
    """The tp_size equal chunks of `tensor` along split_dim, or None when split_dim is not one of
    its dimensions (0..ndim-1) or tp_size does not divide that dimension (upstream's rule)."""
    try:
        tp_size, split_dim = operator.index(tp_size), operator.index(split_dim)
    except TypeError:
        return None
    if tp_size < 1 or not 0 <= split_dim < tensor.dim() or tensor.shape[split_dim] % tp_size:
        return None
    step = tensor.shape[split_dim] // tp_size
    return [tensor.narrow(split_dim, rank * step, step) for rank in range(tp_size)]


def _tp_key(key: str, rank: int) -> str:
    return f"{key}_tp_{rank}"


def _write_tp_many(store, base_keys, tensors, config, tp_size: int,
                   split_dim: int) -> List[int]:
    """Writes every chunk of every tensor in one batch: per base key 0, or -600 for a tensor that
    cannot be split so (the others are written), or the first chunk's error."""
    base_keys, tensors = list(base_keys), list(tensors)
    if len(base_keys) != len(tensors):
        return [_INVALID_PARAMS] * len(base_keys)
    results = [_INVALID_PARAMS] * len(base_keys)
    written, chunk_keys, chunks = [], [], []
    for index, (key, tensor) in enumerate(zip(base_keys, tensors)):
        shards = _shards(tensor, tp_size, split_dim) if _check_tensors([tensor]) else None
        if shards is None:
            continue
        written.append(index)
        chunk_keys.extend(_tp_key(key, rank) for rank in range(tp_size))
        chunks.extend(shards)
    if not written:
        return results
    codes = _write_many(store, chunk_keys, chunks, config, False)
    for n, index in enumerate(written):
        own = codes[n * tp_size:(n + 1) * tp_size]
        results[index] = next((code for code in own if code != 0), 0)
    return results


def _check_from(buffer_ptrs: Sequence[int], sizes: Sequence[int]) -> Optional[List[int]]:
    """The object sizes of ``*_from`` buffers, or None when one holds no stored tensor."""
    out = []
    for ptr, size in zip(buffer_ptrs, sizes):
        length = _object_size(ptr, size)
        if length is None:
            return None
        out.append(length)
    return out


def _write_from(store, key: str, buffer_ptr: int, size: int, upsert: bool) -> int:
    length = _object_size(buffer_ptr, size)
    if length is None:
        return _INVALID_PARAMS
    return (store.upsert_from if upsert else store.put_from)(key, buffer_ptr, length)


def _write_many_from(store, keys, buffer_ptrs, sizes, upsert: bool) -> List[int]:
    """Upstream's rule: [] for no keys; -600 for every key, nothing written, when the lists differ
    in length or any buffer holds no stored tensor."""
    keys, buffer_ptrs, sizes = list(keys), list(buffer_ptrs), list(sizes)
    if not keys:
        return []
    if len(buffer_ptrs) != len(keys) or len(sizes) != len(keys):
        return [_INVALID_PARAMS] * len(keys)
    lengths = _check_from(buffer_ptrs, sizes)
    if lengths is None:
        return [_INVALID_PARAMS] * len(keys)
    method = store.batch_upsert_from if upsert else store.batch_put_from
    return method(keys, buffer_ptrs, lengths)


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
    if not buffer_ptr:
        return None
    read = self.get_into(key, buffer_ptr, size)
    if read <= 0:
        return None
    return _tensor_at(buffer_ptr, read)


def batch_get_tensor_into(self, keys: List[str], buffer_ptrs: List[int], sizes: List[int]):
    """One tensor (None on a miss) per key; upstream's rule for bad arguments (lists of other
    lengths, a null pointer): -600 for every key, nothing read."""
    keys, buffer_ptrs, sizes = list(keys), list(buffer_ptrs), list(sizes)
    if len(buffer_ptrs) != len(keys) or len(sizes) != len(keys) or 0 in buffer_ptrs:
        return [_INVALID_PARAMS] * len(keys)
    results = self.batch_get_into(keys, buffer_ptrs, sizes)
    return [None if read <= 0 else _tensor_at(ptr, read)
            for read, ptr in zip(results, buffer_ptrs)]


def put_tensor_from(self, key: str, buffer_ptr: int, size: int) -> int:
    """Stores the [header][data] object at buffer_ptr (as get_tensor_into leaves it; `size` may
    be larger). -600 when the memory holds no stored tensor within `size` bytes."""
    return _write_from(self, key, buffer_ptr, size, False)


def batch_put_tensor_from(self, keys: List[str], buffer_ptrs: List[int],
                          sizes: List[int]) -> List[int]:
    return _write_many_from(self, keys, buffer_ptrs, sizes, False)


def upsert_tensor_from(self, key: str, buffer_ptr: int, size: int) -> int:
    """put_tensor_from that replaces an existing object."""
    return _write_from(self, key, buffer_ptr, size, True)


def batch_upsert_tensor_from(self, keys: List[str], buffer_ptrs: List[int],
                             sizes: List[int]) -> List[int]:
    return _write_many_from(self, keys, buffer_ptrs, sizes, True)


def put_tensor_with_tp(self, key: str, tensor, tp_rank: int = 0, tp_size: int = 1,
                       split_dim: int = 0) -> int:
    """Stores the tensor, or with tp_size > 1 its tp_size equal chunks along split_dim as
    ``{key}_tp_{rank}`` (every chunk, whatever tp_rank). 0 or the first error."""
    return pub_tensor_with_tp(self, key, tensor, None, tp_rank, tp_size, split_dim)


def pub_tensor_with_tp(self, key: str, tensor, config=None, tp_rank: int = 0, tp_size: int = 1,
                       split_dim: int = 0) -> int:
    if tp_size <= 1:
        return _write_one(self, key, tensor, config, False)
    return _write_tp_many(self, [key], [tensor], config, tp_size, split_dim)[0]


def batch_put_tensor_with_tp(self, base_keys: List[str], tensors_list: list, tp_rank: int = 0,
                             tp_size: int = 1, split_dim: int = 0) -> List[int]:
    return batch_pub_tensor_with_tp(self, base_keys, tensors_list, None, tp_rank, tp_size,
                                    split_dim)


def batch_pub_tensor_with_tp(self, base_keys: List[str], tensors_list: list, config=None,
                             tp_rank: int = 0, tp_size: int = 1,
                             split_dim: int = 0) -> List[int]:
    if tp_size <= 1:
        return _write_many(self, base_keys, tensors_list, config, False)
    return _write_tp_many(self, base_keys, tensors_list, config, tp_size, split_dim)


def put_tensor_with_tp_from(self, key: str, buffer_ptr: int, size: int, tp_rank: int = 0,
                            tp_size: int = 1, split_dim: int = 0) -> int:
    """put_tensor_with_tp of the whole tensor stored at buffer_ptr ([header][data], as
    get_tensor_into leaves it): every chunk is written, whatever tp_rank. -600 when the memory
    holds no stored tensor or the split is not even."""
    if tp_size <= 1:
        return put_tensor_from(self, key, buffer_ptr, size)
    tensor = _tensor_at(buffer_ptr, size)
    if tensor is None:
        return _INVALID_PARAMS
    return pub_tensor_with_tp(self, key, tensor, None, tp_rank, tp_size, split_dim)


def batch_put_tensor_with_tp_from(self, base_keys: List[str], buffer_ptrs: List[int],
                                  sizes: List[int], tp_rank: int = 0, tp_size: int = 1,
                                  split_dim: int = 0) -> List[int]:
    """Per base key 0 or an error; a buffer that holds no stored tensor gets -600 and the others
    are still written (upstream's rule). Lists of other lengths: -600 for every key."""
    if tp_size <= 1:
        return batch_put_tensor_from(self, base_keys, buffer_ptrs, sizes)
    base_keys, buffer_ptrs, sizes = list(base_keys), list(buffer_ptrs), list(sizes)
    if len(buffer_ptrs) != len(base_keys) or len(sizes) != len(base_keys):
        return [_INVALID_PARAMS] * len(base_keys)
    tensors = [_tensor_at(ptr, size) for ptr, size in zip(buffer_ptrs, sizes)]
    return _write_tp_many(self, base_keys, tensors, None, tp_size, split_dim)


def get_tensor_with_tp(self, key: str, tp_rank: int = 0, tp_size: int = 1, split_dim: int = 0):
    """The chunk of rank tp_rank (``{key}_tp_{tp_rank}``), or the whole tensor for tp_size <= 1."""
    return get_tensor(self, key if tp_size <= 1 else _tp_key(key, tp_rank))


def batch_get_tensor_with_tp(self, base_keys: List[str], tp_rank: int = 0,
                             tp_size: int = 1) -> list:
    keys = list(base_keys) if tp_size <= 1 else [_tp_key(k, tp_rank) for k in base_keys]
    return batch_get_tensor(self, keys)


def get_tensor_with_tp_into(self, key: str, buffer_ptr: int, size: int, tp_rank: int = 0,
                            tp_size: int = 1, split_dim: int = 0):
    """get_tensor_with_tp read into [buffer_ptr, buffer_ptr+size): a tensor over that memory, or
    None."""
    return get_tensor_into(self, key if tp_size <= 1 else _tp_key(key, tp_rank), buffer_ptr, size)


def batch_get_tensor_with_tp_into(self, base_keys: List[str], buffer_ptrs: List[int],
                                  sizes: List[int], tp_rank: int = 0, tp_size: int = 1) -> list:
    """batch_get_tensor_with_tp read into the buffers; bad arguments as batch_get_tensor_into."""
    keys = list(base_keys) if tp_size <= 1 else [_tp_key(k, tp_rank) for k in base_keys]
    return batch_get_tensor_into(self, keys, buffer_ptrs, sizes)


# --- safetensors files (the format: u64 header length, JSON header, raw little-endian data) ---

_SAFETENSORS_DTYPES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16",
    "float16": "F16", "bfloat16": "BF16", "int32": "I32", "uint32": "U32", "float32": "F32",
    "float64": "F64", "int64": "I64", "uint64": "U64", "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2", "complex64": "C64",
}


def _write_safetensors(path: str, name: str, tensor) -> None:
    dtype = str(tensor.dtype).replace("torch.", "")
    code = _SAFETENSORS_DTYPES.get(dtype)
    if code is None:
        raise ValueError(f"dtype {dtype} has no safetensors name")
    data = _data_view(tensor)
    data = b"" if data is None else data.tobytes()
    entry = {"dtype": code, "shape": list(tensor.shape), "data_offsets": [0, len(data)]}
    header = json.dumps({name: entry}, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(header)))
        out.write(header)
        out.write(data)


def _read_safetensors(path: str) -> dict:
    """{name: tensor} in file order (tensors own their memory)."""
    torch = _torch()
    names = {code: getattr(torch, dtype) for dtype, code in _SAFETENSORS_DTYPES.items()
             if hasattr(torch, dtype)}
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("not a safetensors file")
    (header_len,) = struct.unpack_from("<Q", raw, 0)
    if 8 + header_len > len(raw):
        raise ValueError("truncated safetensors header")
    header = json.loads(raw[8:8 + header_len].decode())
    body = bytearray(raw[8 + header_len:])
    entries = sorted(((info["data_offsets"][0], name, info) for name, info in header.items()
                      if name != "__metadata__"), key=lambda item: item[0])
    out = {}
    for _, name, info in entries:
        dtype = names.get(info["dtype"])
        begin, end = info["data_offsets"]
        shape = [int(d) for d in info["shape"]]
        if dtype is None or not 0 <= begin <= end <= len(body):
            raise ValueError(f"bad safetensors entry {name!r}")
        numel = 1
        for d in shape:
            numel *= d
        if numel * torch.empty((), dtype=dtype).element_size() != end - begin:
            raise ValueError(f"safetensors entry {name!r}: size does not match its shape")
        if numel == 0:
            out[name] = torch.empty(shape, dtype=dtype)
        else:
            out[name] = torch.frombuffer(body, dtype=dtype, count=numel,
                                         offset=begin).reshape(shape)
    return out


def save_tensor_to_safetensor(self, key: str, file_name: Optional[str] = None) -> int:
    """Writes the tensor stored under `key` to a safetensors file (`file_name`, else a file named
    as the key) with the entry name `key`. 0; -1100 when the key holds no tensor (upstream's code);
    -600 before setup() or when the file cannot be written."""
    if not self.get_hostname():
        return _INVALID_PARAMS
    tensor = get_tensor(self, key)
    if tensor is None:
        return _FILE_NOT_FOUND
    try:
        _write_safetensors(key if file_name is None else file_name, key, tensor)
    except (OSError, ValueError, TypeError):
        return _INVALID_PARAMS
    return 0


def load_tensor_from_safetensor(self, key: Optional[str] = None, file_name: Optional[str] = None):
    """Puts a tensor of a safetensors file into the store under `key` (else under `file_name`) and
    returns it: the entry named `key`, else the file's first entry. None when the file cannot be
    read, has no tensor, or the put fails."""
    if file_name is None:
        raise TypeError("load_tensor_from_safetensor() missing required argument 'file_name'")
    try:
        tensors = _read_safetensors(file_name)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if not tensors:
        return None
    target = file_name if key is None else key
    tensor = tensors.get(key) if key is not None else None
    if tensor is None:
        tensor = next(iter(tensors.values()))
    if put_tensor(self, target, tensor) != 0:
        return None
    return tensor


_METHODS = (
    put_tensor, pub_tensor, upsert_tensor, upsert_pub_tensor,
    batch_put_tensor, batch_pub_tensor, batch_upsert_tensor, batch_upsert_pub_tensor,
    get_tensor, batch_get_tensor, get_tensor_into, batch_get_tensor_into,
    put_tensor_from, batch_put_tensor_from, upsert_tensor_from, batch_upsert_tensor_from,
    put_tensor_with_tp, pub_tensor_with_tp, batch_put_tensor_with_tp, batch_pub_tensor_with_tp,
    get_tensor_with_tp, batch_get_tensor_with_tp, get_tensor_with_tp_into,
    batch_get_tensor_with_tp_into, put_tensor_with_tp_from, batch_put_tensor_with_tp_from,
    save_tensor_to_safetensor, load_tensor_from_safetensor,
)


def install(cls) -> None:
    """Adds the tensor methods to the store class."""
    for function in _METHODS:
        setattr(cls, function.__name__, function)
