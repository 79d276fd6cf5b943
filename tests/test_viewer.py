"""The web viewer: the server (loopback, exact routes, no traversal, Ctrl-C), and the page in
Debian's Chromium driven by playwright-core: every format that can export shows the sample
model with the counts `gamemesh info` reports, plays a clip, and looks like the stored
screenshot."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import gamemesh
from gamemesh import info as describe
from gamemesh.formats.gltf import write_glb
from gamemesh.registry import by_name
from gamemesh.sample import sample_scene
from gamemesh.viewer.flags import navmesh_nodes
from gamemesh.viewer.server import HOST, ViewerServer, prepare
from viewer_support import (
    FIXTURES,
    ROOT,
    Mask,
    Sample,
    check_against_reference,
    http_get,
    make_sample,
    read_png,
    viewable_formats,
)

DRIVER = ROOT / "tests" / "js" / "view_check.mjs"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
VENDOR = ROOT / "src" / "gamemesh" / "viewer" / "static" / "vendor"
BACKGROUND = (0x30, 0x34, 0x3A)  # the page's scene.background
SEEK = 0.25  # the moment of the clip the screenshots show


def _browser_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "node_modules/playwright-core is missing (run `npm ci` at the repo root)"
    if not CHROMIUM.exists():
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    return None


def _get(url: str) -> tuple[int, bytes, str]:
    return http_get(url, timeout=10)


@pytest.fixture(scope="module")
def sample_glb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("glb") / "sample.glb"
    p.write_bytes(write_glb(sample_scene()))
    return p


# -- server --------------------------------------------------------------------------------

def test_server_serves_the_model_and_its_assets_on_loopback(sample_glb: Path) -> None:
    model = prepare(sample_glb)
    with ViewerServer(model) as srv:
        assert srv.httpd.server_address[0] == HOST == "127.0.0.1"
        assert srv.port > 0
        status, body, ctype = _get(srv.url)
        assert status == 200 and b'<script type="importmap">' in body and "text/html" in ctype
        status, body, ctype = _get(srv.url + "model.glb")
        assert status == 200 and body[:4] == b"glTF" and ctype == "model/gltf-binary"
        assert body == model.glb
        status, body, _ = _get(srv.url + "static/vendor/three.module.js")
        assert status == 200 and b"three.core.js" in body
        status, body, _ = _get(srv.url + "static/vendor/LICENSE")
        assert status == 200 and b"MIT License" in body
        status, body, ctype = _get(srv.url + "textures/0.png")
        assert status == 200 and body[:8] == b"\x89PNG\r\n\x1a\n" and ctype == "image/png"
        status, body, _ = _get(srv.url + "api/info.json")
        info = json.loads(body)
    assert info["meshes"] == 1 and info["bones"] == 3 and info["format"] == "gltf"
    assert [a["name"] for a in info["animations"]] == ["bend", "twist"]
    assert info["viewer"]["textures"][0]["url"] == "textures/0.png"
    assert info["viewer"]["textures"][0]["width"] == 16


@pytest.mark.parametrize("path", [
    "/static/../server.py", "/static/%2e%2e/server.py", "/static/..%2fserver.py",
    "/static/vendor/../../server.py", "/../../../../etc/passwd", "/etc/passwd",
    "/static//etc/passwd", "/static/%2Fetc%2Fpasswd", "/textures/../model.glb",
    "/textures/1.png", "/static", "/api/", "/viewer.js", "/__init__.py",
])
def test_server_refuses_everything_else(sample_glb: Path, path: str) -> None:
    with ViewerServer(prepare(sample_glb)) as srv:
        # http.client would normalise nothing, but urllib may: send the raw request line.
        import http.client

        conn = http.client.HTTPConnection(HOST, srv.port, timeout=10)
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
    assert resp.status == 404, f"{path}: {resp.status}"
    assert body == b"not found\n"


@pytest.mark.parametrize(("host", "status"), [
    ("evil.example", 404), ("evil.example:80", 404), ("127.0.0.1.evil.example", 404),
    ("localhost", 200), ("127.0.0.1", 200),
])
def test_server_refuses_other_host_names(sample_glb: Path, host: str, status: int) -> None:
    """A page on another site that rebinds its name to 127.0.0.1 cannot read the model."""
    import http.client

    with ViewerServer(prepare(sample_glb)) as srv:
        conn = http.client.HTTPConnection(HOST, srv.port, timeout=10)
        conn.putrequest("GET", "/model.glb", skip_host=True)
        conn.putheader("Host", host if ":" in host else f"{host}:{srv.port}")
        conn.endheaders()
        resp = conn.getresponse()
        resp.read()
        conn.close()
    assert resp.status == status


def test_server_only_answers_get_and_head(sample_glb: Path) -> None:
    import http.client

    with ViewerServer(prepare(sample_glb)) as srv:
        conn = http.client.HTTPConnection(HOST, srv.port, timeout=10)
        conn.request("HEAD", "/model.glb")
        head = conn.getresponse()
        assert head.status == 200 and head.read() == b""
        assert int(head.headers["Content-Length"]) > 1000
        conn.request("POST", "/model.glb", body=b"x")
        post = conn.getresponse()
        post.read()
        conn.close()
    assert post.status == 501


def test_view_cli_serves_until_ctrl_c(sample_glb: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # SIGINT back to its default in the child: a suite started in the background (`cmd &` in a
    # non-interactive shell) inherits SIGINT ignored, and Python keeps an inherited SIG_IGN, so
    # the viewer would never see the Ctrl-C this test sends.
    proc = subprocess.Popen([sys.executable, "-m", "gamemesh", "view", str(sample_glb),
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        status, body, _ = _get(url + "model.glb")
        assert status == 200 and body[:4] == b"glTF"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0
    assert proc.stderr is not None and "viewer stopped" in proc.stderr.read()


def test_view_cli_bad_file_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "junk.glb"
    bad.write_bytes(b"glTF\x02\x00\x00\x00\x10")
    from gamemesh.cli import main

    assert main(["view", str(bad), "--no-browser"]) == 1


@pytest.mark.parametrize("fmt", viewable_formats())
def test_served_model_passes_the_gltf_validator(tmp_path: Path, fmt: str,
                                                gltf_validator: Any) -> None:
    """What the page loads is the GLB `prepare` made in memory; it must be valid glTF."""
    sample = make_sample(fmt, tmp_path / fmt)
    if sample.path is None:
        pytest.skip(sample.reason)
    model = prepare(sample.path, fmt)
    out = tmp_path / "served.glb"
    out.write_bytes(model.glb)
    report = gltf_validator(out)
    assert report["errors"] == 0


@pytest.mark.parametrize(("extras", "flagged"), [
    ({"splashpack": {"navmesh": 0}}, True),  # index 0 is a mark, not "false"
    ({"splashpack": {"navmesh": 3}}, True),
    ({"navmesh": True}, True),
    ({"kind": "NavMesh"}, True),
    ({"papa": {"role": "navigation_mesh"}}, True),
    ({"splashpack": {"navmesh": None}}, False),
    ({"navmesh": False}, False),
    ({"splashpack": {"object": 2}}, False),
    ({"name": "navmesh"}, False),
    ({}, False),
])
def test_navmesh_flags(extras: dict[str, Any], flagged: bool) -> None:
    from gamemesh.viewer.flags import is_navmesh

    assert is_navmesh(extras) is flagged


def test_vendored_three_is_the_locked_npm_package() -> None:
    """The page works offline from the package: three.js r187 and its licence are vendored,
    byte for byte the files of the version package-lock.json pins."""
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/three"]["version"] == "0.187.0"
    assert "REVISION = '187'" in (VENDOR / "three.core.js").read_text(encoding="utf-8")
    assert "MIT License" in (VENDOR / "LICENSE").read_text()
    npm = ROOT / "node_modules" / "three"
    if not npm.is_dir():
        pytest.skip("node_modules/three is missing (run `npm ci`) - cannot compare bytes")
    pairs = {"three.module.js": "build/three.module.js", "three.core.js": "build/three.core.js",
             "LICENSE": "LICENSE",
             "addons/loaders/GLTFLoader.js": "examples/jsm/loaders/GLTFLoader.js",
             "addons/controls/OrbitControls.js": "examples/jsm/controls/OrbitControls.js",
             "addons/utils/BufferGeometryUtils.js": "examples/jsm/utils/BufferGeometryUtils.js",
             "addons/utils/SkeletonUtils.js": "examples/jsm/utils/SkeletonUtils.js"}
    for ours, theirs in pairs.items():
        assert (VENDOR / ours).read_bytes() == (npm / theirs).read_bytes(), ours


# -- the page in Chromium ----------------------------------------------------------------

FORMATS = viewable_formats()


@pytest.fixture(scope="module")
def browser_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every format's sample in one Chromium run: {fmt: (Sample, result, info, screenshot)}."""
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("view")
    samples = {f: make_sample(f, root / f) for f in FORMATS}
    servers: list[ViewerServer] = []
    jobs: list[dict[str, Any]] = []
    infos: dict[str, dict[str, Any]] = {}
    try:
        for fmt, s in samples.items():
            if s.path is None:
                continue
            infos[fmt] = describe(s.path, fmt)
            srv = ViewerServer(prepare(s.path, fmt)).start()
            servers.append(srv)
            clip = infos[fmt]["animations"][0]["name"] if infos[fmt]["animations"] else None
            jobs.append({"fmt": fmt, "url": srv.url, "screenshot": str(root / f"{fmt}.png"),
                         "clip": clip, "time": SEEK, "play_ms": 400})
        jobs_file = root / "jobs.json"
        jobs_file.write_text(json.dumps(jobs))
        t0 = time.monotonic()
        run = subprocess.run(["node", str(DRIVER), str(jobs_file)], cwd=ROOT,
                             capture_output=True, text=True, timeout=180)
        elapsed = time.monotonic() - t0
    finally:
        for srv in servers:
            srv.stop()
    assert run.returncode == 0, f"driver failed: {run.stderr[-3000:]}"
    results = json.loads(run.stdout)
    return {"samples": samples, "infos": infos, "elapsed": elapsed,
            "results": {j["fmt"]: r for j, r in zip(jobs, results, strict=True)},
            "shots": {j["fmt"]: Path(j["screenshot"]) for j in jobs}}


