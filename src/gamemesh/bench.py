"""Throughput and peak memory per format: ``python -m gamemesh.bench [--size MB] [--format F]
[--batch N] [--corpus DIR] [--markdown]``.

For every format with a sample generator (``FormatSpec.make_sample``) it builds a native file of
about the given size and measures, each on its own: read (bytes -> native document), to-scene
(document -> Scene) and GLB write (Scene -> GLB bytes), as MB/s of the *native* file; *to-GLB*
is their sum (each step best of N, on warm memory), *one pass* the three run together on fresh
objects as a conversion runs them; plus the peak memory traced during the whole pass. The
process's malloc is tuned as the command line tunes it (:mod:`gamemesh.allocator`).

``--corpus DIR`` measures real files instead (see :mod:`gamemesh.benchcorpus`): per-file
median and totals of ``read_native``, ``load`` and load -> GLB, and texture decode, optionally
against a peer's per-file timings (``--peer``); ``--generated`` adds the generated files to the
same run. ``--markdown`` prints the tables the README and docs quote, with the machine and its
load, so every figure comes from one run::

    python -m gamemesh.bench --corpus ../shared/corpus --corpus tests/fixtures \\
        --peer oracle.jsonl --generated --size 20 --size 120 --batch 1000 --clock cpu --markdown
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from . import allocator
from .benchcorpus import CLOCKS, best_of
from .formats.gltf import write_glb
from .registry import Context, FormatSpec, formats


def _best(fn: Callable[[], Any], repeat: int, clock: str = "wall") -> tuple[float, Any]:
    best, _, out = best_of(fn, repeat, clock)
    return best, out


def bench_format(spec: FormatSpec, size: int, repeat: int = 3, clock: str = "wall"
                 ) -> dict[str, Any]:
    assert spec.make_sample is not None and spec.read is not None
    t0 = time.perf_counter()
    data = spec.make_sample(size)
    gen = time.perf_counter() - t0
    mb = len(data) / 1e6
    ctx = Context(None, {})
    t_read, doc = _best(lambda: spec.read(data, ctx), repeat, clock)  # type: ignore[misc]
    row: dict[str, Any] = {"format": spec.name, "bytes": len(data), "generate_s": round(gen, 3),
                           "read_MBps": round(mb / t_read, 1)}
    if spec.to_scene is not None:
        t_scene, scene = _best(lambda: spec.to_scene(doc, ctx), repeat,  # type: ignore[misc]
                               clock)
        t_glb, glb = _best(lambda: write_glb(scene), repeat, clock)
        row["to_scene_MBps"] = round(mb / t_scene, 1)
        row["glb_write_MBps"] = round(mb / t_glb, 1)
        row["to_glb_MBps"] = round(mb / (t_read + t_scene + t_glb), 1)
        # The same three steps as one pass on fresh objects, as a conversion runs them (the
        # stages' sum reuses warm memory; this pays for every page the pass touches).
        row["glb_bytes"] = len(glb)
        del glb
        to_scene, read = spec.to_scene, spec.read
        t_pass, _ = _best(lambda: write_glb(to_scene(read(data, ctx), ctx)), repeat, clock)
        row["one_pass_MBps"] = round(mb / t_pass, 1)
        # Counted here, not by scene.summary(): its bounds multiply every vertex by a matrix
        # in BLAS, whose idle threads then spin for a while, and on the CPU clock that spinning
        # was charged to whatever ran next (the one pass, the next format's steps).
        row["vertices"] = sum(p.vertex_count for m in scene.meshes for p in m.primitives)
        del scene
    tracemalloc.start()
    d2 = spec.read(data, ctx)
    if spec.to_scene is not None:
        write_glb(spec.to_scene(d2, ctx))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    row["peak_MiB"] = round(peak / 2**20, 1)
    if "glb_bytes" in row:
        # The bound: peak <= 2 x (input + output).
        row["peak_ratio"] = round(peak / (len(data) + row["glb_bytes"]), 2)
    return row


def _row_text(r: dict[str, Any]) -> str:
    return (f"{r['format']:<11} {r['bytes'] / 1e6:8.1f} MB  read {r['read_MBps']:8.1f} MB/s"
            f"  to-scene {r.get('to_scene_MBps', '-'):>8} MB/s"
            f"  glb-write {r.get('glb_write_MBps', '-'):>8} MB/s"
            f"  to-GLB {r.get('to_glb_MBps', '-'):>7} MB/s"
            f"  one pass {r.get('one_pass_MBps', '-'):>7} MB/s  peak {r['peak_MiB']} MiB"
            f" ({r.get('peak_ratio', '-')}x in+out)")


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| format | native size | read | to-scene | GLB write | **to-GLB** | one pass "
             "| peak memory (x in+out) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['format']} | {r['bytes'] / 1e6:.1f} MB | {r['read_MBps']:.0f} MB/s | "
                     f"{r.get('to_scene_MBps', 0):.0f} MB/s | {r.get('glb_write_MBps', 0):.0f} "
                     f"MB/s | **{r.get('to_glb_MBps', 0):.0f} MB/s** | "
                     f"{r.get('one_pass_MBps', 0):.0f} MB/s | {r['peak_MiB']:.0f} MiB "
                     f"({r.get('peak_ratio', '-')}x) |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gamemesh.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=float, action="append",
                   help="native file size in MB (default 20; repeatable: one table per size)")
    p.add_argument("--format", action="append", help="only these formats (repeatable)")
    p.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    p.add_argument("--min-time", type=float, default=0.05, metavar="SECONDS",
                   help="with --corpus: keep repeating each step past --repeat until its runs add "
                   "up to this much time, at most 200 runs (default 0.05: small files timed warm)")
    p.add_argument("--batch", type=int, default=0, metavar="N",
                   help="also convert a generated tree of N files with `gamemesh batch` at "
                   "--jobs 1 and 2 and print files/s and MB/s (N >= 1000 for the issue's figure)")
    p.add_argument("--corpus", metavar="DIR", action="append",
                   help="time the real files under DIR (repeatable) instead of generated ones: "
                   "per-file median and totals of read_native, load and load -> GLB")
    p.add_argument("--peer", metavar="FILE",
                   help="with --corpus: another parser's per-file times (JSON lines with `file` "
                   "and `parse_s`, as oracle_papa.py prints) to compare against")
    p.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                   help="wall (elapsed) or cpu (this process's CPU time: far less inflated by "
                   "other work on a shared machine; a peer comparison stays on wall time)")
    p.add_argument("--generated", action="store_true",
                   help="with --corpus: also time the generated files (one run for every figure)")
    p.add_argument("--markdown", action="store_true",
                   help="print the tables the README and docs quote, with the machine and load")
    p.add_argument("--startup", action="store_true",
                   help="time the command's start-up instead (process CPU of --version, --help, "
                   "info and a small convert against `python -c 'import numpy'`)")
    p.add_argument("--json", action="store_true")
    return p


def _corpus_main(args: argparse.Namespace) -> None:
    from pathlib import Path

    from . import benchcorpus as bc

    timings = []
    for root in args.corpus:
        timings += bc.time_corpus(Path(root), args.repeat, args.clock,
                                  min_time=args.min_time)
    rows = bc.group_rows(timings)
    peers = bc.peer_rows(timings, bc.read_peer(Path(args.peer))) if args.peer else []
    small = bc.small_rows(timings)
    failed = [{"file": str(t.path), "error": t.error} for t in timings if t.error]
    if args.json:
        json.dump({"machine": bc.machine(), "groups": rows, "peer": peers, "small": small,
                   "failed": failed},
                  sys.stdout, indent=2)
        print()
    elif args.markdown:
        print(f"Corpus {', '.join(args.corpus)}, per file and step the best of at least "
              f"{args.repeat} runs and of as many as fit in {args.min_time * 1000:g} ms (at most "
              f"{bc.MAX_RUNS}), {args.clock} time (the peer table: wall time on both sides; the "
              "peer's own figure is one run per file); "
              f"{bc.machine()}\n")
        print(bc.markdown(rows, peers, small))
    else:
        print(bc.text(rows, peers, small))
    for f in failed if not args.json else []:
        print(f"refused: {f['file']}: {f['error']}", file=sys.stderr)


def _startup_main(args: argparse.Namespace) -> int:
    from . import benchstartup as bs
    from .benchcorpus import machine

    rows = bs.startup_rows(args.repeat)
    if args.json:
        json.dump({"machine": machine(), "startup": rows}, sys.stdout, indent=2)
        print()
    elif args.markdown:
        print(f"Start-up, process CPU time (user + system), best of {args.repeat} fresh "
              f"processes; {machine()}\n")
        print(bs.markdown(rows))
    else:
        print(bs.text(rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    allocator.tune()  # measure what the command line does
    if args.startup:
        return _startup_main(args)
    if args.corpus:
        _corpus_main(args)
        if not args.generated:
            return 0
        print()
    sizes = args.size or [20.0]
    rows: list[dict[str, Any]] = []
    for size in sizes:
        table = []
        for spec in formats():
            if spec.make_sample is None or (args.format and spec.name not in args.format):
                continue
            table.append(bench_format(spec, int(size * 1e6), args.repeat, args.clock))
            if not args.json and not args.markdown:
                print(_row_text(table[-1]), flush=True)
        if args.markdown and not args.json:
            from .benchcorpus import machine

            print(f"Generated files of about {size:g} MB, best of {args.repeat}, {args.clock} "
                  f"time; {machine()}\n")
            print(_markdown(table) + "\n", flush=True)
        rows += table
    batch_rows: list[dict[str, Any]] = []
    if args.batch:
        from .batch.bench import bench as bench_batch

        batch_rows = bench_batch(args.batch, [1, 2])
        if args.markdown and not args.json:
            print(f"`gamemesh batch` over the generated tree ({batch_rows[0]['files']} files, "
                  f"{batch_rows[0]['input_MB']} MB) to GLB\n\n| --jobs | seconds | files/s | "
                  "MB/s |\n|---|---|---|---|")
            for b in batch_rows:
                print(f"| {b['jobs']} | {b['seconds']} | {b['files_per_s']} | {b['MB_per_s']} |")
        elif not args.json:
            for b in batch_rows:
                print(f"batch       {b['files']} files ({b['input_MB']} MB), --jobs {b['jobs']}: "
                      f"{b['files_per_s']} files/s, {b['MB_per_s']} MB/s "
                      f"({b['converted']} conversions, {b['errors']} expected errors)",
                      flush=True)
    if args.json:
        json.dump({"formats": rows, "batch": batch_rows} if args.batch else rows, sys.stdout,
                  indent=2)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
