"""msgpack as the checkpoint files use it: packing metadata (numpy scalars converted, arrays
refused), unpacking untrusted bytes with length limits, and the type checks of decoded values."""

from __future__ import annotations

import os
from typing import Any

import msgpack
import numpy as np

__all__ = [
    "DECODE_ERRORS",
    "UNPACK_MAX_BUFFER",
    "is_int",
    "is_real",
    "normalized",
    "packb",
    "unpack_limits",
    "unpackb",
    "unpackb_limited",
]

UNPACK_MAX_BUFFER = 256 << 20  # caps the header object (meta) and any single chunk on read
_MAX_CONTAINER_LEN = 1 << 20  # items in one msgpack array or map of a header or manifest


def _msgpack_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        raise TypeError(
            f"numpy array (shape {obj.shape}, dtype {obj.dtype}) in checkpoint metadata: "
            "pass arrays in `arrays`, or convert with .tolist()"
        )
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (os.PathLike,)):
        return os.fspath(obj)
    raise TypeError(f"cannot store a {type(obj).__name__} in checkpoint metadata: {obj!r}")


def packb(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True, default=_msgpack_default)


def unpackb(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def normalized(value: Any) -> Any:
    """The value as it comes back from msgpack (tuples -> lists, numpy scalars -> Python)."""
    try:
        return unpackb(packb(value))
    except (TypeError, ValueError, OverflowError):
        return value


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


DECODE_ERRORS = (
    msgpack.UnpackException,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    OverflowError,
    EOFError,
    RuntimeError,  # lz4 reports a corrupt frame as RuntimeError
    MemoryError,  # belt and braces: every size is checked before it is allocated
    RecursionError,
)


def unpack_limits(budget: int) -> dict[str, int]:
    """msgpack length limits for a stream that can hold at most ``budget`` bytes.

    The unpacker allocates a list or dict for an array or map header before reading its items, so
    a five-byte header could otherwise ask for 2**32 slots; every item takes at least one byte,
    so ``budget`` bounds every honest length, and the container cap bounds what one header costs
    before its items arrive. Extension types are never written, so none are read.
    """
    budget = max(int(budget), 0)
    return {
        "max_str_len": min(budget, UNPACK_MAX_BUFFER),
        "max_bin_len": min(budget, UNPACK_MAX_BUFFER),
        "max_array_len": min(budget, _MAX_CONTAINER_LEN),
        "max_map_len": min(budget // 2, _MAX_CONTAINER_LEN),
        "max_ext_len": 0,
    }


def unpackb_limited(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False, **unpack_limits(len(data)))