def _result(browser_results: dict[str, Any], fmt: str) -> tuple[Sample, dict[str, Any],
                                                                 dict[str, Any]]:
    sample: Sample = browser_results["samples"][fmt]
    if sample.path is None:
        pytest.skip(sample.reason)
    res = browser_results["results"][fmt]
    assert not res.get("error"), f"{fmt}: page error: {res['error']} {res.get('logs')}"
    return sample, res, browser_results["infos"][fmt]


@pytest.mark.parametrize("fmt", FORMATS)
def test_page_counts_equal_gamemesh_info(browser_results: dict[str, Any], fmt: str) -> None:
    sample, res, info = _result(browser_results, fmt)
    want = {"meshes": info["meshes"], "bones": info["bones"],
            "clips": len(info["animations"])}
    got = {k: res["counts"][k] for k in want}
    assert got == want, f"{fmt}: page measured {got}, gamemesh info says {want}"
    assert res["dom_counts"] == want
    assert res["clips"] == [a["name"] for a in info["animations"]]
    assert not [m for m in res["logs"] if "404" in m or "Error" in m], res["logs"]
    # Every texture the scene has is previewed; the info table is filled.
    scene = gamemesh.load(sample.path, fmt)
    assert res["textures_shown"] == sum(1 for im in scene.images
                                        if im.pixels is not None or im.data is not None)
    assert res["info_rows"] >= 12


