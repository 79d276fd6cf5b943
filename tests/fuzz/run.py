"""Run a coverage-guided fuzz campaign on one format (atheris, libFuzzer underneath).

    python -m tests.fuzz.run papa --runs 1000000        # a count of inputs
    python -m tests.fuzz.run gltf --seconds 600         # or a time
    python -m tests.fuzz.run all --runs 1000000         # every format, one after the other

Every input goes through :func:`tests.fuzz.targets.run_one`. An exception other than FormatError,
or an input slower than ``--slow`` seconds, is saved to ``tests/crashes/<format>/`` (named by its
SHA-1) and the campaign goes on, so one run gives the whole picture; the suite replays that folder
forever after. Figures (inputs, crashes, slowest input, peak RSS and the input that raised it)
are written as JSON to ``--stats`` every few seconds and at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from .targets import CRASHES, FORMATS, seeds


def _plug_compare_leak() -> None:
    """Wrap atheris's comparison hook so a NumPy comparison does not leak its result.

    atheris 3.0 replaces each ``a == b`` (and ``<``, ``>=`` ...) in instrumented code with a call
    to ``atheris._trace_cmp``, which hands back the comparison's result with one reference too
    many. For ``True``/``False`` that is harmless; for a NumPy comparison it keeps the result
    array alive forever, one per comparison run, so the campaign's RSS climbs with every input
    (pmf: ~60 arrays, ~6 KB per input). ``fuzz_checks.test_compare_hook_leak`` measures it. The
    hook is looked up on the module at each comparison, and ``Fuzz()`` installs libFuzzer's
    version when it starts, so this runs on the first input.
    """
    import ctypes

    import atheris
    import numpy as np

    native = atheris._trace_cmp
    if getattr(native, "_gamemesh_plugged", False):
        return
    decref = ctypes.pythonapi.Py_DecRef
    decref.argtypes = [ctypes.py_object]

    def trace_cmp(a: Any, b: Any, op: int, counter: int, is_const: bool) -> Any:
        r = native(a, b, op, counter, is_const)
        # A fresh array held by r and getrefcount's argument has 2 references: a third is
        # the leaked one.
        if type(r) is np.ndarray and sys.getrefcount(r) > 2:
            decref(r)
        return r

    trace_cmp._gamemesh_plugged = True  # type: ignore[attr-defined]
    atheris._trace_cmp = trace_cmp


class Campaign:
    """The figures of one campaign, and the callback libFuzzer calls with each input."""

    def __init__(self, fmt: str, stats_path: Path | None, slow: float, runs: int) -> None:
        self.fmt = fmt
        self.runs = runs
        self.stats_path = stats_path
        self.slow = slow
        self.start = time.time()
        self.last_dump = 0.0
        self.signatures: dict[str, int] = {}
        self.base_rss = 0.0
        self.s: dict[str, Any] = {
            "format": fmt, "inputs": 0, "ok": 0, "distinct_crashes": 0, "format_errors": 0,
            "crashes": 0, "slow_inputs": 0, "over_memory": 0, "base_rss_mb": 0.0,
            "crash_kinds": {}, "slowest_s": 0.0, "slowest_len": 0, "slowest_sha1": "",
            "peak_rss_mb": 0.0, "peak_rss_input_len": 0, "max_input_len": 0, "seconds": 0.0}

    def keep(self, data: bytes, why: str, signature: str) -> None:
        # A few inputs per distinct failure (exception type and the line that raised it): a
        # campaign can hit one bug thousands of times, and the folder is kept forever.
        seen = self.signatures.get(signature, 0)
        self.signatures[signature] = seen + 1
        if seen >= 3:
            return
        d = CRASHES / self.fmt
        d.mkdir(parents=True, exist_ok=True)
        sha = hashlib.sha1(data).hexdigest()[:16]
        (d / f"fuzz-{sha}.bin").write_bytes(data)
        print(f"[fuzz {self.fmt}] kept fuzz-{sha}.bin: {why}", file=sys.stderr, flush=True)

    def one(self, data: bytes) -> None:
        from gamemesh.errors import FormatError

        from .targets import run_one

        s = self.s
        if not self.base_rss:
            _plug_compare_leak()
            self.base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            s["base_rss_mb"] = round(self.base_rss, 1)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            run_one(self.fmt, data)
            s["ok"] += 1
        except FormatError:
            s["format_errors"] += 1
        except Exception as e:
            s["crashes"] += 1
            kind = f"{type(e).__name__}"
            s["crash_kinds"][kind] = s["crash_kinds"].get(kind, 0) + 1
            tb = traceback.extract_tb(e.__traceback__)[-1]
            where = f"{Path(tb.filename).name}:{tb.lineno}"
            self.keep(data, f"{kind}: {str(e)[:200]} at {where}", f"{kind} {where}")
        # CPU time decides what is slow: on a shared machine the wall clock also counts the
        # other processes (the wall-clock slowest is kept in the figures too).
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        s["slowest_wall_s"] = max(s.get("slowest_wall_s", 0.0), round(dt, 4))
        s["inputs"] += 1
        s["max_input_len"] = max(s["max_input_len"], len(data))
        if cpu > s["slowest_s"]:
            s.update(slowest_s=round(cpu, 4), slowest_len=len(data),
                     slowest_sha1=hashlib.sha1(data).hexdigest()[:16])
            if self.stats_path is not None:  # kept beside the figures, to time it again
                self.stats_path.with_name("slowest.bin").write_bytes(data)
        if cpu > self.slow:
            s["slow_inputs"] += 1
            self.keep(data, f"took {cpu:.2f} s of CPU", "slow")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if rss > s["peak_rss_mb"]:
            s.update(peak_rss_mb=round(rss, 1), peak_rss_input_len=len(data))
            # The bound: the process as it started, plus 10x the input, plus 200 MB.
            if self.base_rss and rss > self.base_rss + 200 + 10 * len(data) / 2**20:
                s["over_memory"] += 1
                self.keep(data, f"peak RSS {rss:.0f} MB", "memory")
        # libFuzzer ends the process with exit(), which runs no Python atexit handler: the
        # figures are written every few seconds and on each of the last inputs of a count.
        if time.time() - self.last_dump > 2 or (self.runs and s["inputs"] >= self.runs - 64):
            self.dump()

    def dump(self) -> None:
        self.last_dump = time.time()
        self.s["seconds"] = round(self.last_dump - self.start, 1)
        self.s["rss_now_mb"] = round(_rss_now_mb(), 1)
        self.s["py_blocks"] = sys.getallocatedblocks()  # flat unless Python objects leak
        self.s["distinct_crashes"] = len([k for k in self.signatures
                                          if k not in ("slow", "memory")])
        if self.stats_path is not None:
            tmp = self.stats_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.s, indent=1))
            tmp.replace(self.stats_path)


def _rss_now_mb() -> float:
    """The process's resident set now (peak RSS only tells the high-water mark)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # not Linux: the peak is the best there is
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fuzz_one_format(fmt: str, args: argparse.Namespace) -> None:
    """Runs in its own process: atheris owns the process and exits it at the end."""
    import atheris

    with atheris.instrument_imports(include=["gamemesh"]):
        import gamemesh.formats  # noqa: F401
        from gamemesh import registry
        registry.formats()  # import every format package under instrumentation

    work = Path(args.workdir) / fmt
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for s in seeds(fmt):
        (corpus / f"seed-{hashlib.sha1(s).hexdigest()[:16]}").write_bytes(s)
    stats = Path(args.stats) if args.stats else work / "stats.json"
    camp = Campaign(fmt, stats, args.slow, args.runs)
    argv = [sys.argv[0], str(corpus), f"-artifact_prefix={work}/", f"-max_len={args.max_len}",
            f"-timeout={args.timeout}", f"-rss_limit_mb={args.rss_limit_mb}",
            "-print_final_stats=1", "-reload=0", "-len_control=0"]
    if args.runs:
        argv.append(f"-runs={args.runs}")
    if args.seconds:
        argv.append(f"-max_total_time={args.seconds}")
    atheris.Setup(argv, camp.one)
    try:
        atheris.Fuzz()
    finally:
        camp.dump()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=[*FORMATS, "all"])
    p.add_argument("--runs", type=int, default=0, help="inputs to run (0: no limit)")
    p.add_argument("--seconds", type=int, default=0, help="time limit (0: no limit)")
    p.add_argument("--max-len", type=int, default=64 * 1024, help="largest input, bytes")
    p.add_argument("--slow", type=float, default=2.0, help="keep inputs slower than this")
    p.add_argument("--timeout", type=int, default=30, help="libFuzzer's per-input kill time")
    p.add_argument("--rss-limit-mb", type=int, default=2048)
    p.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "gamemesh-fuzz"),
                   help="corpus and artifacts (default: a folder in the temp dir)")
    p.add_argument("--stats", help="JSON figures file (default: WORKDIR/FORMAT/stats.json)")
    args = p.parse_args(argv)
    if args.format != "all":
        fuzz_one_format(args.format, args)
        return 0
    # One process per format: libFuzzer exits the process when a campaign ends.
    rc = 0
    for fmt in FORMATS:
        cmd = [sys.executable, "-m", "tests.fuzz.run", fmt, "--runs", str(args.runs),
               "--seconds", str(args.seconds), "--max-len", str(args.max_len),
               "--slow", str(args.slow), "--timeout", str(args.timeout),
               "--rss-limit-mb", str(args.rss_limit_mb), "--workdir", args.workdir]
        rc |= subprocess.call(cmd, cwd=Path(__file__).resolve().parent.parent.parent,
                              env=os.environ)
    return rc


if __name__ == "__main__":
    sys.exit(main())
