"""The native SPLASHPACK documents: one class per generation (``v1/document.py``,
``modern/document.py``), nothing converted in either."""

from __future__ import annotations

from .modern.document import ModernDocument
from .v1.document import SplashpackDocument

Document = SplashpackDocument | ModernDocument

__all__ = ["Document", "ModernDocument", "SplashpackDocument"]
