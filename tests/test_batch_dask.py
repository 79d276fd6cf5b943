"""The Dask path (``--scheduler tcp://HOST:PORT``) against a LocalCluster on loopback: the same
manifest and the same output bytes as the local process pool; workers that join after the run
started get their share; ``--scheduler-file``; a scheduler that cannot be reached leaves DST
untouched."""

from __future__ import annotations

import hashlib
import io
import itertools
import re
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gamemesh.batch import MANIFEST_NAME, BatchConfig, Manifest, run_batch
from gamemesh.batch.sampletree import build_tree
from gamemesh.cli import main

# Columns that legitimately differ between two runs of the same conversions.
_VOLATILE = ("started", "finished", "seconds", "timings", "worker", "run")


def normalized(dst: Path) -> list[dict[str, Any]]:
    with Manifest(dst / MANIFEST_NAME, create=False) as m:
        rows = [{k: v for k, v in r.items() if k not in _VOLATILE} for r in m.rows()]
    for r in rows:
        # Pillow's messages name a BytesIO by its memory address.
        r["error"] = re.sub(r"object at 0x[0-9a-f]+", "object", r["error"] or "") or None
    return rows


def outputs(dst: Path) -> dict[str, str]:
    return {p.relative_to(dst).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(dst.rglob("*")) if p.is_file() and not p.name.startswith(
                "gamemesh-batch.")}


def test_dask_cluster_matches_local_pool(tmp_path: Path) -> None:
    distributed = pytest.importorskip(
        "distributed", reason="dask[distributed] is not installed (pip install "
        "'gamemesh[cluster]'): the --scheduler path cannot be tested")
    tree = build_tree(tmp_path / "src", 80, seed=11)
    local = run_batch(BatchConfig(tree.root, tmp_path / "local", jobs=2, quiet=True))
    assert local.executor == "local" and local.converted == local.units

    # Threads in this process (processes=False): nothing to spawn, loopback TCP only.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp", host="127.0.0.1", scheduler_port=0,
                                  dashboard_address="127.0.0.1:0") as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")
        remote = run_batch(BatchConfig(tree.root, tmp_path / "dask", scheduler=addr,
                                       quiet=True))
        assert (remote.executor, remote.jobs) == ("dask", 2)
        assert (remote.converted, remote.ok, remote.errors) == (local.converted, local.ok,
                                                                local.errors)
        again = run_batch(BatchConfig(tree.root, tmp_path / "dask", scheduler=addr,
                                      quiet=True))
        assert (again.converted, again.skipped) == (0, local.units)

    assert normalized(tmp_path / "dask") == normalized(tmp_path / "local")
    got = outputs(tmp_path / "dask")
    assert got == outputs(tmp_path / "local")
    assert sum(k.endswith(".glb") for k in got) == local.ok


# -- clusters as their users run them: workers that come later, scheduler files, no cluster --

def _distributed() -> Any:
    return pytest.importorskip("distributed", reason="dask[distributed] is not installed")


def _cluster(n_workers: int, threads: int = 1) -> Any:
    # Threads in this process: nothing to spawn, timing stays predictable; loopback only.
    return _distributed().LocalCluster(n_workers=n_workers, threads_per_worker=threads,
                                       processes=False, protocol="tcp", host="127.0.0.1",
                                       scheduler_port=0, dashboard_address="127.0.0.1:0")


def slow_post(output: Path, source: Path) -> list[Path]:
    """A post-step that makes every file take 80 ms more, so the split between workers
    follows how tasks are handed out rather than which thread wins the GIL."""
    time.sleep(0.08)
    return []


