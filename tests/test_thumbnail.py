"""Thumbnails without a browser: the numpy renderer against stored pictures, faces the right
way round (a flat-shaded closed model is not dark), posing by clip and time, contact sheets,
and the `gamemesh thumbnail` verb."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.cli import main
from gamemesh.registry import by_name
from gamemesh.sample import sample_scene
from gamemesh.scene import Channel, Mesh, Node, Primitive, Scene
from gamemesh.scene.math import transform_points, vertex_normals, world_matrices
from gamemesh.viewer import contact_sheet, render_thumbnail
from gamemesh.viewer.pose import pose_scene, sample_channel
from viewer_support import (
    Mask,
    check_against_reference,
    make_sample,
    read_png,
    viewable_formats,
)

SIZE = 128


def _luminance(img: npt.NDArray[np.uint8]) -> float:
    covered = img[:, :, 3] > 0
    rgb = img[:, :, :3][covered].astype(np.float64)
    return float((rgb @ np.array([0.2126, 0.7152, 0.0722])).mean())


def _lit_ratio(scene: Scene) -> float:
    """Flat-shaded brightness over unlit brightness: near 1 when the faces the camera sees
    face it, near the ambient level when they face away."""
    return _luminance(render_thumbnail(scene, SIZE, shading="flat")) / _luminance(
        render_thumbnail(scene, SIZE, shading="unlit"))


def _flip_winding(scene: Scene) -> None:
    for mesh in scene.meshes:
        for p in mesh.primitives:
            p.indices = p.triangles()[:, ::-1].reshape(-1).copy()
            if p.normals is not None:
                p.normals = -p.normals


# -- the sample model ----------------------------------------------------------------------

def test_sample_thumbnail_matches_reference() -> None:
    img = render_thumbnail(sample_scene(), SIZE)
    assert img.shape == (SIZE, SIZE, 4) and img.dtype == np.uint8
    assert img[0, 0, 3] == 0 and img[SIZE // 2, SIZE // 2, 3] == 255  # clear around, model in
    print(check_against_reference(img, "thumb_gltf", "thumb_gltf", Mask(), 1.0, 0.002))


def test_posed_thumbnail_matches_reference() -> None:
    rest = render_thumbnail(sample_scene(), SIZE)
    bent = render_thumbnail(sample_scene(), SIZE, clip="bend", time=0.25)
    assert np.abs(bent.astype(int) - rest.astype(int)).mean() > 5  # the pose shows
    print(check_against_reference(bent, "thumb_gltf_bend", "thumb_gltf_bend", Mask(), 1.0,
                                  0.002))


def test_flat_shaded_closed_model_is_not_dark() -> None:
    scene = sample_scene()
    ratio = _lit_ratio(scene)
    assert ratio > 0.72, f"flat-shaded sample is dark: {ratio:.2f} of its unlit brightness"
    # The same model with every face turned inside out is dark: the check can fail.
    _flip_winding(scene)
    flipped = _lit_ratio(scene)
    assert flipped < 0.6, f"inside-out sample is lit: {flipped:.2f}"


def test_empty_scene_is_transparent() -> None:
    img = render_thumbnail(Scene(), 32)
    assert img.shape == (32, 32, 4) and not img.any()


def test_background_is_composited() -> None:
    img = render_thumbnail(sample_scene(), 32, background=(10, 20, 30, 255))
    assert tuple(img[0, 0]) == (10, 20, 30, 255)
    assert (img[:, :, 3] == 255).all()


def test_unknown_clip_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no animation clip 'walk' \(clips: 'bend', 'twist'\)"):
        render_thumbnail(sample_scene(), 32, clip="walk")


def test_thumbnail_is_fast_enough() -> None:
    """A 50k-triangle mesh at 512 px: batches of candidate pixels, no loop per pixel."""
    n = 160
    y, x = np.mgrid[0:n, 0:n] / (n - 1)
    pos = np.stack([x.ravel() * 2 - 1, np.sin(x.ravel() * 6) * 0.2, y.ravel() * 2 - 1],
                   axis=1).astype(np.float32)
    i = np.arange(n * n).reshape(n, n)
    a, b, c, d = i[:-1, :-1], i[:-1, 1:], i[1:, :-1], i[1:, 1:]
    tris = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3),
                           np.stack([b, c, d], -1).reshape(-1, 3)]).astype(np.uint32)
    scene = Scene()
    mesh = scene.add_mesh(Mesh(primitives=[Primitive(
        positions=pos, normals=vertex_normals(pos, tris), indices=tris.reshape(-1))]))
    scene.add_node(Node(mesh=mesh))
    t0 = time.process_time()
    img = render_thumbnail(scene, 512)
    dt = time.process_time() - t0
    assert 0.1 < (img[:, :, 3] > 0).mean() < 0.6
    assert dt < 10, f"{len(tris)} triangles took {dt:.1f}s"


# -- posing ----------------------------------------------------------------------------------

def test_sample_channel_interpolates() -> None:
    times = np.array([0.0, 1.0, 2.0], dtype=np.float32)
    ch = Channel(0, "translation", times,
                 np.array([[0, 0, 0], [2, 0, 0], [2, 4, 0]], dtype=np.float32))
    assert np.allclose(sample_channel(ch, 0.5), [1, 0, 0])
    assert np.allclose(sample_channel(ch, 1.5), [2, 2, 0])
    assert np.allclose(sample_channel(ch, -3), [0, 0, 0])
    assert np.allclose(sample_channel(ch, 9), [2, 4, 0])
    ch.interpolation = "STEP"
    assert np.allclose(sample_channel(ch, 1.9), [2, 0, 0])
    half = np.sqrt(0.5)
    rot = Channel(0, "rotation", times[:2],
                  np.array([[0, 0, 0, 1], [0, half, 0, half]], dtype=np.float32))
    q = sample_channel(rot, 0.5)
    assert np.isclose(np.linalg.norm(q), 1.0)
    assert np.allclose(q, [0, np.sin(np.pi / 8), 0, np.cos(np.pi / 8)], atol=1e-6)


def test_pose_matches_the_scene_math_of_the_same_pose() -> None:
    """Skinning at t=0.25 of 'bend' equals moving each rigidly weighted vertex by its bone's
    world matrix (computed by the foundation's world_matrices) times its inverse bind."""
    scene = sample_scene()
    posed = pose_scene(scene, "bend", 0.25)
    assert len(posed) == 1
    anim = scene.animations[0]
    for ch in anim.channels:  # the same pose, written into the nodes
        v = sample_channel(ch, 0.25)
        scene.nodes[ch.node].rotation = (float(v[0]), float(v[1]), float(v[2]), float(v[3]))
    world = world_matrices(scene)
    prim = scene.meshes[0].primitives[0]
    skin = scene.skins[0]
    assert prim.weights is not None and prim.joints is not None
    rigid = np.flatnonzero(prim.weights[:, 0] == 1.0)
    assert len(rigid) >= 8
    assert skin.inverse_bind_matrices is not None
    for v in rigid:
        j = int(prim.joints[v, 0])
        m = world[skin.joints[j]] @ skin.inverse_bind_matrices[j]
        want = transform_points(m, prim.positions[v:v + 1])[0]
        assert np.allclose(posed[0].positions[v], want, atol=1e-5)
    # the top moved sideways much more than the bottom (the bend grows along the chain)
    moved = np.linalg.norm(posed[0].positions - prim.positions, axis=1)
    assert moved[-1] > 0.3 and moved[-1] > 5 * moved[0]


# -- every format ------------------------------------------------------------------------------

FORMATS = viewable_formats()


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, gamemesh.Scene | str]:
    root = tmp_path_factory.mktemp("thumbs")
    out: dict[str, gamemesh.Scene | str] = {}
    for fmt in FORMATS:
        s = make_sample(fmt, root / fmt)
        out[fmt] = gamemesh.load(s.path, fmt) if s.path is not None else s.reason
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_sample_faces_point_outwards(samples: dict[str, Scene | str], fmt: str) -> None:
    scene = samples[fmt]
    if isinstance(scene, str):
        pytest.skip(scene)
    ratio = _lit_ratio(scene)
    assert ratio > 0.72, f"{fmt}: flat-shaded sample is dark ({ratio:.2f} of unlit)"


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_sample_thumbnail_matches_reference(samples: dict[str, Scene | str],
                                                   fmt: str) -> None:
    scene = samples[fmt]
    if isinstance(scene, str):
        pytest.skip(scene)
    img = render_thumbnail(scene, SIZE)
    print(check_against_reference(img, f"thumb_{fmt}", "thumb_gltf", Mask(), 1.5, 0.01))