def _native_pngs(path: Path, fmt: str) -> int:
    """How many PNGs the format's .png export makes from this file (through convert)."""
    if ".png" not in by_name(fmt).exports:
        return 0
    out = path.parent / "native-export" / "out.png"
    try:
        report = gamemesh.convert(path, out, from_format=fmt)
    except gamemesh.FormatError:
        return 0
    return sum(1 for o in report.outputs if Path(o).read_bytes()[:4] == b"\x89PNG")


@pytest.mark.parametrize("fmt", FORMATS)
def test_page_shows_native_images_and_navmeshes(browser_results: dict[str, Any],
                                                fmt: str) -> None:
    """SPLASHPACK: the VRAM sheet (its .png export) and the navmesh overlay; any format with a
    .png export shows that image too."""
    sample, res, _ = _result(browser_results, fmt)
    assert sample.path is not None
    assert res["exports_shown"] == _native_pngs(sample.path, fmt)
    scene = gamemesh.load(sample.path, fmt)
    flagged = navmesh_nodes(scene)
    want = sum(len(scene.meshes[scene.nodes[i].mesh].primitives)  # type: ignore[index]
               for i in flagged if scene.nodes[i].mesh is not None)
    assert res["counts"]["navmeshes"] == want
    if fmt == "splashpack":
        # The sample is written as version 23, whose nav regions gamemesh does not build from
        # a scene (docs/splashpack.md): the VRAM sheet is shown, no navmesh overlay.
        assert res["exports_shown"] == 1 and want == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_page_toggles_wireframe_skeleton_and_navmesh(browser_results: dict[str, Any],
                                                     fmt: str) -> None:
    _, res, info = _result(browser_results, fmt)
    before, on = res["toggles_before"], res["toggles_on"]
    navmeshes = res["counts"]["navmeshes"]
    assert before == {"wireframe": False, "skeleton": False, "navmesh": navmeshes > 0,
                      "skeletonBones": before["skeletonBones"]}
    # The skeleton helper draws every bone of the skins (three.js Bones; unskinned formats
    # have none and the toggle is disabled).
    assert before["skeletonBones"] >= info["bones"]
    assert on["wireframe"] is True
    assert on["skeleton"] is (before["skeletonBones"] > 0)
    assert on["navmesh"] is False


