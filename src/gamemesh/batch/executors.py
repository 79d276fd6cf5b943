"""Where the tasks run: in this process, in a local process pool, or on a Dask cluster.

Every executor has the same shape: ``run(fn, chunks, stop)`` yields the result lists of
finished chunks as they come (an empty list now and then as a heartbeat, so the driver can
redraw progress), keeps only a few chunks in flight (so a stop request leaves little to drain
and nothing is queued that would have to be taken back), stops submitting once ``stop`` is set
and drains what is running; ``abort()`` kills what is still running (its outputs are written to
temporary names and renamed, so a killed task leaves no partial file behind).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import signal
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Protocol

from .work import Result, Task

__all__ = ["DaskExecutor", "Executor", "InProcessExecutor", "PoolExecutor", "Say", "Stop",
           "executor_label", "failed_results", "make_executor", "plural"]

ChunkFn = Callable[[list[Task]], list[Result]]
Say = Callable[[str], None]  # news for the user (progress.message)
_HEARTBEAT = 0.5
_POLL = 0.5  # seconds between looks at the cluster's size
_PER_THREAD = 4  # tasks in flight per worker thread
_SCHEDULER_FILE_MAX = 1 << 20
_DASK_PORT = 8786  # the scheduler's default port, as Dask assumes for an address without one


def _silent(text: str) -> None:
    return None


class Stop:
    """Set by the first Ctrl-C (or SIGTERM): finish what runs, start nothing new."""

    def __init__(self) -> None:
        self.requested = False


class Executor(Protocol):
    name: str
    jobs: int

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop,
            say: Say = ...) -> Iterator[list[Result]]: ...

    def abort(self) -> None: ...

    def close(self) -> None: ...


def failed_results(chunk: list[Task], message: str, error_type: str) -> list[Result]:
    """Results for tasks whose worker died (a crash in native code, a lost cluster worker)."""
    now = time.time()
    return [{"path": t["rel"], "format": t["format"], "status": "error", "error": message,
             "error_type": error_type, "options": t.get("options_record"), "outputs": [],
             "notes": [], "members": [m["rel"] for m in t.get("members", [])],
             "started": now, "finished": now, "seconds": 0.0, "timings": {},
             "run": t.get("run"), "size": t.get("size"), "mtime_ns": None}
            for t in chunk]


# -- in this process (--jobs 1) ----------------------------------------------------------------

class InProcessExecutor:
    """No pool at all: for one job, the cheapest and the easiest to debug."""

    name = "local"
    jobs = 1

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop,
            say: Say = _silent) -> Iterator[list[Result]]:
        for chunk in chunks:
            for task in chunk:
                if stop.requested:
                    return
                yield fn([task])

    def abort(self) -> None:
        return None

    def close(self) -> None:
        return None


# -- local process pool ----------------------------------------------------------------------

def _init_worker(parent: int) -> None:
    # Ctrl-C reaches the whole process group: the driver decides what stops, workers finish
    # their task. If the driver is killed outright, workers must not linger as orphans.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker inherits the driver's SIGTERM handler (stop gracefully); a worker must
    # simply die when the driver terminates it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="gamemesh-orphan-watch").start()


def _mp_context() -> Any:
    # fork: workers start in milliseconds with gamemesh (and any plugged-in format) imported.
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class PoolExecutor:
    """A local process pool (``--jobs N``, default all cores)."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._pool = self._new_pool()
        self._aborted = False

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.jobs, mp_context=_mp_context(),
                                   initializer=_init_worker, initargs=(os.getpid(),))

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop,
            say: Say = _silent) -> Iterator[list[Result]]:
        """When a worker dies the whole pool breaks and every chunk in flight fails, guilty or
        not. Those files become suspects: each runs again alone, so one that breaks the pool
        on its own is the culprit (recorded as ``WorkerCrashed``) and the rest convert."""
        window = 2 * self.jobs
        inflight: dict[Future[list[Result]], tuple[list[Task], bool]] = {}
        suspects: list[list[Task]] = []

        def fill() -> None:
            while not stop.requested:
                if suspects:
                    if inflight:  # a suspect runs alone
                        return
                    chunk, alone = suspects.pop(0), True
                else:
                    nxt = next(chunks, None) if len(inflight) < window else None
                    if nxt is None:
                        return
                    chunk, alone = nxt, False
                if not self._submit(fn, chunk, alone, inflight, suspects):
                    return

        fill()
        while inflight:
            done, _ = wait(inflight, timeout=_HEARTBEAT, return_when=FIRST_COMPLETED)
            if not done:
                yield []
            broken = False
            for fut in done:
                chunk, alone = inflight.pop(fut)
                try:
                    results = fut.result()
                except BrokenProcessPool:
                    broken = True
                    if alone:
                        yield failed_results(chunk, "the worker process died converting "
                                             "this file", "WorkerCrashed")
                    else:
                        suspects.extend([t] for t in chunk)
                    continue
                yield results
            if broken:
                for chunk, _alone in inflight.values():
                    suspects.extend([t] for t in chunk)
                inflight.clear()
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
            fill()

    def _submit(self, fn: ChunkFn, chunk: list[Task], alone: bool,
                inflight: dict[Future[list[Result]], tuple[list[Task], bool]],
                suspects: list[list[Task]]) -> bool:
        """Submit one chunk; False when the pool broke since the last wait (a worker died
        mid-task). The chunk is untested, so it waits as a suspect: what is in flight reports
        the break, or, with nothing in flight, a new pool starts here."""
        try:
            inflight[self._pool.submit(fn, chunk)] = (chunk, alone)
            return True
        except BrokenProcessPool:
            if alone:
                suspects.insert(0, chunk)
            else:
                suspects.extend([t] for t in chunk)
            if inflight:
                return False
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            return True

    def abort(self) -> None:
        self._aborted = True
        # ProcessPoolExecutor cannot kill running tasks (terminate_workers() arrives in 3.14).
        procs = list(getattr(self._pool, "_processes", {}).values())
        for p in procs:
            p.terminate()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            p.join(timeout=5)

    def close(self) -> None:
        if not self._aborted:  # an aborted pool is already torn down
            self._pool.shutdown(wait=True, cancel_futures=True)


