"""What runs on a worker: convert one unit, or describe one file for ``scan``.

Plain functions over plain dicts, so the same code runs in-process, in a local process pool and
on a Dask worker on another machine (tasks and results are pickled). Workers read inputs and
write outputs themselves (on shared storage for a cluster) but never touch the manifest: the
driver records what they return. A task never raises for a bad input: every error becomes a
result with ``status = "error"``, so one bad file cannot stop a run.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import socket
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import api
from ..errors import FormatError
from ..registry import Context, by_name

__all__ = ["Task", "convert_chunk", "convert_unit", "file_hash", "scan_chunk", "scan_file",
           "unit_key", "version_variant"]

Task = dict[str, Any]
Result = dict[str, Any]

# Keys of a format's info() (or a scene's provenance extras) that name its version and variant.
_VERSION_KEYS = ("version", "source_version", "format_version")
_VARIANT_KEYS = ("variant", "kind", "layout", "source_variant")
_HASH_BLOCK = 1 << 20


def file_hash(path: Path) -> str:
    """SHA-256 of the content, read in blocks so a large file is not held twice."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_HASH_BLOCK):
            h.update(block)
    return h.hexdigest()


def unit_key(own_hash: str, members: list[tuple[str, str]], options_key: str) -> str:
    """What decides whether a unit must be converted again: the content of every file its load
    reads, and the options (target, format options, post-steps, gamemesh version)."""
    blob = json.dumps([own_hash, sorted(members), options_key], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def version_variant(info: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The version and the variant (kind/layout) a format reports, as short strings."""
    version = next((_short(info[k]) for k in _VERSION_KEYS if _scalar(info.get(k))), None)
    parts = [_short(info[k]) for k in _VARIANT_KEYS if _scalar(info.get(k))]
    return version, "/".join(dict.fromkeys(parts)) or None


def _short(v: Any, limit: int = 40) -> str:
    # Some formats describe their layout in a sentence; a report column wants a label.
    s = str(v)
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def _scalar(v: Any) -> bool:
    return isinstance(v, str | int | float) and not isinstance(v, bool) and str(v) != ""


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _error_fields(e: BaseException) -> dict[str, Any]:
    if isinstance(e, FormatError):
        return {"error": str(e), "error_type": type(e).__name__}
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        return {"error": f"{where}{e.strerror or e}", "error_type": type(e).__name__}
    # Not bad input but a bug in a reader or writer: keep the traceback for the report.
    tb = "".join(traceback.format_exception(e)[-3:]).strip()
    return {"error": f"{type(e).__name__}: {e}", "error_type": type(e).__name__,
            "traceback": tb}


# -- convert ---------------------------------------------------------------------------------

def convert_chunk(tasks: list[Task]) -> list[Result]:
    return [convert_unit(t) for t in tasks]


def convert_unit(task: Task) -> Result:
    """Hash the unit; when its key equals the previous run's, report ``unchanged``; otherwise
    convert it (outputs are written to temporary names and renamed, so an interrupted task
    leaves no partial file) and run the post-steps on the main output."""
    t0 = time.time()
    timings: dict[str, float] = {}
    src = Path(task["src"])
    res: Result = {"path": task["rel"], "format": task["format"], "status": "error",
                   "options": task["options_record"], "members": [m["rel"] for m in
                                                                 task["members"]],
                   "outputs": [], "notes": [], "started": t0, "worker": _worker_id(),
                   "group_of": None, "run": task.get("run")}
    try:
        _hash_unit(task, res, timings)
    except OSError as e:
        res.update(_error_fields(e))
        return _finish(res, t0, timings)
    if task.get("prev_key") and task["prev_key"] == res["key"]:
        res["status"] = "unchanged"
        return _finish(res, t0, timings)
    if task.get("problem"):
        res["notes"].append({"code": "batch.siblings_failed", "level": "warning",
                             "message": f"could not list the files this one reads: "
                                        f"{task['problem']}"})
    try:
        _describe(src, task, res, timings)
        _convert(src, task, res, timings)
        res["status"] = "ok"
    except Exception as e:  # one bad file never stops the run: record it and go on
        res.update(_error_fields(e))
        if "traceback" in res:
            res["notes"].append({"code": "batch.internal_error", "level": "warning",
                                 "message": res.pop("traceback")})
    return _finish(res, t0, timings)


def _finish(res: Result, t0: float, timings: dict[str, float]) -> Result:
    res["finished"] = time.time()
    res["seconds"] = res["finished"] - t0
    timings["total"] = res["seconds"]
    res["timings"] = {k: round(v, 6) for k, v in timings.items()}
    return res


def _hash_unit(task: Task, res: Result, timings: dict[str, float]) -> None:
    t = time.perf_counter()
    src = Path(task["src"])
    st = src.stat()
    res.update(size=st.st_size, mtime_ns=st.st_mtime_ns, hash=file_hash(src))
    member_rows = []
    pairs: list[tuple[str, str]] = []
    for m in task["members"]:
        mp = Path(m["src"])
        mst = mp.stat()
        h = file_hash(mp)
        member_rows.append({"path": m["rel"], "size": mst.st_size, "mtime_ns": mst.st_mtime_ns,
                            "hash": h, "format": m["format"]})
        pairs.append((m["rel"], h))
    for o in task.get("outside", []):
        pairs.append((o, file_hash(Path(o))))
    res["member_rows"] = member_rows
    res["bytes_read"] = st.st_size + sum(m["size"] for m in member_rows) + sum(
        Path(o).stat().st_size for o in task.get("outside", []))
    res["key"] = unit_key(res["hash"], pairs, task["options_key"])
    timings["hash"] = time.perf_counter() - t


def _describe(src: Path, task: Task, res: Result, timings: dict[str, float]) -> None:
    """Version and variant from the format's own info(); a file info cannot read is left to
    the conversion, which reports the error."""
    spec = by_name(task["format"])
    if spec.read is None or spec.info is None:
        return
    t = time.perf_counter()
    try:
        info = spec.info(spec.read_doc(src.read_bytes(), Context(src, task["options"])))
    except Exception:
        return
    finally:
        timings["info"] = time.perf_counter() - t
    res["version"], res["variant"] = version_variant(info)


def _convert(src: Path, task: Task, res: Result, timings: dict[str, float]) -> None:
    t = time.perf_counter()
    out = Path(task["out"])
    report = api.convert(src, out, from_format=task["format"], **task["options"])
    timings["convert"] = time.perf_counter() - t
    dst = Path(task["dst"])
    outputs = [Path(o) for o in report.outputs]
    res["notes"].extend(n.to_dict() for n in report.notes)
    t = time.perf_counter()
    for name in task.get("post", []):
        outputs.extend(_post_step(name, outputs[0] if outputs else out, src, res))
    if task.get("post"):
        timings["post"] = time.perf_counter() - t
    res["outputs"] = list(dict.fromkeys(_relative(o, dst) for o in outputs))


def resolve_post_step(name: str) -> Callable[[Path, Path], Any]:
    """``"package.module:function"`` -> the function (names travel to remote workers; functions
    might not pickle)."""
    module, _, attr = name.partition(":")
    fn = getattr(importlib.import_module(module), attr)
    if not callable(fn):
        msg = f"post-step {name!r} is not callable"
        raise TypeError(msg)
    return fn  # type: ignore[no-any-return]


def _post_step(name: str, output: Path, src: Path, res: Result) -> list[Path]:
    """A per-output hook (thumbnails): ``fn(main_output, source) -> extra files written``.
    Its failure is a note, not a failed conversion: the model itself was converted."""
    try:
        extra = resolve_post_step(name)(output, src)
        return [Path(p) for p in (extra or [])]
    except Exception as e:
        res["notes"].append({"code": "batch.post_step_failed", "level": "warning",
                             "message": f"{name}: {type(e).__name__}: {e}"})
        return []


def _relative(p: Path, dst: Path) -> str:
    try:
        return p.resolve().relative_to(dst.resolve()).as_posix()
    except ValueError:
        return str(p)


# -- scan ------------------------------------------------------------------------------------

def scan_chunk(tasks: list[Task]) -> list[Result]:
    return [scan_file(t) for t in tasks]


def scan_file(task: Task) -> Result:
    """The format's own facts about one file, or the error that stops it being read."""
    t0 = time.perf_counter()
    src = Path(task["src"])
    res: Result = {"path": task["rel"], "format": task["format"], "size": task["size"],
                   "status": "ok", "version": None, "variant": None}
    spec = by_name(task["format"])
    try:
        ctx = Context(src, task.get("options", {}))
        if spec.read is not None:
            doc = spec.read_doc(src.read_bytes(), ctx)
            info = spec.info(doc) if spec.info is not None else {}
        elif spec.can_import:
            scene = api.load(src, format=spec.name, **task.get("options", {}))
            info = dict(scene.extras)
        else:
            msg = "this format can be recognised but not read"
            raise FormatError(spec.name, msg)
        res["version"], res["variant"] = version_variant(info)
        res["info"] = {k: v for k, v in info.items() if _scalar(v) or isinstance(v, bool)}
    except Exception as e:
        res["status"] = "error"
        res.update(_error_fields(e))
        res.pop("traceback", None)
    res["seconds"] = time.perf_counter() - t0
    return res
