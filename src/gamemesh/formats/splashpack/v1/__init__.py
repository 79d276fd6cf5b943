"""SPLASHPACK version 1 (2025, layouts B..H): the file holds everything, textures included
(``shared/specs/splashpack.md``)."""
