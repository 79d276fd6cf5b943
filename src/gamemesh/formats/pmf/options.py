"""PMF's options and their choices: the conventions :mod:`.conventions` applies, named here
apart from it so listing the formats' options (``gamemesh --help``) imports no numpy."""

from __future__ import annotations

from ...registry import Option

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
ANGLE_UNITS = ("auto", "degrees", "radians")
ROOT_MODES = ("replace", "add")
HANDEDNESS = ("right", "left")
WINDINGS = ("auto", "ccw", "cw")
DEFAULT_FPS_FOR_ZERO = 10

OPTIONS = (
    Option("euler_order", "PMF rotations: intrinsic axis order of the stored X,Y,Z angles "
           "(XYZ means R = Rx*Ry*Rz, the glRotatef x-then-y-then-z pattern)", str, "XYZ",
           EULER_ORDERS),
    Option("angle_unit", "PMF rotations: angle unit; auto guesses per file (any |angle| > 2 pi "
           "means degrees, otherwise the default, degrees); writing uses degrees unless "
           "radians is given", str, "auto", ANGLE_UNITS),
    Option("root_position", "PMF frames: the root position replaces the root piece's "
           "translation, or adds to it", str, "replace", ROOT_MODES),
    Option("handedness", "PMF coordinates: right-handed +Y up (as glTF) or left-handed "
           "(mirrored in Z on conversion)", str, "right", HANDEDNESS),
    Option("winding", "PMF front faces: auto (detected from the stored normals), ccw or cw",
           str, "auto", WINDINGS),
    Option("flip_v", "PMF UVs: write v as 1 - v (the raw values pass through by default)",
           bool, False),
    Option("texture", "PMF -> glTF: an image file (PNG, JPEG or any Pillow reads) to put on "
           "every piece as its base colour (PMF stores no texture); relative to the PMF file",
           str, None),
    Option("default_fps", "PMF clips whose fps byte is 0: the rate assumed for timing", int,
           DEFAULT_FPS_FOR_ZERO),
    Option("fps", "glTF -> PMF: frames per second to sample each clip at (1..255; default: "
           "the clip's extras.fps, else the spacing of its keys)", int, None),
    Option("partial_triangles", "PMF reading: a vertex count that is not a multiple of 3 is "
           "an error, or kept (the last 1-2 vertices form no triangle)", str, "error",
           ("error", "keep")),
)
