"""SPLASHPACK versions 20..26 (the 2026 rewrite, SplashEdit today): the main file with the
``.vram`` and ``.spu`` sidecars (``shared/specs/splashpack-modern.md``)."""
