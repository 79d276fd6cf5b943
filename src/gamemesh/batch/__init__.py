"""Batch conversion of whole game folders, and scanning them (issue #8).

``run_batch`` finds every file a format can read (by content), groups files that load together
(a Papa unit with its textures and animations), converts each unit once in a local process pool
or on a Dask cluster, mirrors SRC's folders under DST and records one row per input in an SQLite
manifest in DST, so a rerun converts only what changed. ``scan_tree`` reports what a folder
holds without converting. Everything goes through the public API (``gamemesh.convert``,
``gamemesh.sniff``, the registry), so every format that lands joins in.

Modules: ``discover`` (walk + sniff), ``group`` (multi-file units), ``work`` (what a worker
runs), ``executors`` (in-process, process pool, Dask), ``manifest`` (SQLite), ``progress``,
``run`` (the driver), ``report`` (``--report``), ``scan``. See docs/batch.md.
"""

from __future__ import annotations

from .manifest import MANIFEST_NAME, Manifest
from .report import format_report, summarize
from .run import BatchConfig, BatchResult, run_batch
from .scan import ScanConfig, format_scan, scan_tree

__all__ = ["MANIFEST_NAME", "BatchConfig", "BatchResult", "Manifest", "ScanConfig",
           "format_report", "format_scan", "run_batch", "scan_tree", "summarize"]