# -- Dask distributed ------------------------------------------------------------------------

def _on_dask_worker(fn: ChunkFn, chunk: list[Task]) -> list[Result]:
    """Runs on the worker: the chunk, each result signed with the worker's address (host:pid
    says nothing on a cluster of in-process workers, and the address is what Dask's dashboard
    and logs name)."""
    results = fn(chunk)
    address = importlib.import_module("distributed").get_worker().address
    for r in results:
        r["worker"] = address
    return results


def _scheduler_address(path: Path, timeout: float) -> str:
    """The address in a scheduler file (what dask-jobqueue, dask-mpi and HPC launch scripts
    write). Dask's own ``Client(scheduler_file=)`` waits for a missing file without end; here
    the file gets the connect timeout to appear (a scheduler started beside this job)."""
    deadline = time.monotonic() + timeout
    while True:
        problem = ""
        try:
            with path.open("rb") as f:
                info = json.loads(f.read(_SCHEDULER_FILE_MAX))
            address = info["address"] if isinstance(info, dict) else None
            if isinstance(address, str) and address:
                return address
            problem = "it names no scheduler address"
        except FileNotFoundError:
            problem = "no such file"
        except (OSError, ValueError) as e:  # ValueError: a file still being written
            problem = f"not a Dask scheduler file ({type(e).__name__})"
        if time.monotonic() >= deadline:
            msg = f"--scheduler-file {path}: {problem} (waited {timeout:g} s)"
            raise ValueError(msg)
        time.sleep(0.1)


def _probe(address: str, timeout: float) -> None:
    """A TCP scheduler that refuses the connection fails here at once (Dask's own client
    retries a refused address until its timeout). Other protocols are left to Dask."""
    parts = urllib.parse.urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp" or not parts.hostname:
        return
    try:
        port = parts.port or _DASK_PORT
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except (OSError, ValueError) as e:  # ValueError: a port out of range
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or "timed out"
        msg = f"cannot reach the Dask scheduler at {address}: {why}"
        raise ValueError(msg) from e


