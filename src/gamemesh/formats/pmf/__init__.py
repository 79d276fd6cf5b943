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

from ...registry import FormatSpec, lazy
from .options import OPTIONS

__all__ = ["SPEC"]


SPEC = FormatSpec(
    name="pmf",
    title="PMF Piece Model Format (Piece Model Editor / Post Apocalyptic Petra)",
    extensions=(".pmf",),
    sniff=lazy(__name__, "read:sniff"),
    read=lazy(__name__, "read:read"),
    write=lazy(__name__, "write:write"),
    to_scene=lazy(__name__, "to_scene:to_scene"),
    from_scene=lazy(__name__, "from_scene:from_scene"),
    info=lazy(__name__, "info:info"),
    document_type=lazy(__name__, "document:PmfDocument"),
    make_sample=lazy(__name__, "sample:make_sample"),
    options=OPTIONS,
    notes="No public sample exists; the Euler order, angle unit, root-position mode, "
          "handedness and winding are assumptions (options).",
)
