"""Real files: ``python -m gamemesh.bench --corpus DIR [--peer FILE] [--markdown]``.

Every file under DIR that some format recognises is timed in process, each step the best of at
least ``repeat`` runs and of as many more as fit in ``min_time`` seconds (as ``timeit`` does: a
1 ms file is then timed warm, not on CPython's first, still unspecialised runs):
``read_native(path)`` (the whole call: path, stat, open, sniff, parse), ``load(path)`` (siblings
included) and ``load`` + GLB bytes. Files are grouped by format and kind: a *model*
file has meshes or animations, a *texture* file only images (its ``load`` is the texture
decode). Each group reports its totals and the median file.

``--peer FILE`` reads another parser's per-file timings as JSON lines with ``file`` and
``parse_s`` (what ``oracle_papa.py`` prints for Blender-PAPA-IO) and prints the ratio over the
files both measured: their parse against our ``read_native`` for model files, against our
``load`` (the decode to RGBA) for texture files.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import allocator, api, registry
from .errors import FormatError
from .formats.gltf import write_glb

__all__ = ["CLOCKS", "MAX_RUNS", "SMALL_FILE", "FileTiming", "best_of", "corpus_files",
           "group_rows", "machine", "small_rows", "time_corpus"]


@dataclass
class FileTiming:
    """One file's best-of-N times in seconds (None: the format has no such step)."""

    path: Path
    format: str
    kind: str  # "model", "texture" or "other"
    size: int
    read_s: float | None = None
    load_s: float | None = None
    glb_s: float | None = None
    # Wall times whatever the clock: a peer's times are wall times.
    read_wall_s: float | None = None
    load_wall_s: float | None = None
    error: str | None = None


