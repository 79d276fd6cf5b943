"""Papa's option choices that :mod:`.csg` applies, named here apart from it so listing the
formats' options (``gamemesh --help``) imports no numpy."""

from __future__ import annotations

__all__ = ["CSG_SHADERS", "DEFAULT_TEXTURE_DIR"]

# The CSG shaders Blender-PAPA-IO exports (terrain features), from the plainest up.
CSG_SHADERS = ("textured", "textured_normal", "textured_normal_material")
# Where PA's terrain textures live in its media tree: linked texture paths start here when the
# scene names an image only.
DEFAULT_TEXTURE_DIR = "/pa/terrain/textures"
