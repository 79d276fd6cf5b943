"""The fuzz targets in the suite: every kept crash input replayed through the whole path (read,
scene, validation, GLB), a quick mutation run per format, and the campaign command itself.

``GAMEMESH_FUZZ_COUNT`` sets the mutations per format (default 200, so CI stays fast); a real
campaign is ``python -m tests.fuzz.run FORMAT --runs 1000000`` (docs/fuzzing.md).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.targets import FORMATS, ROOT, crash_files, run_one, seeds
from gamemesh.errors import FormatError
from helpers import mutations

COUNT = int(os.environ.get("GAMEMESH_FUZZ_COUNT", "200"))

ATHERIS_MISSING = ("atheris is not installed (the fuzz extra: pip install -e '.[fuzz]'; "
                   "Linux wheels only)")


def _ends_cleanly(fmt: str, data: bytes, label: str) -> None:
    t0 = time.process_time()  # CPU time: a loaded machine must not fail a quick parse
    try:
        run_one(fmt, data)
    except FormatError:
        pass
    except Exception as e:  # the failure is the point of the test
        msg = f"{fmt} {label}: {type(e).__name__}: {e}"
        raise AssertionError(msg) from e
    dt = time.process_time() - t0
    assert dt < 2.0, f"{fmt} {label}: took {dt:.2f} s of CPU"


@pytest.mark.parametrize("fmt", FORMATS)
def test_replay_crashes(fmt: str) -> None:
    """Every input that once broke a reader ends cleanly now. An empty folder fails: a replay
    of nothing proves nothing."""
    files = crash_files(fmt)
    assert files, f"tests/crashes/{fmt}/ holds no regression input"
    for f in files:
        _ends_cleanly(fmt, f.read_bytes(), f"crash input {f.name}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutations(fmt: str) -> None:
    """GAMEMESH_FUZZ_COUNT seeded mutations of the format's seeds: success or FormatError
    only, each under 2 s, and peak memory grows by less than 1 GiB."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pool = seeds(fmt)
    assert pool, f"no seeds for {fmt}"
    for k, s in enumerate(pool):
        _ends_cleanly(fmt, s, f"seed {k}")
    per = max(1, COUNT // len(pool))
    for k, s in enumerate(pool):
        for j, m in enumerate(mutations(s, per, seed=k)):
            _ends_cleanly(fmt, m, f"mutation {j} of seed {k}")
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown < 1024, f"peak memory grew by {grown:.0f} MiB"


def test_campaign_command_runs_and_reports(tmp_path: Path) -> None:
    """The documented command: a short coverage-guided run writes its figures."""
    pytest.importorskip("atheris", reason=ATHERIS_MISSING)
    stats = tmp_path / "stats.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    r = subprocess.run([sys.executable, "-m", "tests.fuzz.run", "ptx", "--runs", "100",
                        "--workdir", str(tmp_path), "--stats", str(stats)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    figures = json.loads(stats.read_text())
    assert figures["format"] == "ptx" and figures["inputs"] >= 80
    assert figures["crashes"] == 0 and figures["peak_rss_mb"] > 0
    assert figures["inputs"] == figures["format_errors"] + figures["ok"]


_LEAK_PROBE = '''
import sys
import atheris
sys.path.insert(0, sys.argv[1])
with atheris.instrument_imports(include=["probe_mod"]):
    import probe_mod
import numpy as np
if sys.argv[2] == "plugged":
    from tests.fuzz.run import _plug_compare_leak
    _plug_compare_leak()
a = np.arange(8.0)
for _ in range(1000):
    probe_mod.f(a)
before = sys.getallocatedblocks()
for _ in range(20000):
    probe_mod.f(a)
print(sys.getallocatedblocks() - before)
'''


@pytest.mark.parametrize("mode", ["bare", "plugged"])
def test_compare_hook_leak(tmp_path: Path, mode: str) -> None:
    """atheris's comparison hook keeps every NumPy comparison result alive (the campaigns' RSS
    grew by ~6 KB per pmf input); the campaign's wrapper gives the reference back. The bare run
    shows the leak is real, so the plugged run's flat figure means something."""
    pytest.importorskip("atheris", reason=ATHERIS_MISSING)
    (tmp_path / "probe_mod.py").write_text(
        "import numpy as np\n\ndef f(a):\n    return bool(np.any(a == 0))\n")
    r = subprocess.run([sys.executable, "-c", _LEAK_PROBE, str(tmp_path), mode], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    grown = int(r.stdout.split()[-1])
    if mode == "bare":
        assert grown >= 20000  # one array per comparison
    else:
        assert grown < 200