def _wait(cond: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _per_worker(dst: Path) -> Counter[str]:
    with Manifest(dst / MANIFEST_NAME, create=False) as m:
        return Counter(r["worker"] for r in m.rows("status IN ('ok', 'error')"))


def test_workers_that_join_later_get_a_fair_share(tmp_path: Path) -> None:
    """Started on a cluster with no workers: the run says it waits; three workers join, then a
    fourth once a third of the files are done. The window follows the cluster, so each gets its
    share (a window sized at connect time kept 2 tasks in flight: 4 / 46 / 97)."""
    tree = build_tree(tmp_path / "src", 90, seed=5)
    dst = tmp_path / "dst"
    log = io.StringIO()
    with _cluster(0) as cluster:
        cfg = BatchConfig(tree.root, dst, scheduler=cluster.scheduler_address, quiet=True,
                          stream=log, post=["test_batch_dask:slow_post"])
        out: list[Any] = []
        runner = threading.Thread(target=lambda: out.append(run_batch(cfg)))
        runner.start()
        try:
            _wait(lambda: "waiting for workers" in log.getvalue(), 30, "the waiting message")
            assert not dst.joinpath("a").exists() or not list(dst.rglob("*.glb"))
            cluster.scale(3)
            _wait(lambda: len(list(dst.rglob("*.glb"))) >= 14, 60, "a third of the files")
            cluster.scale(4)
        finally:
            runner.join(120)
    assert not runner.is_alive() and out
    res = out[0]
    assert res.converted == res.units - res.skipped and res.units >= 60
    assert (res.executor, res.jobs) == ("dask", 4)
    split = _per_worker(dst)
    assert len(split) == 4 and all(w.startswith("tcp://127.0.0.1:") for w in split), split
    late = min(split.values())
    # Three workers from the start, the fourth for the last two thirds: a fair share for it is
    # about a sixth of the files; a quarter of that already proves it was not left idle.
    assert late >= res.converted / 24, split
    first_three = sorted(split.values())[1:]
    assert first_three[0] >= res.converted / 8, split
    assert max(split.values()) <= res.converted / 2, split  # fixed window of 2: 44 of 69
    assert "Dask cluster: 3 workers, 3 threads" in log.getvalue()
    assert "Dask cluster: 4 workers, 4 threads" in log.getvalue()


def test_scheduler_file_jobs_cap_and_dashboard(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``--scheduler-file`` as dask-jobqueue writes it; ``--jobs 1`` on a 2-thread cluster caps
    the files converting at once (no two conversions overlap in time); the dashboard link and
    the cluster's size are printed."""
    tree = build_tree(tmp_path / "src", 24, seed=3)
    with _cluster(1, threads=2) as cluster, _distributed().Client(
            cluster.scheduler_address, set_as_default=False) as client:
        sfile = tmp_path / "scheduler.json"
        client.write_scheduler_file(str(sfile))
        code = main(["batch", str(tree.root), str(tmp_path / "dst"), "--scheduler-file",
                     str(sfile), "--jobs", "1", "--progress-interval", "60"])
    err = capsys.readouterr().err
    assert code == 1  # the sample tree holds damaged files on purpose
    assert f"Dask scheduler {cluster.scheduler_address}, dashboard http://127.0.0.1:" in err
    assert "(Dask, 2 worker threads)" in err and "jobs" not in err
    with Manifest(tmp_path / "dst" / MANIFEST_NAME, create=False) as m:
        spans = sorted((r["started"], r["finished"]) for r in m.rows("status IN ('ok', 'error')"))
        assert len(spans) >= 15
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
        assert [(r["executor"], r["jobs"]) for r in m.runs()] == [("dask", 2)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("how", ["refused", "scheduler-file"])
def test_failed_connection_leaves_nothing_in_dst(tmp_path: Path, how: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening (refused at once, not after the connect timeout), a scheduler file
    that never appears (after the timeout): one line, exit 2, DST untouched."""
    _distributed()
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.txt").write_text("not a model")
    dst = tmp_path / "dst"
    where, timeout = ([f"--scheduler=tcp://127.0.0.1:{_free_port()}"], "30") if (
        how == "refused") else (["--scheduler-file", str(tmp_path / "never-written.json")], "1")
    t0 = time.monotonic()
    code = main(["batch", str(src), str(dst), *where, "--connect-timeout", timeout])
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2 and took < 8, took
    assert err.count("\n") == 1 and err.startswith("gamemesh: "), err
    assert ("cannot reach the Dask scheduler at tcp://127.0.0.1:" in err and
            "Connection refused" in err if how == "refused" else
            "never-written.json: no such file (waited 1 s)" in err), err
    assert not dst.exists()
    dst.mkdir()  # an existing DST stays as it was: no lock, no manifest
    assert main(["batch", str(src), str(dst), *where, "--connect-timeout", timeout]) == 2
    assert list(dst.iterdir()) == []


def sleepy_chunk(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
    time.sleep(0.05)
    return [{"path": t["rel"]} for t in chunk]


def test_stop_takes_back_what_waits_at_the_scheduler() -> None:
    """Ctrl-C once: what a worker holds finishes and comes back; what still waits at the
    scheduler is cancelled (its files stay pending), not run after the stop."""
    from gamemesh.batch.executors import DaskExecutor, Stop

    with _cluster(1, threads=2) as cluster:
        ex = DaskExecutor(cluster.scheduler_address)
        stop = Stop()
        got: list[str] = []
        try:
            for results in ex.run(sleepy_chunk, iter([[{"rel": str(i)}] for i in range(60)]),
                                  stop):
                got += [r["path"] for r in results]
                stop.requested = stop.requested or bool(got)
        finally:
            ex.close()
    # 8 in flight (4 per thread); the scheduler gives a 2-thread worker 3 at once: after the
    # first result at most those, and the one it received meanwhile, come back.
    assert 1 <= len(got) <= 5, got
    assert ex.jobs == 2


def test_a_file_that_kills_every_worker_is_worker_crashed() -> None:
    """Dask retries a task whose worker died (allowed-failures); when it gives up, the file is
    recorded as WorkerCrashed, as with the local pool, in one line."""
    distributed = _distributed()
    from gamemesh.batch.executors import DaskExecutor

    class Worker:
        address = "tcp://127.0.0.1:1"

    class Gone:
        def result(self) -> Any:
            key = "convert-1"
            raise distributed.KilledWorker(key, Worker(), 3)

    ex = DaskExecutor.__new__(DaskExecutor)  # no cluster needed to read a result
    task = {"rel": "a/x.papa", "format": "papa", "size": 10}
    [row] = ex._collect(Gone(), [task])
    assert (row["path"], row["status"], row["error_type"]) == ("a/x.papa", "error",
                                                                "WorkerCrashed")
    assert "allowed-failures" in row["error"] and "\n" not in row["error"]


def test_lost_scheduler_ends_the_run_and_the_rerun_finishes(tmp_path: Path) -> None:
    """The scheduler goes away mid-run: once Dask gives up reconnecting the run ends in one
    line; files lost with it are not kept as errors of their own (WorkerError is retried by
    the next run, without --retry-errors), and a rerun on another cluster finishes the tree."""
    tree = build_tree(tmp_path / "src", 40, seed=7)
    dst = tmp_path / "dst"
    cfg = BatchConfig(tree.root, dst, quiet=True, stream=io.StringIO(), connect_timeout=1,
                      post=["test_batch_dask:slow_post"])
    cluster = _cluster(1)
    cfg.scheduler = cluster.scheduler_address
    closer = threading.Thread(target=lambda: (_wait(lambda: len(list(dst.rglob("*.glb"))) >= 3,
                                                    60, "three outputs"), cluster.close()))
    closer.start()
    with pytest.raises(ValueError, match=r"lost the Dask scheduler at tcp://127\.0\.0\.1:"):
        run_batch(cfg)
    closer.join(30)
    with _cluster(1, threads=2) as again:
        cfg.scheduler = again.scheduler_address
        res = run_batch(cfg)
    with Manifest(dst / MANIFEST_NAME, create=False) as m:
        rows = m.rows()
        runs = m.runs()
    assert [r["status"] for r in runs] == ["aborted", "done"]
    assert not [r for r in rows if r["status"] == "pending" or r["error_type"] == "WorkerError"]
    assert res.ok + sum(r["status"] == "ok" and r["run"] == runs[0]["id"] for r in rows) == sum(
        r["status"] == "ok" for r in rows)
