"""The assault_bot unit in three.js (the project's viewer in Chromium): it loads with its skin,
21 bones and 2 clips, a clip moves the bones, and the model stands upright (its silhouette is
not flattened as a Z-up model seen lying down would be)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import corpus_dir

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tests" / "js" / "view_check.mjs"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
BACKGROUND = np.array([0x30, 0x34, 0x3A])


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "node_modules/playwright-core is missing (run `npm ci`)"
    if not CHROMIUM.exists():
        return f"Chromium not found at {CHROMIUM}"
    return None


@pytest.fixture(scope="module")
def bot_in_browser(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    missing = _missing()
    if missing:
        pytest.skip(missing)
    from gamemesh.viewer.server import ViewerServer, prepare

    path = corpus_dir("papa") / "official_2014/pa/units/land_bots/assault_bot/assault_bot.papa"
    root = tmp_path_factory.mktemp("papa_view")
    shot = root / "bot.png"
    srv = ViewerServer(prepare(path, "papa")).start()
    try:
        jobs = [{"url": srv.url, "screenshot": str(shot), "clip": "run", "time": 0.0,
                 "play_ms": 400}]
        (root / "jobs.json").write_text(json.dumps(jobs))
        run = subprocess.run(["node", str(DRIVER), str(root / "jobs.json")], cwd=ROOT,
                             capture_output=True, text=True, timeout=180)
    finally:
        srv.stop()
    assert run.returncode == 0, run.stderr[-2000:]
    res: dict[str, Any] = json.loads(run.stdout)[0]
    res["shot"] = shot
    return res


def test_three_js_loads_the_unit_skinned_and_animated(bot_in_browser: dict[str, Any]) -> None:
    res = bot_in_browser
    assert not res.get("error"), res.get("logs")
    assert res["counts"]["meshes"] == 1
    assert res["counts"]["bones"] == 21
    assert res["counts"]["clips"] == 2
    assert res["played"] is True and res["pose_change"] > 1e-3
    assert res["textures_shown"] == 3


def test_three_js_shows_it_upright(bot_in_browser: dict[str, Any]) -> None:
    from PIL import Image as PILImage

    with PILImage.open(bot_in_browser["shot"]) as im:
        px = np.asarray(im.convert("RGB")).astype(int)
    fg = np.abs(px - BACKGROUND).sum(axis=2) > 30
    ys, xs = np.nonzero(fg)
    assert len(ys) > 500
    height, width = ys.max() - ys.min(), xs.max() - xs.min()
    # The bot is stocky (3.6 wide with its guns, 3.6 tall, 2.4 deep): upright it shows about
    # 0.85 as tall as wide; lying on its back (Z-up left unconverted) about 0.6.
    assert height > 0.75 * width, (height, width)
