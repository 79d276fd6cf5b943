"""See a model: a local web viewer (three.js, served on loopback) and browserless thumbnails.

``gamemesh view FILE`` converts any supported file to GLB in memory and serves it with a small
page (:mod:`gamemesh.viewer.server`, assets in ``static/``, three.js vendored with its licence
in ``static/vendor/``). ``gamemesh thumbnail FILE OUT.png`` renders a picture with the numpy
software rasterizer (:mod:`gamemesh.viewer.thumbnail`), no browser or GPU needed.
"""

from __future__ import annotations

from .thumbnail import contact_sheet, render_thumbnail

__all__ = ["contact_sheet", "render_thumbnail"]
