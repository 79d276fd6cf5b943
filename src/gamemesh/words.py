"""Values as words and aligned tables, for people (``--json`` keeps the data as it is): a list
reads ``a, b``, a mapping ``8bpp 1``, a list of records a table with a header row. Shared by
``gamemesh info`` and the viewer's Info panel (both front ends; it imports nothing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["fields", "is_table", "label", "table", "words"]


def label(key: str) -> str:
    return str(key).replace("_", " ")


def words(value: Any) -> str:
    """One value on one line, without Python's brackets and quotes."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{label(k)} {words(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        sep = "; " if any(isinstance(v, Mapping | list | tuple) for v in value) else ", "
        return sep.join(words(v) for v in value) or "none"
    return str(value)


def is_table(value: Any) -> bool:
    return (isinstance(value, list | tuple) and len(value) > 0
            and all(isinstance(v, Mapping) for v in value))


def table(rows: Sequence[Mapping[str, Any]], indent: str = "") -> list[str]:
    """Records as columns under a header of their keys (in first-seen order)."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cells = [[label(k) for k in keys]] + [[words(r.get(k)) for k in keys] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(keys))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in cells]


def fields(items: Sequence[tuple[str, Any]], indent: str = "  ") -> list[str]:
    """``key: value`` lines with the values aligned; a list of records becomes a table under
    its key."""
    width = max((len(label(k)) for k, v in items if not is_table(v)), default=0) + 1
    out: list[str] = []
    for key, value in items:
        if is_table(value):
            out.append(f"{indent}{label(key)}:")
            out += table(value, indent + "  ")
        else:
            out.append(f"{indent}{label(key) + ':':<{width}} {words(value)}")
    return out
