"""The batch driver: discover, group, plan (skip what is unchanged), dispatch, record.

Only this process writes the manifest, one transaction per finished chunk, so whatever stops
the run (Ctrl-C, SIGTERM, a power cut, SIGKILL) the manifest holds exactly the results that
were recorded, every ``ok`` row's outputs exist, and a rerun picks up the rest.

Ctrl-C once: start nothing new, let the running conversions finish and record them. Twice:
kill the workers (their outputs are written to temporary names and renamed, so nothing partial
is left; stray temporary files are swept at the next start).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any, TextIO

from .. import __version__
from ..fileio import sweep_parts
from ..registry import FormatSpec, by_name
from .discover import Discovery, discover
from .executors import Executor, Stop, failed_results, make_executor, plural
from .group import SiblingsFn, Unit, group, registry_siblings
from .manifest import DONE, MANIFEST_NAME, Manifest, Row
from .progress import Progress
from .work import Result, Task, convert_chunk

__all__ = ["BatchConfig", "BatchResult", "output_extension", "run_batch"]

_LOCK_NAME = "gamemesh-batch.lock"
_CHUNK_FILES = 16
_CHUNK_BYTES = 8 << 20
_FLUSH_SECONDS = 0.0


@dataclass
class BatchConfig:
    src: Path
    dst: Path
    to: str = "glb"
    jobs: int | None = None  # None: all cores (on a cluster: a cap on the files in flight)
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    formats: Sequence[str] = ()  # only inputs of these formats (names); empty: all
    force: bool = False
    retry_errors: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # format options, as the CLI flags
    scheduler: str | None = None  # tcp://HOST:PORT: run on a Dask cluster
    scheduler_file: Path | None = None  # or the cluster named by a Dask scheduler file
    connect_timeout: float = 5.0  # seconds to reach the scheduler
    quiet: bool = False
    progress_interval: float = 5.0
    stream: TextIO | None = None  # progress and messages (default stderr)
    tty: bool | None = None  # None: ask the stream
    # Per-output post-steps, "package.module:function" called as fn(main_output, source) ->
    # extra files written (the hook --thumbnails plugs into). Part of the options: adding one
    # converts again.
    post: Sequence[str] = ()
    siblings: SiblingsFn = registry_siblings
    executor: Executor | None = None  # for tests and embedding; default from jobs/scheduler


@dataclass
class BatchResult:
    manifest: Path
    run: int
    units: int = 0  # conversions planned (a multi-file unit counts once)
    inputs: int = 0  # recognised files (members included)
    converted: int = 0  # conversions that ran to ok or error this time
    ok: int = 0
    errors: int = 0
    skipped: int = 0  # unchanged since the last run
    grouped: int = 0  # member files converted through their unit
    unrecognised: int = 0
    links_out: int = 0  # symbolic links leading out of SRC, left out
    interrupted: bool = False
    seconds: float = 0.0
    bytes: int = 0  # input bytes converted this run
    executor: str = "local"
    jobs: int = 1
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, error) this run
    # Units whose manifest row says error after this run (this run's and earlier unchanged).
    errors_total: int = 0

    @property
    def files_per_second(self) -> float:
        return self.converted / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}
        out["files_per_second"] = round(self.files_per_second, 3)
        out["mb_per_second"] = round(self.mb_per_second, 3)
        return out


# -- planning --------------------------------------------------------------------------------

def target_spec(to: str) -> FormatSpec:
    spec = by_name(to)  # ValueError for an unknown name: a usage error
    if not spec.can_export:
        msg = f"{spec.name} cannot be written from a scene; choose another --to"
        raise ValueError(msg)
    return spec


def output_extension(to: str) -> str:
    spec = target_spec(to)
    wanted = "." + to.lower().lstrip(".")
    return wanted if wanted in spec.extensions else spec.extensions[0]


def output_names(units: list[Unit], ext: str) -> dict[str, str]:
    """Mirror SRC under DST: ``a/b/unit.papa`` -> ``a/b/unit.glb``. Two inputs that would meet
    (``x.papa`` and ``x.pmf``) both keep their extension (``x.papa.glb``, ``x.pmf.glb``)."""
    first: dict[str, list[str]] = {}
    for u in units:
        p = PurePosixPath(u.primary.rel)
        first.setdefault(str(p.with_name(p.stem + ext)).lower(), []).append(u.primary.rel)
    out: dict[str, str] = {}
    for rels in first.values():
        for rel in rels:
            p = PurePosixPath(rel)
            out[rel] = str(p.with_name((p.name if len(rels) > 1 else p.stem) + ext))
    return out


def _options_record(cfg: BatchConfig, ext: str) -> dict[str, Any]:
    record = {"to": ext, "format_options": dict(sorted(cfg.options.items())),
              "post": list(cfg.post), "gamemesh": __version__}
    # As the manifest will give it back (tuples become lists, paths strings), so that the
    # next run compares like with like.
    back: dict[str, Any] = json.loads(json.dumps(record, sort_keys=True, default=str))
    return back


def _outputs_exist(row: Row, dst: Path) -> bool:
    return all((dst / o).exists() for o in row.get("outputs") or [])


def _retry(prev: Row, cfg: BatchConfig) -> bool:
    """An error is kept (the same bytes would fail the same way) unless --retry-errors, or
    unless the cluster, not the file, failed (a task lost with its scheduler): that one is
    tried again by the next run."""
    return cfg.retry_errors or prev.get("error_type") == "WorkerError"


def _fast_skip(unit: Unit, rows: dict[str, Row], record: dict[str, Any], cfg: BatchConfig,
               dst: Path) -> bool:
    """Unchanged by stat alone (size and mtime of every file, same options and members, outputs
    still there): no need even to read the files. Anything else goes to a worker, which
    compares content hashes."""
    prev = rows.get(unit.primary.rel)
    if cfg.force or prev is None or prev["status"] not in DONE or unit.outside:
        return False
    if prev["status"] == "error" and _retry(prev, cfg):
        return False
    if prev.get("options") != record or (prev["size"], prev["mtime_ns"]) != (
            unit.primary.size, unit.primary.mtime_ns):
        return False
    if (prev.get("members") or []) != [m.rel for m in unit.members]:
        return False
    for m in unit.members:
        mr = rows.get(m.rel)
        if mr is None or mr["status"] != "grouped" or mr.get("group_of") != unit.primary.rel or (
                mr["size"], mr["mtime_ns"]) != (m.size, m.mtime_ns):
            return False
    return prev["status"] == "error" or _outputs_exist(prev, dst)


def _prev_key(unit: Unit, rows: dict[str, Row], record: dict[str, Any], cfg: BatchConfig,
              dst: Path) -> str | None:
    prev = rows.get(unit.primary.rel)
    if cfg.force or prev is None or prev["status"] not in DONE or prev.get("options") != record:
        return None
    if prev["status"] == "error" and _retry(prev, cfg):
        return None
    if prev["status"] == "ok" and not _outputs_exist(prev, dst):
        return None
    return prev.get("key")


def _task(unit: Unit, out_rel: str, cfg: BatchConfig, dst: Path, record: dict[str, Any],
          prev_key: str | None, run: int) -> Task:
    c = unit.primary
    return {"src": str(c.path), "rel": c.rel, "format": c.format, "size": unit.size,
            "members": [{"src": str(m.path), "rel": m.rel, "format": m.format}
                        for m in unit.members],
            "outside": [str(p) for p in unit.outside], "out": str(dst / out_rel),
            "dst": str(dst), "options": dict(cfg.options), "options_record": record,
            "options_key": json.dumps(record, sort_keys=True), "prev_key": prev_key,
            "post": list(cfg.post), "problem": unit.problem, "run": run}


def chunked(tasks: list[Task], jobs: int, per: int = 1) -> Iterator[list[Task]]:
    """Tasks in chunks of ``per`` (one round trip per chunk), never more than ``_CHUNK_BYTES``
    of input in one. A chunk's results come back when its last file is done, so the run sends
    one file at a time (``per`` 1): each result is recorded the moment it finishes, and a kill
    loses no finished file. Larger ``per`` stay for callers that trade that for round trips."""
    per = max(1, min(per, _CHUNK_FILES, len(tasks) // (4 * max(1, jobs)) or 1))
    chunk: list[Task] = []
    nbytes = 0
    for t in tasks:
        if chunk and (len(chunk) >= per or nbytes + t["size"] > _CHUNK_BYTES):
            yield chunk
            chunk, nbytes = [], 0
        chunk.append(t)
        nbytes += t["size"]
    if chunk:
        yield chunk


# -- signals ---------------------------------------------------------------------------------

class _Signals:
    """First Ctrl-C/SIGTERM: ``stop.requested``. Second: KeyboardInterrupt, deferred while a
    manifest transaction is open so a commit is never cut in half."""

    def __init__(self, stop: Stop, progress: Progress) -> None:
        self.stop = stop
        self.progress = progress
        self.count = 0
        self.critical = False
        self.deferred = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        self.stop.requested = True
        if self.count == 1:
            self.progress.message("stopping: finishing the running conversions "
                                  "(Ctrl-C again to abort them)")
            return
        if self.critical:
            self.deferred = True
            return
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def protect(self) -> Iterator[None]:
        self.critical = True
        try:
            yield
        finally:
            self.critical = False
        if self.deferred:
            self.deferred = False
            raise KeyboardInterrupt


# -- the run ---------------------------------------------------------------------------------

@contextlib.contextmanager
def _dst_lock(dst: Path) -> Iterator[None]:
    """One batch at a time per destination: two drivers would fight over the manifest and
    sweep each other's temporary files."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks here; document instead of failing
        yield
        return
    lock = dst / _LOCK_NAME
    with lock.open("a") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The holder before us may have removed the file between our open and our lock:
            # a lock on a removed file guards nothing, so that counts as busy too.
            if os.fstat(f.fileno()).st_ino != lock.stat().st_ino:
                raise OSError
        except OSError as e:
            msg = f"another gamemesh batch is writing to {dst}"
            raise ValueError(msg) from e
        clean = False
        try:
            yield
            clean = True
        finally:
            if clean:
                # A clean run leaves no lock file behind (removed while still held, so no
                # other batch can take it in between).
                with contextlib.suppress(OSError):
                    lock.unlink()
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def sweep_partials(dst: Path) -> int:
    """Temporary files left by a killed worker (never a finished output)."""
    return sweep_parts(dst, recursive=True)