def corpus_files(root: Path) -> list[tuple[Path, str]]:
    """Regular files under ``root`` that a format recognises, with its name, sorted."""
    out: list[tuple[Path, str]] = []
    for p in sorted(root.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        name = api.sniff(p)
        if name is not None:
            out.append((p, name))
    return out


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
"""``wall`` is elapsed time; ``cpu`` is this process's CPU time, which a machine shared with
other work inflates far less (the two agree on an idle machine)."""


MAX_RUNS = 200
"""The cap on runs per step whatever ``min_time`` asks (a 5 µs step would otherwise run 10,000
times for 50 ms)."""


def best_of(fn: Callable[[], Any], repeat: int, clock: str = "wall", min_time: float = 0.0
            ) -> tuple[float, float, Any]:
    """(best time on ``clock``, best wall time, the last result) over at least ``repeat`` runs,
    continuing (up to ``MAX_RUNS``) until the runs add up to ``min_time`` seconds on ``clock``."""
    now = CLOCKS[clock]
    best, best_wall, out = float("inf"), float("inf"), None
    runs, spent = 0, 0.0
    while runs < max(1, repeat) or (spent < min_time and runs < MAX_RUNS):
        t0, w0 = now(), time.perf_counter()
        out = fn()
        took = now() - t0
        best, spent, runs = min(best, took), spent + took, runs + 1
        best_wall = min(best_wall, time.perf_counter() - w0)
    return best, best_wall, out


def time_file(path: Path, fmt: str, repeat: int, clock: str = "wall", min_time: float = 0.0
              ) -> FileTiming:
    spec = registry.by_name(fmt)
    t = FileTiming(path, fmt, "other", path.stat().st_size)
    try:
        if spec.can_read:
            t.read_s, t.read_wall_s, _ = best_of(lambda: api.read_native(path), repeat, clock,
                                                 min_time)
        if spec.can_import:
            t.load_s, t.load_wall_s, scene = best_of(lambda: api.load(path), repeat, clock,
                                                     min_time)
            t.kind = _kind(scene)
            t.glb_s, _, _ = best_of(lambda: write_glb(api.load(path)), repeat, clock, min_time)
    except FormatError as e:  # a file the corpus holds but we refuse is a figure too
        t.error = str(e)
    return t


def _kind(scene: Any) -> str:
    """"texture" for a file of images only (shown on one quad each, as texture-only Papa and
    PTX files are), "model" for meshes or animations, else "other"."""
    verts = sum(p.vertex_count for m in scene.meshes for p in m.primitives)
    if scene.images and not scene.animations and verts <= 4 * len(scene.images):
        return "texture"
    return "model" if scene.meshes or scene.animations else "other"


def time_corpus(root: Path, repeat: int = 5, clock: str = "wall",
                progress: Callable[[FileTiming], None] | None = None, min_time: float = 0.0
                ) -> list[FileTiming]:
    out = []
    for path, fmt in corpus_files(root):
        out.append(time_file(path, fmt, repeat, clock, min_time))
        if progress is not None:
            progress(out[-1])
    return out


def _stats(values: list[float]) -> tuple[float, float]:
    return (sum(values), statistics.median(values)) if values else (0.0, 0.0)


def group_rows(timings: list[FileTiming]) -> list[dict[str, Any]]:
    """Totals and medians per (format, kind)."""
    groups: dict[tuple[str, str], list[FileTiming]] = {}
    for t in timings:
        if t.error is None:
            groups.setdefault((t.format, t.kind), []).append(t)
    rows = []
    for (fmt, kind), ts in sorted(groups.items()):
        size = sum(t.size for t in ts)
        row: dict[str, Any] = {"format": fmt, "kind": kind, "files": len(ts), "bytes": size}
        for step in ("read", "load", "glb"):
            vals = [v for t in ts if (v := getattr(t, f"{step}_s")) is not None]
            if vals:
                total, median = _stats(vals)
                row[f"{step}_total_s"] = round(total, 6)
                row[f"{step}_median_ms"] = round(median * 1e3, 4)
                row[f"{step}_MBps"] = round(sum(t.size for t in ts if getattr(
                    t, f"{step}_s") is not None) / total / 1e6, 1) if total else None
        rows.append(row)
    return rows


SMALL_FILE = 30_000
"""Files under this many bytes are "small": the issue's goal is a load of each within 1 ms."""


def small_rows(timings: list[FileTiming], limit: int = SMALL_FILE) -> list[dict[str, Any]]:
    """Per format, the loads of its files under ``limit`` bytes: how many, the median, the
    slowest (and which file), and how many took over 1 ms (a unit's or character's load
    counts its sibling files too: that is what ``load`` of the file does)."""
    groups: dict[str, list[FileTiming]] = {}
    for t in timings:
        if t.error is None and t.load_s is not None and t.size < limit:
            groups.setdefault(t.format, []).append(t)
    rows = []
    for fmt, ts in sorted(groups.items()):
        slowest = max(ts, key=lambda t: t.load_s or 0.0)
        loads = [t.load_s or 0.0 for t in ts]
        rows.append({"format": fmt, "files": len(ts),
                     "load_median_ms": round(statistics.median(loads) * 1e3, 3),
                     "load_max_ms": round(max(loads) * 1e3, 3), "slowest": slowest.path.name,
                     "over_1ms": sum(v > 1e-3 for v in loads)})
    return rows


def read_peer(path: Path) -> dict[Path, float]:
    """A peer's per-file parse times: JSON lines with ``file`` and ``parse_s`` (failed parses
    and summary lines are skipped)."""
    out: dict[Path, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "file" in rec and "parse_s" in rec and rec.get("ok", True):
            out[Path(rec["file"]).resolve()] = float(rec["parse_s"])
    return out


def peer_rows(timings: list[FileTiming], peer: dict[Path, float]) -> list[dict[str, Any]]:
    """Peer parse vs our read_native (model files) or load (texture files), same files, wall
    time on both sides."""
    rows = []
    for kind, step in (("model", "read_wall_s"), ("texture", "load_wall_s")):
        pairs = [(peer[t.path.resolve()], getattr(t, step)) for t in timings
                 if t.kind == kind and t.error is None and t.path.resolve() in peer
                 and getattr(t, step) is not None]
        if not pairs:
            continue
        theirs, ours = [p[0] for p in pairs], [p[1] for p in pairs]
        rows.append({"kind": kind, "ours": "read_native" if kind == "model" else "load",
                     "files": len(pairs), "peer_total_s": round(sum(theirs), 4),
                     "ours_total_s": round(sum(ours), 4),
                     "total_ratio": round(sum(theirs) / sum(ours), 1),
                     "peer_median_ms": round(statistics.median(theirs) * 1e3, 3),
                     "ours_median_ms": round(statistics.median(ours) * 1e3, 4),
                     "median_ratio": round(statistics.median(theirs) / statistics.median(ours),
                                           1)})
    return rows


def machine() -> str:
    """One line naming the machine and its load, for the tables' caption."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    malloc = "tuned as the CLI does" if allocator.tuned() else "default"
    import numpy
    import PIL

    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()}, Python "
            f"{platform.python_version()}, numpy {numpy.__version__}, Pillow {PIL.__version__}; "
            f"load average {load}; malloc {malloc}; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def markdown(rows: list[dict[str, Any]], peers: list[dict[str, Any]],
             small: list[dict[str, Any]] | None = None) -> str:
    lines = ["| format | kind | files | MB | read_native total / median | load total / median "
             "| load → GLB total / median | load → GLB MB/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(step: str, r: dict[str, Any] = r) -> str:
            if f"{step}_total_s" not in r:
                return "—"
            return f"{r[f'{step}_total_s'] * 1e3:.1f} ms / {r[f'{step}_median_ms']:.3f} ms"

        lines.append(f"| {r['format']} | {r['kind']} | {r['files']} | {r['bytes'] / 1e6:.2f} | "
                     f"{cell('read')} | {cell('load')} | {cell('glb')} | "
                     f"{r.get('glb_MBps') or '—'} |")
    if peers:
        lines += ["", "| files | peer parse total / median | gamemesh total / median | ratio "
                  "total / median |", "|---|---|---|---|"]
        for p in peers:
            lines.append(f"| {p['files']} {p['kind']} ({p['ours']}) | {p['peer_total_s']:.3f} s / "
                         f"{p['peer_median_ms']:.3f} ms | {p['ours_total_s']:.4f} s / "
                         f"{p['ours_median_ms']:.3f} ms | {p['total_ratio']}x / "
                         f"{p['median_ratio']}x |")
    if small:
        lines += ["", f"| files under {SMALL_FILE // 1000} KB | files | load median | load "
                  "slowest (file) | over 1 ms |", "|---|---|---|---|---|"]
        for r in small:
            lines.append(f"| {r['format']} | {r['files']} | {r['load_median_ms']:.3f} ms | "
                         f"{r['load_max_ms']:.3f} ms ({r['slowest']}) | {r['over_1ms']} |")
    return "\n".join(lines)


def text(rows: list[dict[str, Any]], peers: list[dict[str, Any]],
         small: list[dict[str, Any]] | None = None) -> str:
    out = []
    for r in rows:
        parts = [f"{r['format']:<11} {r['kind']:<8} {r['files']:>4} files "
                 f"{r['bytes'] / 1e6:8.2f} MB"]
        for step, label in (("read", "read"), ("load", "load"), ("glb", "to-GLB")):
            if f"{step}_total_s" in r:
                parts.append(f"{label} {r[f'{step}_total_s']:.4f} s (median "
                             f"{r[f'{step}_median_ms']:.3f} ms, {r[f'{step}_MBps']} MB/s)")
        out.append("  ".join(parts))
    for p in peers:
        out.append(f"peer vs {p['ours']} on {p['files']} {p['kind']} files: total "
                   f"{p['peer_total_s']} s vs {p['ours_total_s']} s ({p['total_ratio']}x), "
                   f"median {p['peer_median_ms']} ms vs {p['ours_median_ms']} ms "
                   f"({p['median_ratio']}x)")
    for r in small or []:
        out.append(f"{r['format']:<11} {r['files']:>4} files under {SMALL_FILE // 1000} KB: load "
                   f"median {r['load_median_ms']:.3f} ms, slowest {r['load_max_ms']:.3f} ms "
                   f"({r['slowest']}), {r['over_1ms']} over 1 ms")
    return "\n".join(out)