class DaskExecutor:
    """The same tasks on a Dask distributed cluster (``--scheduler tcp://HOST:PORT`` or
    ``--scheduler-file FILE``). Workers read the inputs and write the outputs on shared storage;
    results come back here, and only this process writes the manifest.

    Clusters change size while a run goes on (adaptive clusters, dask-jobqueue, workers started
    by hand): the number of tasks in flight follows the cluster as it is now (four per worker
    thread, polled every ``_POLL`` seconds), so a worker that joins late gets its share. With
    no workers the run waits and says so. ``cap`` (``--jobs``) bounds the files in flight, so
    a run can share a cluster or spare a file server. A task whose worker died is retried by
    Dask itself (``distributed.scheduler.allowed-failures``); only a file that kills every
    worker it is given is recorded, as ``WorkerCrashed``."""

    name = "dask"

    def __init__(self, scheduler: str | None, scheduler_file: Path | None = None,
                 cap: int | None = None, timeout: float = 5.0) -> None:
        address = scheduler or _scheduler_address(Path(scheduler_file or ""), timeout)
        _probe(address, timeout)  # before Dask's import (seconds): a refusal fails at once
        try:
            # Through importlib: distributed is partly typed, and it is an optional extra.
            self._dist: Any = importlib.import_module("distributed")
        except ImportError as e:
            msg = ("--scheduler needs Dask distributed: pip install 'gamemesh[cluster]' "
                   "(or 'dask[distributed]')")
            raise ValueError(msg) from e
        self.scheduler = address
        try:
            self._client = self._dist.Client(address, timeout=f"{timeout}s",
                                             set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:
            detail = " ".join(str(e).split()) or type(e).__name__
            msg = f"cannot reach the Dask scheduler at {address}: {detail}"
            raise ValueError(msg) from e
        self.cap = cap
        self.jobs = 0  # the most worker threads seen: the run's record
        self._threads = -1  # as last polled (-1: not yet)
        self._polled = 0.0
        self._inflight: dict[Any, tuple[Any, list[Task]]] = {}
        self._aborted = False

    @property
    def dashboard(self) -> str | None:
        with contextlib.suppress(Exception):  # no dashboard (bokeh missing, disabled)
            link = self._client.dashboard_link
            return str(link) if link else None
        return None

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop,
            say: Say = _silent) -> Iterator[list[Result]]:
        link = self.dashboard
        say(f"Dask scheduler {self.scheduler}" + (f", dashboard {link}" if link else ""))
        more = True
        while True:
            if more and not stop.requested:
                window = self._window(say)
                while more and len(self._inflight) < window:
                    chunk = next(chunks, None)
                    more = chunk is not None
                    if chunk is not None:
                        # pure=False: two identical chunks (a rerun with --force) are two tasks.
                        fut = self._client.submit(_on_dask_worker, fn, chunk, pure=False)
                        self._inflight[fut.key] = (fut, chunk)
            if more and stop.requested:
                more = False
                self._drop_queued()
            if not self._inflight and not more:
                return
            done = self._finished()
            if not done:
                yield []
            yield from self._results([self._inflight.pop(key) for key in done])

    def _drop_queued(self) -> None:
        """On a stop request the tasks still queued at the scheduler are taken back (their files
        stay pending for the next run); those already given to a worker finish and are
        recorded. One that starts in between is cancelled too: its output, written to a
        temporary name and renamed, is simply converted again by the next run."""
        try:
            on_workers = {k for keys in self._client.processing().values() for k in keys}
        except Exception:  # the scheduler is away: what is in flight stays to be collected
            return
        queued = [key for key in self._inflight if key not in on_workers]
        self._client.cancel([self._inflight.pop(key)[0] for key in queued])

    def _finished(self) -> list[Any]:
        """Keys of the tasks done, waiting up to a heartbeat for the first (woken by it, not
        polled: a result noticed late is a worker left idle for that long)."""
        if not self._inflight:  # no worker yet: nothing to wait on
            time.sleep(_POLL / 5)
            return []
        futures = [fut for fut, _ in self._inflight.values()]
        # TimeoutError: a heartbeat; anything else (a cancelled task) shows in its result.
        with contextlib.suppress(Exception):
            self._dist.wait(futures, timeout=_HEARTBEAT, return_when="FIRST_COMPLETED")
        return [key for key, (fut, _) in self._inflight.items() if fut.done()]

    def _window(self, say: Say) -> int:
        """Tasks to keep in flight: ``_PER_THREAD`` per worker thread of the cluster as it is
        now, at most ``cap``. More than the scheduler hands a worker at once (its
        worker-saturation), so a few wait at the scheduler: a thread that finishes gets the
        next without a round trip to this process, and a worker that joins gets them at once."""
        now = time.monotonic()
        if now - self._polled >= _POLL:
            self._polled = now
            try:
                nthreads: dict[str, int] | None = self._client.nthreads()
            except Exception:  # the scheduler is away (OSError, or a half-closed client's
                nthreads = None  # AttributeError): Dask tries to reconnect
            if self._client.status in ("closing", "closed"):  # and gave up
                msg = (f"lost the Dask scheduler at {self.scheduler}; run the same command "
                       "again to finish the rest")
                raise ValueError(msg)
            threads = sum(nthreads.values()) if nthreads else 0
            if threads != self._threads:
                say(f"Dask cluster: {plural(len(nthreads or {}), 'worker')}, "
                    f"{plural(threads, 'thread')}" if threads else
                    f"waiting for workers: the Dask scheduler at {self.scheduler} has none"
                    if nthreads is not None else
                    f"the Dask scheduler at {self.scheduler} does not answer: waiting")
            self._threads = threads
            self.jobs = max(self.jobs, threads)
        window = _PER_THREAD * max(0, self._threads)
        return min(window, self.cap) if self.cap else window

    def _results(self, done: list[tuple[Any, list[Task]]]) -> Iterator[list[Result]]:
        """The results of finished tasks, fetched in one round trip (each ``result()`` is a hop
        to the client's event loop thread: on a busy machine, milliseconds per file)."""
        ok = [fut for fut, _ in done if fut.status == "finished"]
        got: dict[Any, list[Result]] = {}
        with contextlib.suppress(Exception):  # one lost meanwhile: each is collected alone
            if ok:
                got = dict(zip([f.key for f in ok], self._client.gather(ok), strict=True))
        for fut, chunk in done:
            yield got[fut.key] if fut.key in got else self._collect(fut, chunk)

    def _collect(self, fut: Any, chunk: list[Task]) -> list[Result]:
        try:
            results: list[Result] = fut.result()
            return results
        except Exception as e:
            if type(e).__name__ == "KilledWorker":
                return failed_results(chunk, "the worker died converting this file, on every "
                                      "attempt Dask made (distributed.scheduler.allowed-"
                                      "failures)", "WorkerCrashed")
            detail = " ".join(str(e).split())
            return failed_results(chunk, f"cluster task failed: {type(e).__name__}: {detail}",
                                  "WorkerError")

    def abort(self) -> None:
        self._aborted = True
        self._client.cancel([fut for fut, _ in self._inflight.values()])
        self._inflight.clear()
        self._client.close()

    def close(self) -> None:
        if not self._aborted:
            self._client.close()


def available_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def executor_label(name: str, jobs: int) -> str:
    """How a run's executor reads in a summary: "2 processes", "Dask, 6 worker threads"."""
    if name == "dask":
        return f"Dask, {plural(jobs, 'worker thread')}"
    return plural(jobs, "process")


def make_executor(jobs: int | None, scheduler: str | None = None,
                  scheduler_file: Path | None = None, timeout: float = 5.0) -> Executor:
    """``jobs`` is the pool's size locally, a cap on the files in flight on a cluster."""
    if scheduler or scheduler_file:
        return DaskExecutor(scheduler, scheduler_file, cap=jobs, timeout=timeout)
    n = jobs or available_cores()
    return InProcessExecutor() if n == 1 else PoolExecutor(n)
