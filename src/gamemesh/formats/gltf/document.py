"""A glTF file as parsed: the GLB container or the JSON text, its buffers, and the checks
every JSON value goes through (indices in range, integers where integers belong), so that a
malformed value ends in a FormatError naming its place as a JSON pointer.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy.typing as npt

from ...errors import (
    BadMagicError,
    CorruptDataError,
    FormatError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...registry import Context
from ...safeio import read_regular
from .extras import MAX_JSON_DEPTH, json_depth
from .uris import UriRefusedError, resolve_uri

FMT = "gltf"


@dataclass
class GltfDocument:
    """A parsed glTF: its JSON and its buffers, as they were."""

    json: dict[str, Any]
    buffers: list[bytes]
    glb: bool
    path: Path | None = None
    _cache: dict[int, npt.NDArray[Any]] = field(default_factory=dict, repr=False)


@lru_cache(maxsize=4096)
def pointer(where: str) -> str:
    """``accessors[3].count`` as the JSON pointer ``/accessors/3/count`` (as glTF-Validator
    reports places); GLB container fields (``header.version``) stay as they are."""
    if where.startswith(("header", "chunk", "json", "/")):
        return where
    return "/" + re.sub(r"\[(\d+)\]", r"/\1", where).replace(".", "/")


def err(what: str, *, field: str | None = None, expected: Any = None, actual: Any = None,
        offset: int | None = None, cls: type[FormatError] = CorruptDataError) -> FormatError:
    return cls(FMT, what, field=pointer(field) if field else None, expected=expected,
               actual=actual, offset=offset)


_MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)


class At:
    """Whatever a malformed JSON value makes Python raise inside ``where`` (a string where an
    object belongs, a list where a number does) becomes a FormatError naming that place. A
    class, not a generator context manager: a conversion enters one per image, material,
    mesh, node, skin and animation, and the generator's set-up cost four times as much."""

    __slots__ = ("where",)

    def __init__(self, where: str) -> None:
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        if e is None or isinstance(e, FormatError) or not isinstance(e, _MALFORMED):
            return  # nothing raised, or propagated as it is
        raise err(what=f"malformed value ({type(e).__name__}: {e})", field=self.where) \
            from None


# -- container -------------------------------------------------------------------------------
def parse(data: bytes, ctx: Context) -> GltfDocument:
    if data[:4] == b"glTF":
        js, bin_chunk = _parse_glb(data)
        glb = True
    else:
        js, bin_chunk, glb = data, None, False
    doc = _json(js)
    if not isinstance(doc, dict) or not isinstance(doc.get("asset"), dict):
        raise err(what="not a glTF document", field="asset", expected="an object", actual=None)
    version = str(doc["asset"].get("version", ""))
    if not version.startswith("2."):
        raise err(what="only glTF 2.x is read", field="asset.version", expected="2.x",
                  actual=version, cls=UnsupportedVersionError)
    buffers = []
    for i, b in enumerate(list_in(doc, "buffers")):
        with At(f"buffers[{i}]"):
            buffers.append(_load_buffer(b, i, bin_chunk, ctx))
    return GltfDocument(doc, buffers, glb, ctx.path)


def _json(js: bytes) -> Any:
    try:
        text = js.decode("utf-8-sig")
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise err(what=f"JSON does not parse ({e})", field="json") from None
    except RecursionError:
        doc = None
    except ValueError:  # an integer of more digits than Python converts (sys.int_info)
        raise _long_integer(text) from None
    if doc is None or json_depth(doc) > MAX_JSON_DEPTH:
        raise err(what="JSON nested too deeply", field="json",
                  expected=f"<= {MAX_JSON_DEPTH} levels", actual="more")
    # A lone surrogate can only come from a \uD800-\uDFFF escape (the text is UTF-8): look
    # for the escape in C, and walk the values only when there is one (a valid pair too).
    if _SURROGATE_ESCAPE.search(text):
        _check_unicode(doc)
    return doc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Digits(str):
    """An integer's digits too many to convert, standing in for it while its place is found."""


def _long_integer(text: str) -> FormatError:
    """The error for an integer longer than Python converts, naming its place: the text is
    parsed again with such integers kept as digits, and the first is looked for."""
    most = sys.get_int_max_str_digits()

    def parse_int(digits: str) -> int | _Digits:
        return _Digits(digits) if most and len(digits.lstrip("-")) > most else int(digits)

    try:
        place = _find(json.loads(text, parse_int=parse_int), lambda v: type(v) is _Digits)
    except (ValueError, RecursionError):
        place = None
    return err(what="integer too long", field=place or "json", expected=f"<= {most} digits",
               actual="more")


def _check_unicode(doc: Any) -> None:
    """Every string (keys too) is Unicode text: a lone surrogate (valid JSON, but no UTF-8
    text holds one) cannot be written to any file, so it is refused here, by its place."""
    place = _find(doc, lambda v: type(v) is str and _SURROGATE.search(v) is not None)
    if place is not None:
        raise err(what="string holds a lone surrogate, which is not Unicode text",
                  field=place, expected="UTF-8 text", actual="a \\uD800-\\uDFFF escape")


