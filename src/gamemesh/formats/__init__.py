"""One package per format, each defining ``SPEC`` (a :class:`gamemesh.registry.FormatSpec`)."""
