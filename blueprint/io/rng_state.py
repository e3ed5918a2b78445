"""numpy Generator states as msgpack-able maps (for manifests): 128-bit integers and arrays
encoded so that a decoded Generator continues exactly where the encoded one stopped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from blueprint.io.errors import CheckpointError

__all__ = ["decode_rng_state", "encode_rng_state"]

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


def _encode_state(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _encode_state(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return {"__array__": value.dtype.str, "values": value.ravel().tolist()}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _UINT64_MAX:
        if value < 0:
            raise ValueError(f"cannot encode negative big integer {value} in an RNG state")
        words = []
        while value:
            words.append(value & _UINT64_MAX)
            value >>= 64
        return {"__uint__": words}  # 64-bit words, least significant first
    return value


def _decode_state(value: Any) -> Any:
    if isinstance(value, dict):
        if "__array__" in value:
            return np.array(value["values"], dtype=np.dtype(value["__array__"]))
        if "__uint__" in value:
            return sum(int(w) << (64 * i) for i, w in enumerate(value["__uint__"]))
        return {k: _decode_state(v) for k, v in value.items()}
    return value


def encode_rng_state(rng: np.random.Generator | np.random.BitGenerator) -> dict[str, Any]:
    """A generator's exact state as msgpack-able maps, lists and 64-bit ints (for manifests)."""
    bit_generator = rng.bit_generator if isinstance(rng, np.random.Generator) else rng
    return _encode_state(bit_generator.state)


def decode_rng_state(state: Mapping[str, Any]) -> np.random.Generator:
    """A new Generator that continues exactly where the encoded one stopped."""
    decoded = _decode_state(dict(state))
    name = decoded.get("bit_generator")
    if name not in _BIT_GENERATORS:
        raise CheckpointError(f"unknown bit generator {name!r} in checkpoint RNG state")
    bit_generator = getattr(np.random, name)()
    bit_generator.state = decoded
    return np.random.Generator(bit_generator)