def _checked_paths(cfg: BatchConfig) -> tuple[Path, Path, str]:
    """SRC, DST (resolved) and the output extension, or a usage error before anything is
    written. Outputs mirror SRC's tree under DST, so no output may ever land inside SRC: DST
    may lie inside SRC (discovery leaves it out, so its files are never inputs), but a DST
    that contains SRC is refused, since the mirror of ``SRC/p/...`` is ``DST/p/...`` and the
    temporary-file sweep and contact sheets walk DST, SRC included."""
    src = cfg.src.resolve()
    if not src.is_dir():
        msg = f"{cfg.src}: not a folder"
        raise ValueError(msg)
    ext = output_extension(cfg.to)
    dst = cfg.dst.resolve()
    if dst.exists() and not dst.is_dir():
        msg = f"{cfg.dst}: exists and is not a folder"
        raise ValueError(msg)
    if dst == src:
        # Outputs next to inputs would be found as inputs by the next run.
        msg = "DST must be another folder than SRC (it may lie inside SRC)"
        raise ValueError(msg)
    if src.is_relative_to(dst):
        msg = (f"DST {cfg.dst} contains SRC {cfg.src}: outputs mirror SRC's tree under DST and "
               "could land on its inputs; choose a DST outside SRC (or inside it)")
        raise ValueError(msg)
    return src, dst, ext


