"""Shared by the viewer and thumbnail tests (no tests here): sample files of every format that
can export, image comparison with a tolerance, and stored references.

References live in tests/fixtures/viewer/. Set GAMEMESH_UPDATE_REFERENCES=1 to (re)write them
from the current output; a format with no stored reference yet is compared with the glTF
sample's picture by silhouette only, so a newly landed format is checked from its first run.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

import gamemesh
from gamemesh.registry import by_name, formats
from gamemesh.sample import sample_scene

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "viewer"
UPDATE = os.environ.get("GAMEMESH_UPDATE_REFERENCES") == "1"

RGBA = npt.NDArray[np.uint8]


def viewable_formats() -> list[str]:
    """Formats a scene can be saved to and loaded back from (glTF first)."""
    return [s.name for s in formats() if s.can_export and s.can_import]


@dataclass
class Sample:
    fmt: str
    path: Path | None
    reason: str = ""


def make_sample(fmt: str, folder: Path) -> Sample:
    """gamemesh.sample.sample_scene() saved as ``fmt`` in its own folder (siblings included)."""
    spec = by_name(fmt)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"sample{spec.extensions[0]}"
    try:
        gamemesh.save(sample_scene(), path, format=fmt)
        gamemesh.load(path, format=fmt)
    except (gamemesh.FormatError, ValueError) as e:
        return Sample(fmt, None, f"{fmt} cannot hold the sample scene: {e}")
    return Sample(fmt, path)


def read_png(path: Path) -> RGBA:
    with PILImage.open(path) as im:
        return np.asarray(im.convert("RGBA"), dtype=np.uint8)


def write_png(path: Path, img: RGBA) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    PILImage.fromarray(img, "RGBA").save(path, optimize=True)


@dataclass
class Diff:
    mean: float  # mean absolute difference per channel, 0..255
    outliers: float  # fraction of pixels off by more than OUTLIER in some channel

    OUTLIER = 48

    def __str__(self) -> str:
        return f"mean abs diff {self.mean:.2f}/255, {self.outliers:.2%} pixels off by >48"


def diff(actual: RGBA, expected: RGBA) -> Diff:
    assert actual.shape == expected.shape, f"size {actual.shape} != reference {expected.shape}"
    d = np.abs(actual.astype(np.int16) - expected.astype(np.int16))
    return Diff(float(d.mean()), float((d.max(axis=2) > Diff.OUTLIER).mean()))


def silhouette_iou(a: npt.NDArray[np.bool_], b: npt.NDArray[np.bool_]) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 1.0


def check_against_reference(actual: RGBA, name: str, fallback: str,
                            mask: Mask, mean_tol: float, outlier_tol: float,
                            min_iou: float = 0.8) -> str:
    """Compare with tests/fixtures/viewer/<name>.png; without one, the silhouette against
    <fallback>.png. Returns what was compared (for the test's message)."""
    ref = FIXTURES / f"{name}.png"
    if UPDATE:
        write_png(ref, actual)
        return f"wrote {ref}"
    if ref.exists():
        d = diff(actual, read_png(ref))
        assert d.mean <= mean_tol and d.outliers <= outlier_tol, f"{name}: {d}"
        return f"{name}: {d}"
    base = read_png(FIXTURES / f"{fallback}.png")
    iou = silhouette_iou(mask(actual), mask(base))
    assert iou >= min_iou, (f"{name}: no stored reference, and its silhouette overlaps "
                            f"{fallback}'s by only {iou:.2f}")
    return f"{name}: no reference yet; silhouette IoU with {fallback} {iou:.2f}"


class Mask:
    """Which pixels show the model: alpha for thumbnails, not-background for screenshots."""

    def __init__(self, background: tuple[int, int, int] | None = None) -> None:
        self.background = background

    def __call__(self, img: RGBA) -> npt.NDArray[np.bool_]:
        if self.background is None:
            return np.asarray(img[:, :, 3] > 0)
        bg = np.asarray(self.background, dtype=np.int16)
        return np.asarray(np.abs(img[:, :, :3].astype(np.int16) - bg).max(axis=2) > 12)


def http_get(url: str, timeout: float = 20) -> tuple[int, bytes, str]:
    """Status, body and content type of a GET (an HTTP error is an answer, not an exception)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Content-Type", "")
