"""How native data rides in glTF ``extras``: plain JSON values at the top of each ``extras``
object, and anything structured (a list, an object, null) as JSON text under the key with
``.json`` appended.

Why the text: assimp 5.2 (Debian's assimp-utils, and engines that load glTF through it) turns a
node's extras into metadata and aborts (``ai_assert`` in ``SceneCombiner.cpp``) when it copies a
scene whose metadata holds an array, an object or null; strings, booleans and numbers of any
sign and size copy fine. Blender, three.js and the Khronos validator take either shape. The
reader (``unpack_extras``) turns the text back into the value, so the native round trip is
unchanged, and files written before this shape still read.
"""

from __future__ import annotations

import json
import math
from itertools import chain, compress
from typing import Any

import numpy as np

__all__ = ["JSON_SUFFIX", "KEEP_STRUCTURED", "MAX_JSON_DEPTH", "clean_json", "json_depth",
           "pack_extras", "unpack_extras"]

JSON_SUFFIX = ".json"
# Keys whose structured value other tools read as it is: the glTF-wide convention for morph
# target names (three.js, Blender) is a list in the mesh's extras.
KEEP_STRUCTURED = frozenset({"targetNames"})
# JSON nesting deeper than this is refused: no glTF needs it, and walking it (here, in json, in
# the writer's json.dumps) would run out of stack.
MAX_JSON_DEPTH = 64

# Values clean_json passes through unchanged (exact types: a subclass may need converting);
# floats too, when finite.
_PLAIN = frozenset({int, str, bool, type(None)})
_FLOAT = frozenset({float})
_SCALAR = frozenset({int, str, bool, float})
_CONTAINER = frozenset((dict, list)).__contains__


def clean_json(value: Any) -> Any:
    """Make a value JSON: numpy values become lists and numbers, bytes become hex, a
    non-finite float becomes null."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean_json(x) for k, x in value.items()}
    if isinstance(value, list | tuple):
        # Lists of plain values (a matrix, a colour, a palette) stay as they are: one check of
        # the item types instead of a call per item.
        kinds = set(map(type, value))
        if kinds <= _PLAIN or (kinds == _FLOAT and math.isfinite(sum(value))):
            return list(value)
        return [clean_json(x) for x in value]
    if isinstance(value, np.ndarray):
        return clean_json(value.tolist())
    if isinstance(value, np.generic):
        return clean_json(value.item())
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def pack_extras(extras: dict[str, Any]) -> dict[str, Any]:
    """The ``extras`` object to write: plain values as they are, structured ones as JSON text
    under ``key.json``."""
    out: dict[str, Any] = {}
    for key, value in clean_json(extras).items():
        if type(value) in _SCALAR or key in KEEP_STRUCTURED:
            out[key] = value
        else:
            out[key + JSON_SUFFIX] = json.dumps(value, separators=(",", ":"),
                                                ensure_ascii=False, allow_nan=False)
    return out


def unpack_extras(extras: Any) -> dict[str, Any]:
    """A read ``extras`` object as the scene keeps it: ``key.json`` text back to its value
    (text that does not parse as strict JSON, or nests too deeply, stays as it is under its own
    key)."""
    if not isinstance(extras, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in extras.items():
        if type(value) is str and key.endswith(JSON_SUFFIX) and len(key) > len(JSON_SUFFIX):
            try:
                decoded = json.loads(value, parse_constant=_refuse)
            except (ValueError, RecursionError):
                decoded = None
            else:
                if json_depth(decoded) <= MAX_JSON_DEPTH:
                    out[key[:-len(JSON_SUFFIX)]] = decoded
                    continue
        out[key] = value
    return out


def _refuse(name: str) -> Any:
    """NaN and Infinity are not JSON: text holding them was not written by pack_extras."""
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def json_depth(doc: Any) -> int:
    """The deepest nesting of arrays and objects, walked level by level without recursion.
    Each level's values are gathered and filtered by C-level iteration (chain, map, compress):
    a Python test per value cost more than ``json.loads`` itself (json only makes exact dicts
    and lists, so their types are tested exactly). Stops counting past MAX_JSON_DEPTH."""
    if not _CONTAINER(type(doc)):
        return 1  # a bare value is one level, as the walk below would count it
    deepest, level = 0, [doc]
    while level and deepest <= MAX_JSON_DEPTH:
        deepest += 1
        kids = list(chain.from_iterable([v.values() if type(v) is dict else v for v in level]))
        level = list(compress(kids, map(_CONTAINER, map(type, kids))))
    return deepest