def run_batch(cfg: BatchConfig) -> BatchResult:
    src, dst, ext = _checked_paths(cfg)
    # The cluster is reached before DST is touched: a scheduler that cannot be reached leaves
    # no folder, lock or manifest behind.
    executor = cfg.executor or make_executor(cfg.jobs, cfg.scheduler, cfg.scheduler_file,
                                             cfg.connect_timeout)
    try:
        dst.mkdir(parents=True, exist_ok=True)
        with _dst_lock(dst):
            sweep_partials(dst)
            found = discover(src, cfg.include, cfg.exclude,
                             [dst] if dst.is_relative_to(src) else [])
            if cfg.formats:
                wanted = {by_name(f).name for f in cfg.formats}
                found.candidates = [c for c in found.candidates if c.format in wanted]
            units = group(found.candidates, cfg.siblings)
            with Manifest(dst / MANIFEST_NAME) as manifest:
                return _run(cfg, src, dst, ext, found, units, manifest, executor)
    finally:
        executor.close()  # nothing left to do after an abort


def _run(cfg: BatchConfig, src: Path, dst: Path, ext: str, found: Discovery, units: list[Unit],
         manifest: Manifest, executor: Executor) -> BatchResult:
    record = _options_record(cfg, ext)
    names = output_names(units, ext)
    rows = manifest.row_map()
    present = {c.rel for c in found.candidates}
    with manifest.transaction():
        manifest.set_meta("src", str(src))
        manifest.set_meta("target", ext)
        manifest.mark_missing({r for r in rows if r in present or (src / r).exists()})
        manifest.add_pending((c.rel, c.size, c.mtime_ns, c.format) for c in found.candidates)
    todo = [u for u in units if not _fast_skip(u, rows, record, cfg, dst)]
    res = BatchResult(manifest.path, 0, units=len(units), inputs=len(found.candidates),
                      skipped=len(units) - len(todo), unrecognised=len(found.unrecognised),
                      executor=executor.name, jobs=executor.jobs,
                      grouped=sum(len(u.members) for u in units),
                      links_out=len(found.links_out))
    res.run = manifest.start_run(str(src), ext, executor.name, executor.jobs, len(todo))
    tasks = [_task(u, names[u.primary.rel], cfg, dst, record,
                   _prev_key(u, rows, record, cfg, dst), res.run) for u in todo]
    tasks = _refuse_escaping_outputs(tasks, dst, _Recorder(manifest, res))
    progress = Progress(len(tasks), sum(t["size"] for t in tasks), stream=cfg.stream,
                        quiet=cfg.quiet, interval=cfg.progress_interval, tty=cfg.tty)
    if found.links_out:
        progress.message(f"left out {plural(len(found.links_out), 'symbolic link')} leading "
                         f"out of SRC (the first: {found.links_out[0]})")
    t0 = time.monotonic()
    status = "aborted"  # unless the dispatch comes back
    try:
        status = _dispatch(executor, tasks, _Recorder(manifest, res), progress, dst)
    finally:
        progress.close()
        res.seconds = time.monotonic() - t0
        res.interrupted = status != "done"
        res.jobs = executor.jobs  # a cluster's size is known once it ran
        manifest.finish_run(res.run, converted=res.converted, skipped=res.skipped,
                            errors=res.errors, nbytes=res.bytes, status=status, jobs=res.jobs)
    unit_rels = {u.primary.rel for u in units}
    res.errors_total = sum(1 for r in manifest.rows("status = 'error'") if r["path"] in unit_rels)
    return res


