"""The PET kinds (the ``--kind`` choices) and their extensions, apart from :mod:`.layout` (numpy
dtypes) so the registry lists PET's options without importing numpy."""

from __future__ import annotations

__all__ = ["EXTENSIONS", "KINDS"]

KINDS = ("pet", "apet", "bpet", "mpet")
EXTENSIONS = tuple(f".{k}" for k in KINDS)
