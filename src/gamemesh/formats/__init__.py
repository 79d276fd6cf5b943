"""One package per format, each defining ``SPEC`` (a :class:`gamemesh.registry.FormatSpec`).

Python binds an imported subpackage as an attribute of its parent, so once any
``gamemesh.formats.X`` is imported, ``gamemesh.formats`` *is this module*, not the public
function ``gamemesh.formats()``. The module is therefore made callable with the same meaning,
so ``gamemesh.formats()`` lists the formats whichever of the two the name holds.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..registry import FormatSpec


class _FormatsModule(types.ModuleType):
    def __call__(self) -> list[FormatSpec]:
        from ..registry import formats

        return formats()


sys.modules[__name__].__class__ = _FormatsModule
