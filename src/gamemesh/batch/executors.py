"""Where the tasks run: in this process, in a local process pool, or on a Dask cluster.

Every executor has the same shape: ``run(fn, chunks, stop)`` yields the result lists of
finished chunks as they come (an empty list now and then as a heartbeat, so the driver can
redraw progress), keeps only a few chunks in flight (so a stop request leaves little to drain
and nothing is queued that would have to be taken back), stops submitting once ``stop`` is set
and drains what is running; ``abort()`` kills what is still running (its outputs are written to
temporary names and renamed, so a killed task leaves no partial file behind).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from .work import Result, Task

__all__ = ["DaskExecutor", "Executor", "InProcessExecutor", "PoolExecutor", "Stop",
           "failed_results", "make_executor"]

ChunkFn = Callable[[list[Task]], list[Result]]
_HEARTBEAT = 0.5


class Stop:
    """Set by the first Ctrl-C (or SIGTERM): finish what runs, start nothing new."""

    def __init__(self) -> None:
        self.requested = False


class Executor(Protocol):
    name: str
    jobs: int

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop) -> Iterator[
            list[Result]]: ...

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

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop) -> Iterator[
            list[Result]]:
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

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.jobs, mp_context=_mp_context(),
                                   initializer=_init_worker, initargs=(os.getpid(),))

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop) -> Iterator[
            list[Result]]:
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
        # ProcessPoolExecutor cannot kill running tasks (terminate_workers() arrives in 3.14).
        procs = list(getattr(self._pool, "_processes", {}).values())
        for p in procs:
            p.terminate()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            p.join(timeout=5)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


# -- Dask distributed ------------------------------------------------------------------------

class DaskExecutor:
    """The same tasks on a Dask distributed cluster (``--scheduler tcp://HOST:PORT``). Workers
    read the inputs and write the outputs on shared storage; results come back here, and only
    this process writes the manifest."""

    name = "dask"

    def __init__(self, scheduler: str) -> None:
        try:
            # Through importlib: distributed is partly typed, and it is an optional extra.
            self._dist: Any = importlib.import_module("distributed")
        except ImportError as e:
            msg = ("--scheduler needs Dask distributed: pip install 'gamemesh[cluster]' "
                   "(or 'dask[distributed]')")
            raise ValueError(msg) from e
        self.scheduler = scheduler
        try:
            self._client = self._dist.Client(scheduler, timeout="10s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:
            msg = f"cannot reach the Dask scheduler at {scheduler}: {e}"
            raise ValueError(msg) from e
        self.jobs = max(1, sum(self._client.nthreads().values()))
        self._inflight: dict[Any, Any] = {}

    def run(self, fn: ChunkFn, chunks: Iterator[list[Task]], stop: Stop) -> Iterator[
            list[Result]]:
        window = 2 * self.jobs
        owner: dict[Any, list[Task]] = {}
        pending = self._dist.as_completed(loop=self._client.loop, with_results=False)

        def submit() -> bool:
            chunk = next(chunks, None)
            if chunk is None:
                return False
            # pure=False: two identical chunks (a rerun with --force) are separate tasks.
            fut = self._client.submit(fn, chunk, pure=False)
            owner[fut.key] = chunk
            self._inflight[fut.key] = fut
            pending.add(fut)
            return True

        for _ in range(window):
            if not submit():
                break
        while not pending.is_empty():
            batch = pending.next_batch(block=False) if pending.has_ready() else []
            if not batch:
                time.sleep(0.1)
                yield []
                continue
            for fut in batch:
                chunk = owner.pop(fut.key)
                self._inflight.pop(fut.key, None)
                try:
                    yield fut.result()
                except Exception as e:
                    yield failed_results(chunk, f"cluster task failed: {type(e).__name__}: "
                                         f"{e}", "WorkerError")
                if not stop.requested:
                    submit()

    def abort(self) -> None:
        self._client.cancel(list(self._inflight.values()))
        self._inflight.clear()
        self._client.close()

    def close(self) -> None:
        self._client.close()


def available_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def make_executor(jobs: int | None, scheduler: str | None) -> Executor:
    if scheduler:
        return DaskExecutor(scheduler)
    n = jobs or available_cores()
    return InProcessExecutor() if n == 1 else PoolExecutor(n)
