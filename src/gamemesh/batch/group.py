"""Grouping files that convert together: a Papa unit with its textures and animations, a
Pangya character with its parts.

A format's ``siblings(path)`` names the other files a load of ``path`` reads. Those files are
*claimed*: they are converted once, as part of the file that reads them (the unit's primary),
and are not converted on their own. When files claim each other (an animation that reads its
unit's skeleton, the unit that reads the animation), the file whose load reads the most wins,
so the unit, not one of its parts, becomes the primary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..registry import by_name
from .discover import Candidate

__all__ = ["SiblingsFn", "Unit", "group", "registry_siblings"]

SiblingsFn = Callable[[Candidate], list[Path]]


@dataclass
class Unit:
    """One conversion: the primary file and the files its load reads."""

    primary: Candidate
    members: list[Candidate] = field(default_factory=list)
    # Siblings outside the walked tree (a shared texture folder): hashed, not recorded as rows.
    outside: list[Path] = field(default_factory=list)
    # Why siblings could not be listed (a damaged unit file): becomes a note.
    problem: str | None = None

    @property
    def size(self) -> int:
        return self.primary.size + sum(m.size for m in self.members)


def registry_siblings(c: Candidate) -> list[Path]:
    """The format's own sibling function (none: the file stands alone)."""
    spec = by_name(c.format)
    return [] if spec.siblings is None else list(spec.siblings(c.path))


def group(candidates: list[Candidate], siblings: SiblingsFn = registry_siblings) -> list[Unit]:
    """Units in path order; every candidate is either a primary or a member of exactly one."""
    by_path = {c.path.resolve(): c for c in candidates}
    claims: dict[str, list[Candidate]] = {}
    outside: dict[str, list[Path]] = {}
    problems: dict[str, str] = {}
    claimed: set[str] = set()
    for c in candidates:
        try:
            listed = siblings(c)
        except Exception as e:  # a damaged primary must not stop the plan: it fails later
            problems[c.rel] = f"{type(e).__name__}: {e}"
            listed = []
        inner: list[Candidate] = []
        outer: list[Path] = []
        for p in dict.fromkeys(Path(x).resolve() for x in listed):
            hit = by_path.get(p)
            if hit is not None and hit.rel != c.rel:
                inner.append(hit)
            elif hit is None and p.is_file():
                outer.append(p)
        claims[c.rel] = inner
        outside[c.rel] = outer
        claimed.update(m.rel for m in inner)

    # Unclaimed files first, then those whose load reads the most; path order breaks ties.
    order = sorted(candidates, key=lambda c: (c.rel in claimed, -len(claims[c.rel]), c.rel))
    owner: dict[str, str] = {}
    units: dict[str, Unit] = {}
    for c in order:
        if c.rel in owner:
            continue
        unit = Unit(c, outside=outside[c.rel], problem=problems.get(c.rel))
        owner[c.rel] = c.rel
        for m in claims[c.rel]:
            if m.rel not in owner:
                owner[m.rel] = c.rel
                unit.members.append(m)
        units[c.rel] = unit
    for u in units.values():
        u.members.sort(key=lambda m: m.rel)
    return [units[k] for k in sorted(units)]
