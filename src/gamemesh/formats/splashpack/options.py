"""SPLASHPACK's option defaults, named here apart from the writers so listing the formats'
options (``gamemesh --help``) imports no numpy."""

from __future__ import annotations

__all__ = ["PLAYER_DEFAULTS"]

# SplashEdit's PSXPlayer defaults (psxsplash/splashedit Runtime/PSXPlayer.cs; splashedit-ng
# uses the same values), in scene units, per second where a speed: see modern/player.py.
PLAYER_DEFAULTS = {"player_height": 1.8, "player_radius": 0.5, "move_speed": 3.0,
                   "sprint_speed": 8.0, "jump_height": 2.0, "gravity": 20.0}
