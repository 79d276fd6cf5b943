"""gamemesh inside Blender: File > Import / Export > gamemesh, for every format gamemesh has.

``register()`` and ``unregister()`` are what Blender calls; the extension built by
``gamemesh blender-extension OUT.zip`` (see :mod:`gamemesh.blender.extension`) is a two-line
add-on that calls them, with the gamemesh and Pillow wheels bundled. ``bpy`` is imported only
when Blender registers the add-on, so this package imports anywhere.
"""

from __future__ import annotations

import importlib

__all__ = ["register", "unregister"]


def register() -> None:
    # bpy exists only inside Blender: import the operators when Blender asks for them.
    importlib.import_module(f"{__name__}.operators").register()


def unregister() -> None:
    importlib.import_module(f"{__name__}.operators").unregister()
