"""The batch manifest: one SQLite database in the destination folder, one row per input.

SQLite because it is embedded (nothing to start), transactional (a run killed at any moment
leaves the last committed state, never a half-written row) and queryable by users with any
SQLite tool. Only the driver process writes it; workers return plain dicts.

A row holds the input's path (relative to SRC, POSIX separators), size, mtime, content hash,
format, version and variant, the options it was converted with, its status, error, outputs
(relative to DST), notes and timings. Status is one of:

``pending``  discovered, not converted yet (a run that stopped early leaves these);
``ok``       converted, outputs written;
``error``    could not be converted, ``error`` says why (the run went on);
``grouped``  part of a multi-file unit converted through its primary (``group_of``);
``missing``  converted by an earlier run, gone from SRC since.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["DONE", "MANIFEST_NAME", "Manifest", "Row"]

MANIFEST_NAME = "gamemesh-batch.sqlite"
SCHEMA_VERSION = "1"
DONE = ("ok", "error")

Row = dict[str, Any]

_COLUMNS = (
    "path", "size", "mtime_ns", "hash", "format", "version", "variant", "options", "key",
    "status", "error", "error_type", "outputs", "notes", "group_of", "members", "started",
    "finished", "seconds", "timings", "worker", "run",
)
# Columns stored as JSON text and decoded when read back.
_JSON = ("options", "outputs", "notes", "members", "timings")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inputs (
    path TEXT PRIMARY KEY,
    size INTEGER,
    mtime_ns INTEGER,
    hash TEXT,
    format TEXT,
    version TEXT,
    variant TEXT,
    options TEXT,
    key TEXT,
    status TEXT NOT NULL,
    error TEXT,
    error_type TEXT,
    outputs TEXT,
    notes TEXT,
    group_of TEXT,
    members TEXT,
    started REAL,
    finished REAL,
    seconds REAL,
    timings TEXT,
    worker TEXT,
    run INTEGER
);
CREATE INDEX IF NOT EXISTS inputs_status ON inputs (status);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    finished REAL,
    src TEXT,
    target TEXT,
    executor TEXT,
    jobs INTEGER,
    planned INTEGER,
    converted INTEGER,
    skipped INTEGER,
    errors INTEGER,
    bytes INTEGER,
    status TEXT
);
"""


class Manifest:
    """A connection to ``DST/gamemesh-batch.sqlite``. Use as a context manager."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        if not create and not path.is_file():
            msg = f"no batch manifest at {path}"
            raise FileNotFoundError(2, msg, str(path))
        self.path = path
        # isolation_level=None: we open transactions ourselves, so a commit covers exactly one
        # batch of results and nothing is left half-done by an interrupt.
        self.db = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        self.db.row_factory = sqlite3.Row
        # The rollback journal (not WAL: DST may be on network storage shared with cluster
        # workers); NORMAL sync: a killed process loses nothing committed, only an OS crash
        # could cost the last commit.
        self.db.execute("PRAGMA synchronous = NORMAL")
        if create:
            self.db.executescript(_SCHEMA)
            self.set_meta("schema", SCHEMA_VERSION)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Manifest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self.db.in_transaction:  # SQLite itself rolls back on a full disk
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.OperationalError as e:
            if "full" not in str(e) and "I/O" not in str(e):
                raise
            # A full disk: one line naming the manifest (the CLI prints OSErrors so).
            err = errno.ENOSPC if "full" in str(e) else errno.EIO
            raise OSError(err, f"the manifest cannot be written ({e})", str(self.path)) from e

    # -- meta ----------------------------------------------------------------------------
    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta(self) -> dict[str, str]:
        return {r["key"]: r["value"] for r in self.db.execute("SELECT key, value FROM meta")}

    # -- rows ----------------------------------------------------------------------------
    def rows(self, where: str = "", params: tuple[Any, ...] = ()) -> list[Row]:
        sql = "SELECT * FROM inputs" + (f" WHERE {where}" if where else "") + " ORDER BY path"
        return [_decode(r) for r in self.db.execute(sql, params)]

    def row_map(self) -> dict[str, Row]:
        return {r["path"]: r for r in self.rows()}

    def add_pending(self, entries: Iterable[tuple[str, int, int, str]]) -> None:
        """New inputs (path, size, mtime_ns, format) as ``pending``; known rows keep their last
        result until a new one replaces it."""
        self.db.executemany(
            "INSERT OR IGNORE INTO inputs (path, size, mtime_ns, format, status) "
            "VALUES (?, ?, ?, ?, 'pending')", entries)

    def put(self, row: Row) -> None:
        """Insert or replace a whole row (columns not given become NULL)."""
        values = [_encode(c, row.get(c)) for c in _COLUMNS]
        marks = ", ".join("?" for _ in _COLUMNS)
        self.db.execute(f"INSERT OR REPLACE INTO inputs ({', '.join(_COLUMNS)}) VALUES ({marks})",
                        values)

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        """Same content, new stat (a copy, a touch): remember the stat for the fast path."""
        self.db.execute("UPDATE inputs SET size = ?, mtime_ns = ? WHERE path = ?",
                        (size, mtime_ns, path))

    def mark_missing(self, present: set[str]) -> int:
        gone = [r["path"] for r in self.db.execute("SELECT path FROM inputs WHERE status != "
                                                   "'missing'") if r["path"] not in present]
        self.db.executemany("UPDATE inputs SET status = 'missing' WHERE path = ?",
                            [(p,) for p in gone])
        return len(gone)

    def counts(self) -> dict[str, int]:
        return {r[0]: r[1] for r in self.db.execute(
            "SELECT status, COUNT(*) FROM inputs GROUP BY status")}

    # -- runs ----------------------------------------------------------------------------
    def close_stale_runs(self) -> int:
        """Runs still marked ``running`` when a new one starts were killed outright (the DST
        lock lets one batch write at a time): mark them ``interrupted``, ``finished`` left
        empty since nobody saw them end. Returns how many."""
        cur = self.db.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
        return int(cur.rowcount or 0)

    def start_run(self, src: str, target: str, executor: str, jobs: int, planned: int) -> int:
        self.close_stale_runs()
        cur = self.db.execute(
            "INSERT INTO runs (started, src, target, executor, jobs, planned, status) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running')", (time.time(), src, target, executor, jobs,
                                                     planned))
        return int(cur.lastrowid or 0)

    def finish_run(self, run: int, *, converted: int, skipped: int, errors: int, nbytes: int,
                   status: str, jobs: int) -> None:
        """``jobs`` again: a cluster's size is known only once the run is over (the most
        worker threads it had)."""
        self.db.execute(
            "UPDATE runs SET finished = ?, converted = ?, skipped = ?, errors = ?, bytes = ?, "
            "status = ?, jobs = ? WHERE id = ?", (time.time(), converted, skipped, errors,
                                                  nbytes, status, jobs, run))

    def runs(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM runs ORDER BY id")]


def _encode(column: str, value: Any) -> Any:
    if column in _JSON and value is not None:
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _decode(r: sqlite3.Row) -> Row:
    out = dict(r)
    for c in _JSON:
        if out.get(c) is not None:
            out[c] = json.loads(out[c])
    return out
