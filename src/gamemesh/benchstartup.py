"""Start-up: ``python -m gamemesh.bench --startup [--markdown]``.

The process CPU time (user + system, the child's own ``rusage``) of ``gamemesh --version``,
``--help``, ``info`` and ``convert`` of a small generated Papa unit, each the best of N fresh
processes, against ``python -c "import numpy"`` on the same machine: the yardstick of issue 31
(``--version`` below numpy's import, a small convert below three times it). CPU time, not wall
time, so other work on a shared machine inflates it little.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["markdown", "startup_rows", "text"]

# Goals as multiples of numpy's import (None: measured, no goal).
_GOALS: dict[str, float | None] = {"gamemesh --version": 1.0, "gamemesh --help": None,
                                   "gamemesh info": None, "gamemesh convert": 3.0}


def _cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """The CPU time one run of ``argv`` takes (its own rusage, not this process's)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        msg = f"{' '.join(argv)} exited {proc.returncode}"
        raise RuntimeError(msg)
    return float(usage.ru_utime + usage.ru_stime)


def startup_rows(repeat: int = 5) -> list[dict[str, Any]]:
    """One row per command: best CPU seconds of ``repeat`` runs and the ratio to numpy's
    import."""
    from .api import save
    from .sample import sample_scene

    env = dict(os.environ)
    src_root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src_root, env.get("PYTHONPATH")) if p)
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="gamemesh-startup-") as tmp:
        unit = Path(tmp) / "unit.papa"
        save(sample_scene(), unit)
        commands = {
            'python -c "import numpy"': [py, "-c", "import numpy"],
            "gamemesh --version": [py, "-m", "gamemesh", "--version"],
            "gamemesh --help": [py, "-m", "gamemesh", "--help"],
            "gamemesh info": [py, "-m", "gamemesh", "info", str(unit)],
            "gamemesh convert": [py, "-m", "gamemesh", "convert", str(unit),
                                 str(Path(tmp) / "out.glb")],
        }
        best = {name: min(_cpu_seconds(argv, env) for _ in range(repeat))
                for name, argv in commands.items()}
        size = unit.stat().st_size
    numpy_s = best['python -c "import numpy"']
    return [{"command": name, "cpu_s": round(s, 3), "x_numpy": round(s / numpy_s, 2),
             "goal_x_numpy": _GOALS.get(name), "input_bytes": size if "info" in name or
             "convert" in name else None} for name, s in best.items()]


def text(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        goal = r["goal_x_numpy"]
        met = goal is not None and r["x_numpy"] < goal
        verdict = "" if goal is None else f" (goal < {goal:g}x: {'met' if met else 'NOT met'})"
        lines.append(f"start-up  {r['command']:<28} {r['cpu_s']:.3f} s CPU  "
                     f"{r['x_numpy']:.2f}x numpy's import{verdict}")
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| command | CPU s (best) | x `import numpy` | goal |", "|---|---|---|---|"]
    for r in rows:
        goal = "" if r["goal_x_numpy"] is None else f"< {r['goal_x_numpy']:g}x"
        lines.append(f"| `{r['command']}` | {r['cpu_s']:.3f} | {r['x_numpy']:.2f} | {goal} |")
    return "\n".join(lines)