def _refuse_escaping_outputs(tasks: list[Task], dst: Path, recorder: _Recorder) -> list[Task]:
    """The tasks whose output folder, as it is now, lies in DST; the others (a symbolic link in
    DST's tree leading elsewhere, perhaps into SRC, where an output could land on an input) are
    recorded as errors and not converted. One resolve per folder."""
    inside: dict[Path, bool] = {}
    keep: list[Task] = []
    for t in tasks:
        folder = Path(t["out"]).parent
        if folder not in inside:
            inside[folder] = folder.resolve().is_relative_to(dst)
        if inside[folder]:
            keep.append(t)
        else:
            recorder.add(failed_results([t], f"its output folder {folder} leads out of DST (a "
                                        "symbolic link): not written", "OutputOutsideDst"))
    recorder.flush()
    return keep


def _dispatch(executor: Executor, tasks: list[Task], recorder: _Recorder, progress: Progress,
              dst: Path) -> str:
    """Send the tasks, record each result as it comes; "done", "interrupted" (Ctrl-C once)
    or "aborted" (twice: the workers are killed)."""
    stop = Stop()
    status = "done"
    with _Signals(stop, progress) as sig:
        try:
            for results in executor.run(convert_chunk, chunked(tasks, executor.jobs), stop,
                                        progress.message):
                recorder.add(results)
                with sig.protect():
                    recorder.flush(due_only=True)
                if not results:
                    progress.tick()
                    continue
                progress.advance(len(results), sum(r.get("bytes_read") or 0 for r in results),
                                 errors=sum(r["status"] == "error" for r in results),
                                 skipped=sum(r["status"] == "unchanged" for r in results))
        except KeyboardInterrupt:
            status = "aborted"
            progress.message("aborting: stopping the workers")
            executor.abort()
            sweep_partials(dst)
        if stop.requested and status == "done":
            status = "interrupted"
        with sig.protect():
            recorder.flush()
    return status


