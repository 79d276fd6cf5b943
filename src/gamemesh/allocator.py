"""Keep freed memory for reuse in a converting process (glibc only; called by the CLI and bench).

A conversion allocates arrays of the whole model several times over (read, scene, GLB) and frees
them at once. glibc hands blocks over its mmap threshold back to the kernel on free and trims
the heap top, so the next array of that size faults in fresh zeroed pages: on a 20 MB file that
is a third of the conversion's time (papa 20 MB to GLB: 117 ms of CPU, 90 ms tuned; SPLASHPACK:
133 vs 88). Tuned, large blocks come from the heap and freed memory stays for the next array.
Peak RSS grows by at most the 64 MiB heap step (``gamemesh convert`` of a 120 MB Papa file: 494
against 451 MB; SPLASHPACK 600 against 598), and the process keeps its high-water mark until it
exits, which suits a command that converts and ends.

Only the command-line front end calls :func:`tune` (a library should not change its host's
allocator); ``GAMEMESH_MALLOC=default`` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["tune", "tuned"]

# mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_MAX = -4

_state = {"tuned": False}


def tune() -> bool:
    """Tune glibc's malloc as described above; True when it took effect (False elsewhere: musl,
    macOS, Windows, or ``GAMEMESH_MALLOC=default``)."""
    if _state["tuned"]:
        return True
    if os.environ.get("GAMEMESH_MALLOC", "") == "default" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_MAX, 0) == 1  # large blocks from the heap, reused after free
          and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1  # never give the heap top back
          and mallopt(_M_TOP_PAD, 64 << 20) == 1)  # grow the heap in 64 MiB steps
    _state["tuned"] = ok
    return ok


def tuned() -> bool:
    """Whether :func:`tune` took effect in this process."""
    return bool(_state["tuned"])
