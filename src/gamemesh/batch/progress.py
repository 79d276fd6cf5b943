"""Progress on stderr: a bar with files/s and ETA on a terminal, a plain line every few seconds
when piped (a log file should not fill with carriage returns), nothing with ``--quiet``."""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_duration"]


def format_duration(seconds: float) -> str:
    s = max(0, round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    def __init__(self, total: int, total_bytes: int, *, stream: TextIO | None = None,
                 quiet: bool = False, interval: float = 5.0, tty: bool | None = None,
                 label: str = "batch") -> None:
        self.total = total
        self.total_bytes = total_bytes
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.interval = interval
        self.tty = self.stream.isatty() if tty is None else tty
        self.label = label
        self.done = 0
        self.bytes = 0
        self.errors = 0
        self.skipped = 0
        self.start = time.monotonic()
        self._last = self.start
        self._drawn = False

    def advance(self, files: int, nbytes: int, *, errors: int = 0, skipped: int = 0) -> None:
        self.done += files
        self.bytes += nbytes
        self.errors += errors
        self.skipped += skipped
        self.tick()

    def tick(self, force: bool = False) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        # A terminal redraws ten times a second; a pipe gets a line every ``interval``.
        gap = 0.1 if self.tty else self.interval
        if not force and now - self._last < gap:
            return
        self._last = now
        if self.tty:
            self._draw_bar(now)
        else:
            print(f"gamemesh: {self.label}: {self._status(now)}", file=self.stream, flush=True)

    def message(self, text: str) -> None:
        """A line that does not fight with the bar (shown even with --quiet: it is news)."""
        if self.tty and self._drawn:
            self.stream.write("\r\x1b[2K")
        print(f"gamemesh: {text}", file=self.stream, flush=True)
        self._drawn = False

    def close(self) -> None:
        if self.quiet or not self.total:
            return
        self.tick(force=True)
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def rates(self, now: float | None = None) -> tuple[float, float, float | None]:
        """(files/s, MB/s, seconds left) over what actually ran."""
        elapsed = max(1e-9, (now or time.monotonic()) - self.start)
        fps = self.done / elapsed
        mbs = self.bytes / elapsed / 1e6
        left = self.total - self.done
        eta: float | None = None
        if self.total_bytes:
            # Bytes, never files: a folder of many small files then one big one would make a
            # files-based estimate jump; time tracks bytes read far better.
            if self.bytes:
                eta = max(0, self.total_bytes - self.bytes) / (self.bytes / elapsed)
        elif fps > 0:
            eta = left / fps
        return fps, mbs, (eta if left > 0 else 0.0)

    def fraction(self) -> float:
        """How much is done, by bytes when the inputs have any (as the ETA)."""
        if self.total_bytes:
            return min(1.0, self.bytes / self.total_bytes)
        return self.done / self.total if self.total else 1.0

    def _status(self, now: float) -> str:
        fps, mbs, eta = self.rates(now)
        pct = 100.0 * self.fraction()
        eta_s = format_duration(eta) if eta is not None else "?"
        extra = f", {self.errors} errors" if self.errors else ""
        extra += f", {self.skipped} unchanged" if self.skipped else ""
        return (f"{self.done}/{self.total} files ({pct:.0f}%), {fps:.1f} files/s, "
                f"{mbs:.2f} MB/s, ETA {eta_s}{extra}")

    def _draw_bar(self, now: float) -> None:
        status = self._status(now)
        cols = shutil.get_terminal_size((100, 20)).columns
        width = max(10, min(40, cols - len(status) - 4))
        filled = int(width * self.fraction())
        bar = "#" * filled + "-" * (width - filled)
        line = f"[{bar}] {status}"[: cols - 1]
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()
        self._drawn = True