# -- contact sheets and the CLI ------------------------------------------------------------------

def test_contact_sheet_png_and_html(tmp_path: Path) -> None:
    thumbs = []
    for k, color in enumerate([(255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255)]):
        p = tmp_path / "thumbs" / f"t{k}.png"
        p.parent.mkdir(exist_ok=True)
        PILImage.new("RGBA", (64, 64), color).save(p)
        thumbs.append((p, f"model <{k}> & co"))
    thumbs.append((tmp_path / "thumbs" / "missing.png", "missing one"))
    out_png, out_html = tmp_path / "sheet" / "contact.png", tmp_path / "sheet" / "index.html"
    contact_sheet(thumbs, out_png, out_html, columns=2, cell=64)
    sheet = read_png(out_png)
    assert sheet.shape == (8 + 2 * (64 + 22 + 8), 8 + 2 * (64 + 8), 4)
    assert tuple(sheet[8 + 32, 8 + 32]) == (255, 0, 0, 255)  # first cell's middle
    assert tuple(sheet[8 + 32, 8 + 64 + 8 + 32]) == (0, 255, 0, 255)
    assert tuple(sheet[8 + 64 + 22 + 8 + 32, 8 + 32]) == (0, 0, 255, 255)
    page = out_html.read_text()
    assert page.count("<figure>") == 4
    assert '<img src="../thumbs/t0.png"' in page
    assert "model &lt;0&gt; &amp; co" in page
    assert 'href="contact.png"' in page


def test_thumbnail_cli(tmp_path: Path) -> None:
    src = tmp_path / "sample.glb"
    gamemesh.save(sample_scene(), src)
    out = tmp_path / "out" / "thumb.png"
    assert main(["thumbnail", str(src), str(out), "--size", "64", "--clip", "bend",
                 "--time", "0.25"]) == 0
    img = read_png(out)
    assert img.shape == (64, 64, 4) and img[32, 32, 3] == 255
    assert main(["thumbnail", str(src), str(tmp_path / "x.png"), "--clip", "walk"]) == 2
    assert not (tmp_path / "x.png").exists()
    assert main(["thumbnail", str(src), str(tmp_path / "y.png"), "--size", "0"]) == 2


def test_every_viewable_format_is_listed() -> None:
    assert "gltf" in FORMATS
    assert all(by_name(f).can_export for f in FORMATS)
