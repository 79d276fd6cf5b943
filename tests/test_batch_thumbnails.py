"""``gamemesh batch --thumbnails``: a picture beside each output and a contact sheet per folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image as PILImage

import gamemesh
from gamemesh.cli import main
from gamemesh.sample import sample_scene


def test_batch_thumbnails_and_contact_sheets(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    gamemesh.save(sample_scene(), src / "a" / "one.glb")
    gamemesh.save(sample_scene(bones=2), src / "a" / "two.glb")
    gamemesh.save(sample_scene(), src / "b" / "three.pmf")
    assert main(["batch", str(src), str(dst), "--jobs", "1", "--quiet", "--thumbnails"]) == 0
    thumbs = sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*.thumb.png"))
    assert thumbs == ["a/one.glb.thumb.png", "a/two.glb.thumb.png", "b/three.glb.thumb.png"]
    for t in dst.rglob("*.thumb.png"):
        px = np.asarray(PILImage.open(t).convert("RGBA"))
        assert px.shape == (256, 256, 4)
        assert len(np.unique(px.reshape(-1, 4), axis=0)) > 20  # a picture, not a blank
    for folder in ("a", "b"):
        assert (dst / folder / "contact_sheet.png").is_file()
        html = (dst / folder / "contact_sheet.html").read_text()
        assert ".thumb.png" in html
    assert "two.glb.thumb.png" in (dst / "a" / "contact_sheet.html").read_text()


def test_batch_thumbnails_index_the_whole_tree(tmp_path: Path) -> None:
    """One unit per folder (Planetary Annihilation's layout) still gets one sheet to browse."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    for name in ("tank", "bot", "air"):
        gamemesh.save(sample_scene(), src / "units" / name / f"{name}.glb")
    assert main(["batch", str(src), str(dst), "--jobs", "1", "--quiet", "--thumbnails"]) == 0
    index = (dst / "contact_sheet_index.html").read_text()
    for name in ("air", "bot", "tank"):
        assert f'src="units/{name}/{name}.glb.thumb.png"' in index
        assert f"<figcaption>units/{name}/{name}.glb</figcaption>" in index
    sheet = np.asarray(PILImage.open(dst / "contact_sheet_index.png").convert("RGBA"))
    assert sheet.shape[1] > 2 * 128  # two columns of 128-pixel cells at least
