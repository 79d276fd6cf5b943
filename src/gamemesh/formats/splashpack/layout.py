"""What both SPLASHPACK generations share on disk: the magic, and the PlayStation's own VRAM
and texture-page constants. Each generation's records are in its own ``layout``
(``v1/layout.py``: version 1, layouts B..H; ``modern/layout.py``: versions 20..26); the version
field after the magic says which generation reads a file (``read.py``).
"""

from __future__ import annotations

MAGIC = b"SP"

# The dither bit of a TPage attribute (psyqo TPageAttr, spec §b.5; the other fields are
# textures.psx's).
TPAGE_DITHER = 0x0200
# The default PSXData framebuffers: two 320x240 buffers stacked vertically (spec §b.10).
FRAMEBUFFERS = ((0, 0, 320, 240), (0, 256, 320, 240))