def _find(doc: Any, test: Callable[[Any], bool]) -> str | None:
    """The JSON pointer of the first value or key, in document order, that passes ``test``
    (None when none does). Walked with a stack: the depth is already bounded, not trusted."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, v = stack.pop()
        if test(v):
            return where or "/"
        if type(v) is dict:
            for k in v:
                if test(k):
                    return f"{where}/{_token(k)}"
            stack.extend((f"{where}/{_token(k)}", x) for k, x in reversed(v.items()))
        elif type(v) is list:
            stack.extend((f"{where}/{i}", x) for i, x in reversed(list(enumerate(v))))
    return None


def _token(key: str) -> str:
    """A key as a JSON pointer token (RFC 6901), surrogates escaped so the message prints."""
    key = key.replace("~", "~0").replace("/", "~1")
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _parse_glb(data: bytes) -> tuple[bytes, bytes | None]:
    if len(data) < 20:
        raise err(what="GLB header", field="header", expected=">= 20 bytes", actual=len(data),
                  cls=TruncatedError)
    _, version, length = struct.unpack_from("<III", data, 0)
    if version != 2:
        raise err(what="GLB version", field="header.version", expected=2, actual=version,
                  offset=4, cls=UnsupportedVersionError)
    if length > len(data) or length < 20:
        raise err(what="GLB length", field="header.length", expected=f"<= {len(data)}",
                  actual=length, offset=8, cls=TruncatedError)
    pos, js, binary = 12, None, None
    while pos + 8 <= length:
        clen, ctype = struct.unpack_from("<II", data, pos)
        if pos + 8 + clen > length:
            raise err(what="chunk runs past the end", field=f"chunk@{pos}.length",
                      expected=f"<= {length - pos - 8}", actual=clen, offset=pos,
                      cls=TruncatedError)
        body = data[pos + 8:pos + 8 + clen]
        if ctype == 0x4E4F534A and js is None:
            js = body
        elif ctype == 0x004E4942 and binary is None:
            binary = body
        pos += 8 + clen
    if js is None:
        raise err(what="no JSON chunk", field="chunk[0]", expected="JSON", actual="none",
                  offset=12, cls=BadMagicError)
    return js, binary


def external_uris(data: bytes) -> list[str]:
    """The URIs of a glTF's external buffers and images, as written (data URIs excluded)."""
    js = _parse_glb(data)[0] if data[:4] == b"glTF" else data
    doc = _json(js)
    if not isinstance(doc, dict):
        return []
    out = []
    for key in ("buffers", "images"):
        items = doc.get(key)
        for item in items if isinstance(items, list) else []:
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str) and uri and not uri.startswith("data:"):
                out.append(uri)
    return out


def _load_buffer(b: Any, i: int, bin_chunk: bytes | None, ctx: Context) -> bytes:
    if not isinstance(b, dict):
        raise err(what="buffer is not an object", field=f"buffers[{i}]")
    length = int_in(b.get("byteLength"), f"buffers[{i}].byteLength")
    uri = b.get("uri")
    if uri is None:
        data = bin_chunk if (i == 0 and bin_chunk is not None) else None
        if data is None:
            raise err(what="buffer has no uri and there is no GLB binary chunk",
                      field=f"buffers[{i}]")
    else:
        data = fetch_uri(str(uri), ctx, f"buffers[{i}].uri", length)
    if len(data) < length:
        raise err(what="buffer shorter than declared", field=f"buffers[{i}].byteLength",
                  expected=f"<= {len(data)}", actual=length, cls=TruncatedError)
    return data[:length]


def fetch_uri(uri: str, ctx: Context, where: str, length: int | None = None) -> bytes:
    """A URI's bytes: a data: URI's payload, or a file inside the .gltf's folder (or a folder
    of the ``allow_outside`` option), at most ``length`` bytes of it when that is known."""
    if uri.startswith("data:"):
        head, _, payload = uri.partition(",")
        try:
            if head.endswith(";base64"):
                return base64.b64decode(payload, validate=False)
            return urllib.parse.unquote_to_bytes(payload)
        except (binascii.Error, ValueError) as e:
            raise err(what=f"bad data URI ({e})", field=where) from None
    if ctx.path is None:
        raise err(what="external file but the glTF was given as bytes", field=where, actual=uri)
    target = resolve_uri(uri, ctx.path.parent, ctx.opt("allow_outside", ()), pointer(where))
    try:
        # A buffer uses its byteLength bytes: more is never read.
        return read_regular(target, ctx.opt("max_input_size"), FMT, take=length)
    except OSError as e:
        raise err(what=f"cannot read {uri!r} ({e.strerror})", field=where) from None
    except FormatError as e:  # not a regular file, or too large
        raise err(what=f"external file {uri!r} refused: {e.detail}", field=where,
                  expected=e.expected, actual=e.actual, cls=UriRefusedError) from None


def list_in(doc: dict[str, Any], key: str) -> list[Any]:
    v = doc.get(key, [])
    if not isinstance(v, list):
        raise err(what="must be an array", field=key, actual=type(v).__name__)
    return v


def int_in(v: Any, where: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v >= hi):
        rng = f"integer in [{lo}, {hi})" if hi is not None else f"integer >= {lo}"
        raise err(what="bad value", field=where, expected=rng, actual=v)
    return v


def uint_in(v: Any, hi: int | None, name: str, *parts: object) -> int:
    """``int_in(v, name.format(*parts), 0, hi)``, the field name formatted only for a value that
    fails (the hot paths check a plain int, which is all json makes, many times a file)."""
    if type(v) is int and v >= 0 and (hi is None or v < hi):
        return v
    return int_in(v, name.format(*parts), 0, hi)


def index_ref(obj: dict[str, Any], key: str, count: int, where: str) -> int | None:
    v = obj.get(key)
    return None if v is None else int_in(v, f"{where}.{key}", 0, count)