class _Recorder:
    """Results go to the manifest as they come, one transaction per arrival (a chunk, which is
    one file: see :func:`chunked`), so a run killed outright loses no finished result. With
    ``due_only`` results wait at most ``_FLUSH_SECONDS`` (0: not at all)."""

    def __init__(self, manifest: Manifest, res: BatchResult) -> None:
        self.manifest = manifest
        self.res = res
        self.buffer: list[Result] = []
        self.last = time.monotonic()

    def add(self, results: list[Result]) -> None:
        self.buffer.extend(results)

    def flush(self, due_only: bool = False) -> None:
        now = time.monotonic()
        if not self.buffer or (due_only and now - self.last < _FLUSH_SECONDS):
            return
        _record(self.manifest, self.buffer, self.res)
        self.buffer = []
        self.last = now


def _record(manifest: Manifest, results: list[Result], res: BatchResult) -> None:
    with manifest.transaction():
        for r in results:
            if r["status"] == "unchanged":
                _record_unchanged(manifest, r)
                res.skipped += 1
                continue
            _record_result(manifest, r)
            res.converted += 1
            res.bytes += int(r.get("bytes_read") or 0)
            if r["status"] == "ok":
                res.ok += 1
            else:
                res.errors += 1
                res.failed.append((r["path"], str(r.get("error"))))


def _record_unchanged(manifest: Manifest, r: Result) -> None:
    manifest.touch(r["path"], r["size"], r["mtime_ns"])
    for m in r.get("member_rows", []):
        manifest.touch(m["path"], m["size"], m["mtime_ns"])


def _record_result(manifest: Manifest, r: Result) -> None:
    row = {k: v for k, v in r.items() if k != "member_rows"}
    row["size"] = r.get("size")
    manifest.put(row)
    for m in r.get("member_rows", []):
        manifest.put({**m, "status": "grouped", "group_of": r["path"], "options": r["options"],
                      "key": r.get("key"), "run": r.get("run"), "finished": r.get("finished"),
                      "notes": [{"code": "batch.grouped", "level": "info",
                                 "message": f"converted as part of {r['path']}"}]})


