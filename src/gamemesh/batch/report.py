"""``gamemesh batch --report DST``: what the manifest says, summed up.

Counts per format and status, versions and variants seen, the most common errors (messages with
their byte offsets blanked, so one bug in a thousand files is one line), the most common notes,
the slowest files, and the runs with their throughput.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from .executors import executor_label
from .manifest import MANIFEST_NAME, Manifest, Row
from .progress import format_duration

__all__ = ["format_report", "manifest_path", "summarize"]

_OFFSET = re.compile(r"\bat 0x[0-9A-Fa-f]+")


def manifest_path(dst: Path) -> Path:
    """DST itself may be given as the folder or the database file."""
    return dst if dst.is_file() else dst / MANIFEST_NAME


def summarize(dst: Path, top: int = 10) -> dict[str, Any]:
    with Manifest(manifest_path(dst), create=False) as m:
        rows = m.rows()
        runs = m.runs()
        meta = m.meta()
    return {
        "manifest": str(manifest_path(dst)),
        "src": meta.get("src"),
        "target": meta.get("target"),
        "inputs": len(rows),
        "bytes": sum(r["size"] or 0 for r in rows),
        "status": dict(sorted(Counter(r["status"] for r in rows).items())),
        "formats": _per_format(rows),
        "errors": _common_errors(rows, top),
        "notes": [{"code": c, "count": n} for c, n in _note_codes(rows).most_common(top)],
        "slowest": _slowest(rows, top),
        "runs": [_run_summary(r) for r in runs],
    }


def _per_format(rows: list[Row]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        f = out.setdefault(r["format"] or "?", {"inputs": 0, "bytes": 0, "status": Counter(),
                                                "variants": Counter()})
        f["inputs"] += 1
        f["bytes"] += r["size"] or 0
        f["status"][r["status"]] += 1
        if r.get("version") or r.get("variant"):
            f["variants"][_variant(r)] += 1
    return {k: {**v, "status": dict(sorted(v["status"].items())),
                "variants": dict(sorted(v["variants"].items()))} for k, v in sorted(out.items())}


def _variant(r: Row) -> str:
    parts = [f"v{r['version']}" if r.get("version") else "", r.get("variant") or ""]
    return " ".join(p for p in parts if p)


def _common_errors(rows: list[Row], top: int) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        if r["status"] == "error":
            msg = _OFFSET.sub("at 0x…", str(r.get("error") or ""))
            groups.setdefault((r["format"] or "?", r.get("error_type") or "", msg), []).append(r)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]
    return [{"format": f, "type": t, "message": msg, "count": len(rs),
             "example": rs[0]["path"]} for (f, t, msg), rs in ranked]


def _note_codes(rows: list[Row]) -> Counter[str]:
    c: Counter[str] = Counter()
    for r in rows:
        for n in r.get("notes") or []:
            if n.get("code") != "batch.grouped":
                c[n.get("code", "?")] += 1
    return c


def _slowest(rows: list[Row], top: int) -> list[dict[str, Any]]:
    timed = [r for r in rows if r["status"] in ("ok", "error") and r.get("seconds") is not None]
    timed.sort(key=lambda r: (-r["seconds"], r["path"]))
    return [{"path": r["path"], "format": r["format"], "status": r["status"],
             "seconds": round(r["seconds"], 4), "size": r["size"]} for r in timed[:top]]


def _run_summary(r: dict[str, Any]) -> dict[str, Any]:
    secs = (r["finished"] - r["started"]) if r.get("finished") else None
    out = {k: r[k] for k in ("id", "executor", "jobs", "planned", "converted", "skipped",
                             "errors", "bytes", "status")}
    out["seconds"] = round(secs, 3) if secs is not None else None
    if secs:
        out["files_per_second"] = round((r["converted"] or 0) / secs, 2)
        out["mb_per_second"] = round((r["bytes"] or 0) / secs / 1e6, 3)
    return out


def format_report(s: dict[str, Any]) -> str:
    lines = [f"manifest: {s['manifest']}", f"source: {s['src']}  target: {s['target']}",
             f"inputs: {s['inputs']} ({s['bytes'] / 1e6:.2f} MB)  " +
             "  ".join(f"{k}: {v}" for k, v in s["status"].items()), "", "per format:"]
    for name, f in s["formats"].items():
        st = ", ".join(f"{k} {v}" for k, v in f["status"].items())
        lines.append(f"  {name:<12} {f['inputs']:>7} files {f['bytes'] / 1e6:>10.2f} MB   {st}")
        if f["variants"]:
            lines.append("  " + " " * 12 + " variants: " + ", ".join(
                f"{k} ({v})" for k, v in f["variants"].items()))
    if s["errors"]:
        lines += ["", "most common errors:"]
        lines += [f"  {e['count']:>6} x {e['format']}: {e['type']}: {e['message']}  "
                  f"(e.g. {e['example']})" for e in s["errors"]]
    if s["notes"]:
        lines += ["", "most common notes:"]
        lines += [f"  {n['count']:>6} x {n['code']}" for n in s["notes"]]
    if s["slowest"]:
        lines += ["", "slowest files:"]
        lines += [f"  {x['seconds']:>9.3f} s  {x['path']} ({x['format']}, {x['size']} bytes, "
                  f"{x['status']})" for x in s["slowest"]]
    if s["runs"]:
        lines += ["", "runs:"]
        for r in s["runs"]:
            took = format_duration(r["seconds"]) if r["seconds"] is not None else "-"
            rate = (f", {r['files_per_second']} files/s, {r['mb_per_second']} MB/s"
                    if "files_per_second" in r else "")
            lines.append(f"  #{r['id']} {r['status']}: {r['converted']} converted, "
                         f"{r['skipped']} unchanged, {r['errors']} errors in {took} "
                         f"({executor_label(r['executor'], r['jobs'] or 0)}{rate})")
    return "\n".join(lines)