@pytest.mark.parametrize("fmt", FORMATS)
def test_page_plays_a_clip(browser_results: dict[str, Any], fmt: str) -> None:
    _, res, info = _result(browser_results, fmt)
    if not info["animations"]:
        pytest.skip(f"{fmt} keeps no animation of the sample scene")
    assert res["played"] is True
    assert res["play_state"]["playing"] is True
    assert res["play_state"]["playedSeconds"] > 0.05, res["play_state"]
    assert 0 < res["play_state"]["time"] <= info["animations"][0]["duration"] + 1e-6
    assert res["pose_change"] > 1e-3, f"{fmt}: playing moved nothing"
    assert res["seek_state"]["playing"] is False
    assert res["seek_state"]["clip"] == info["animations"][0]["name"]
    assert abs(res["seek_state"]["time"] - SEEK) < 1e-6


@pytest.mark.parametrize("fmt", FORMATS)
def test_page_screenshot_matches_reference(browser_results: dict[str, Any], fmt: str) -> None:
    _result(browser_results, fmt)
    shot = read_png(browser_results["shots"][fmt])
    assert shot.shape == (600, 640, 4)
    msg = check_against_reference(shot, f"view_{fmt}", "view_gltf", Mask(BACKGROUND),
                                  mean_tol=3.0, outlier_tol=0.01)
    print(msg)


def test_browser_run_is_quick(browser_results: dict[str, Any]) -> None:
    n = len(browser_results["results"])
    assert browser_results["elapsed"] < 15 + 6 * n, f"{n} pages took {browser_results['elapsed']}"


def test_reference_screenshots_are_small() -> None:
    for p in FIXTURES.glob("*.png"):
        assert p.stat().st_size < 200_000, p
