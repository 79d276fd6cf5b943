"""PMF, the Piece Model Format of Bad Sector's Piece Model Editor, written for the MS-DOS game
Post Apocalyptic Petra: a tree of rigid triangle-list pieces animated by per-piece Euler
rotations and a root position, every frame baked.

Versions: ``PMF1`` (the only one documented; another digit is rejected as unsupported).
Spec: ``shared/specs/pmf.md``, made precise from the format author's own description (the seed,
``shared/specs/seeds/001_dd0678b0002fd38a.txt``; http://runtimeterror.com/tools/piecemod/). No
public implementation or sample file exists, so the open conventions (Euler order, angle unit,
root position, handedness, winding) are options; see :mod:`.conventions` and ``docs/pmf.md``.
"""

from __future__ import annotations

from ...registry import FormatSpec
from .conventions import OPTIONS
from .document import PmfDocument
from .from_scene import from_scene
from .info import info
from .layout import MAGIC
from .read import read, sniff
from .sample import make_sample
from .to_scene import to_scene
from .write import write

__all__ = ["SPEC", "PmfDocument"]


SPEC = FormatSpec(
    name="pmf",
    title="PMF Piece Model Format (Piece Model Editor / Post Apocalyptic Petra)",
    extensions=(".pmf",),
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    info=info,
    document_type=PmfDocument,
    make_sample=make_sample,
    options=OPTIONS,
    notes="No public sample exists; the Euler order, angle unit, root-position mode, "
          "handedness and winding are assumptions (options).",
)

assert MAGIC == b"PMF1"
