"""``gamemesh scan DIR``: what is in a game install, without converting anything.

Every file is sniffed (content, then extension); every recognised file is read by its format
and described by the format's own ``info`` (version, kind/variant). The result is a coverage
report: formats, versions and variants seen, multi-file units, the files that cannot be read
and why, and the files no format recognises (by extension).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from .discover import discover
from .executors import Executor, Stop, make_executor
from .group import SiblingsFn, group, registry_siblings
from .progress import Progress
from .run import chunked
from .work import Result, scan_chunk

__all__ = ["ScanConfig", "format_scan", "scan_tree"]


@dataclass
class ScanConfig:
    root: Path
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    jobs: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    quiet: bool = False
    stream: TextIO | None = None
    tty: bool | None = None
    siblings: SiblingsFn = registry_siblings
    executor: Executor | None = None


def scan_tree(cfg: ScanConfig) -> dict[str, Any]:
    root = cfg.root.resolve()
    if not root.is_dir():
        msg = f"{cfg.root}: not a folder"
        raise ValueError(msg)
    found = discover(root, cfg.include, cfg.exclude)
    units = group(found.candidates, cfg.siblings)
    tasks = [{"src": str(c.path), "rel": c.rel, "format": c.format, "size": c.size,
              "options": dict(cfg.options)} for c in found.candidates]
    executor = cfg.executor or make_executor(cfg.jobs, None)
    progress = Progress(len(tasks), sum(c.size for c in found.candidates), stream=cfg.stream,
                        quiet=cfg.quiet, tty=cfg.tty, label="scan")
    results: list[Result] = []
    try:
        # Scan records nothing on the way: chunks of several files save round trips.
        for batch in executor.run(scan_chunk, chunked(tasks, executor.jobs, per=16), Stop()):
            results.extend(batch)
            progress.advance(len(batch), sum(r["size"] for r in batch),
                             errors=sum(r["status"] == "error" for r in batch))
    except KeyboardInterrupt:
        executor.abort()
        raise
    else:
        executor.close()
    finally:
        progress.close()
    results.sort(key=lambda r: r["path"])
    unrec_ext = Counter(PurePosixPath(p).suffix.lower() or "(none)" for p in found.unrecognised)
    return {
        "root": str(root),
        "files": len(found.candidates) + len(found.unrecognised) + len(found.unreadable),
        "bytes": sum(c.size for c in found.candidates) + found.unrecognised_bytes,
        "recognised": len(found.candidates),
        "readable": sum(r["status"] == "ok" for r in results),
        "unreadable": [{"path": r["path"], "format": r["format"], "error": r.get("error"),
                        "type": r.get("error_type")} for r in results if r["status"] != "ok"],
        "units": len(units),
        "multi_file_units": [{"primary": u.primary.rel, "members": [m.rel for m in u.members]}
                             for u in units if u.members],
        "formats": _per_format(results),
        "unrecognised": len(found.unrecognised),
        "unrecognised_extensions": dict(unrec_ext.most_common()),
        "inaccessible": [{"path": p, "error": e} for p, e in found.unreadable],
        "links_out": found.links_out,
    }


def _per_format(results: list[Result]) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        f = out.setdefault(r["format"], {"files": 0, "bytes": 0, "readable": 0,
                                         "unreadable": 0, "versions": Counter(),
                                         "variants": Counter()})
        f["files"] += 1
        f["bytes"] += r["size"]
        f["readable" if r["status"] == "ok" else "unreadable"] += 1
        if r.get("version") is not None:
            f["versions"][r["version"]] += 1
        if r.get("variant") is not None:
            f["variants"][r["variant"]] += 1
    return {k: {**v, "versions": dict(sorted(v["versions"].items())),
                "variants": dict(sorted(v["variants"].items()))} for k, v in sorted(out.items())}


def format_scan(s: dict[str, Any], limit: int = 50) -> str:
    lines = [f"{s['root']}: {s['files']} files, {s['bytes'] / 1e6:.2f} MB; "
             f"{s['recognised']} recognised ({s['readable']} readable, "
             f"{len(s['unreadable'])} unreadable), {s['unrecognised']} not a model format",
             f"conversion units: {s['units']} ({len(s['multi_file_units'])} made of several "
             "files)", ""]
    for name, f in s["formats"].items():
        lines.append(f"{name:<12} {f['files']:>7} files {f['bytes'] / 1e6:>10.2f} MB  "
                     f"readable {f['readable']}, unreadable {f['unreadable']}")
        if f["versions"]:
            lines.append("  versions: " + ", ".join(f"{k} ({v})" for k, v in
                                                    f["versions"].items()))
        if f["variants"]:
            lines.append("  variants: " + ", ".join(f"{k} ({v})" for k, v in
                                                    f["variants"].items()))
    if s["unreadable"]:
        lines += ["", "unreadable:"]
        lines += [f"  {u['path']}: {u['error']}" for u in s["unreadable"][:limit]]
        if len(s["unreadable"]) > limit:
            lines.append(f"  ... and {len(s['unreadable']) - limit} more (--json lists all)")
    if s["unrecognised_extensions"]:
        lines += ["", "not recognised, by extension: " + ", ".join(
            f"{k} ({v})" for k, v in s["unrecognised_extensions"].items())]
    for x in s["inaccessible"]:
        lines.append(f"cannot open {x['path']}: {x['error']}")
    lines += [f"left out {p}: a symbolic link that leads out of the folder"
              for p in s["links_out"][:limit]]
    return "\n".join(lines)
