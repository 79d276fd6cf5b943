"""`gamemesh view DIR`: the grid of models (kinds, formats, folders, thumbnails made once and
kept), no way out of DIR through a symlink, parallel conversions with a bounded cache, and
connections bounded in count and time."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

import gamemesh
from gamemesh.sample import sample_scene
from gamemesh.viewer import browser
from gamemesh.viewer.browser import FolderServer, find_models
from viewer_support import http_get

_get = http_get


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """units/col (a Papa unit), props/rock.pmf, an orphan texture and an orphan animation."""
    root = tmp_path / "game"
    gamemesh.save(sample_scene(), root / "units" / "col" / "col.papa")
    gamemesh.save(sample_scene(), root / "props" / "rock.pmf")
    loose = root / "loose"
    loose.mkdir()
    unit = root / "units" / "col"
    (loose / "lone_diffuse.papa").write_bytes((unit / "col_diffuse.papa").read_bytes())
    (loose / "lone_anim_bend.papa").write_bytes((unit / "col_anim_bend.papa").read_bytes())
    return root


def test_grid_lists_models_only_with_folder_kind_and_format(tree: Path, tmp_path: Path) -> None:
    with FolderServer(tree, cache_dir=tmp_path / "cache") as srv:
        status, body, ctype = _get(srv.url + "api/models.json")
        assert status == 200 and ctype == "application/json"
        models = json.loads(body)
        assert [(m["path"], m["folder"], m["format"], m["kind"]) for m in models] == [
            ("props/rock.pmf", "props", "pmf", "piece model"),
            ("units/col/col.papa", "units/col", "papa", "model")]
        page = _get(srv.url)[1].decode()
        assert 'id="filter"' in page and 'id="group"' in page and "browser.js" in page
        assert _get(srv.url + "static/browser.js")[0] == 200


def test_thumbnails_are_made_once_and_kept(tree: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    renders: list[str] = []
    real = FolderServer._render

    def counting(self: FolderServer, entry: browser.ModelEntry) -> bytes | None:
        renders.append(entry.rel)
        return real(self, entry)

    monkeypatch.setattr(FolderServer, "_render", counting)
    with FolderServer(tree, cache_dir=cache) as srv:
        status, png, ctype = _get(srv.url + "thumbs/1.png")
        assert status == 200 and ctype == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n"
        assert _get(srv.url + "thumbs/1.png")[1] == png
        assert _get(srv.url + "thumbs/9.png")[0] == 404
    with FolderServer(tree, cache_dir=cache) as srv:  # a second visit: from the disk cache
        assert _get(srv.url + "thumbs/1.png")[1] == png
    assert renders == ["units/col/col.papa"]
    assert len(list(cache.glob("*.png"))) == 1


def test_symlinks_out_of_the_folder_are_not_listed_or_served(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    gamemesh.save(sample_scene(), secret / "model.pmf")
    d = tmp_path / "d"
    gamemesh.save(sample_scene(), d / "own.pmf")
    (d / "x.pmf").symlink_to("../secret/model.pmf")
    (d / "inner.pmf").symlink_to("own.pmf")  # a link that stays inside is fine
    (d / "out").symlink_to(secret, target_is_directory=True)
    assert [p.name for p in find_models(d)] == ["inner.pmf", "own.pmf"]
    with FolderServer(d, cache_dir=tmp_path / "cache") as srv:
        names = [m["path"] for m in json.loads(_get(srv.url + "api/models.json")[1])]
        assert names == ["inner.pmf", "own.pmf"]
        assert _get(srv.url + "m/2/model.glb")[0] == 404


def test_conversions_run_in_parallel_and_the_cache_is_bounded(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()
    release = threading.Event()
    real = FolderServer._convert

    def slow_for_pmf(self: FolderServer, path: Path) -> dict[str, browser.Resource]:
        if path.suffix == ".pmf":
            started.set()
            release.wait(20)
        return real(self, path)

    monkeypatch.setattr(FolderServer, "_convert", slow_for_pmf)
    with FolderServer(tree, cache_dir=tmp_path / "cache", max_cached_models=1) as srv:
        slow = threading.Thread(target=_get, args=(srv.url + "m/0/model.glb",))
        slow.start()
        assert started.wait(20)
        t0 = time.monotonic()
        status, glb, _ = _get(srv.url + "m/1/model.glb")  # not held up by model 0
        assert status == 200 and glb[:4] == b"glTF" and time.monotonic() - t0 < 15
        release.set()
        slow.join(20)
        assert len(srv.cache) == 1  # bounded: model 1 went when model 0 came
        assert _get(srv.url + "m/1/")[0] == 200


def test_model_page_links_back_to_the_list() -> None:
    from importlib import resources

    static = resources.files("gamemesh.viewer").joinpath("static")
    index = static.joinpath("index.html").read_text()
    assert '<a id="back" href="../../" hidden>' in index
    assert "$('back').hidden = false" in static.joinpath("viewer.js").read_text()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=20)


def test_http09_request_is_answered_at_once(tree: Path, tmp_path: Path) -> None:
    with FolderServer(tree, cache_dir=tmp_path / "cache") as srv:
        s = _connect(srv.port)
        s.sendall(b"GET /\r\n")
        t0 = time.monotonic()
        reply = s.recv(200)
        assert reply.startswith(b"HTTP/1.0 505") and time.monotonic() - t0 < 5
        s.close()


def test_idle_connections_time_out_and_their_number_is_capped(tree: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    with FolderServer(tree, cache_dir=tmp_path / "cache") as srv:
        monkeypatch.setattr(srv.httpd.RequestHandlerClass, "timeout", 0.5)
        srv.httpd.slots = threading.BoundedSemaphore(2)
        idle = [_connect(srv.port) for _ in range(2)]
        idle[1].sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half-sent
        time.sleep(0.2)
        extra = _connect(srv.port)
        assert extra.recv(100).startswith(b"HTTP/1.1 503")
        extra.close()
        for s in idle:  # each closed by the server after its idle timeout
            s.settimeout(5)
            t0 = time.monotonic()
            while s.recv(4096):
                pass
            assert time.monotonic() - t0 < 4
            s.close()
        time.sleep(0.2)
        assert _get(srv.url + "api/models.json")[0] == 200  # the slots came back


# -- the folder page in Chromium ---------------------------------------------------------------

def test_folder_page_in_chromium_thumbnails_filter_and_back_link(tree: Path,
                                                                  tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[1]
    chromium = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    if shutil.which("node") is None or not (root / "node_modules" / "playwright-core").is_dir():
        pytest.skip("node or node_modules/playwright-core is missing (run `npm ci`)")
    if not chromium.exists():
        pytest.skip(f"Chromium not found at {chromium} (apt-get install chromium)")
    with FolderServer(tree, cache_dir=tmp_path / "cache") as srv:
        run = subprocess.run(["node", str(root / "tests" / "js" / "browse_check.mjs"), srv.url,
                              "rock"], cwd=root, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert not out.get("error") and not out["logs"], out
    assert out["cards"] == ["rock.pmf", "col.papa"]
    assert out["groups"] == ["props (1)", "units/col (1)"]
    assert out["thumbs_loaded"] == 2
    assert out["groups_by_format"] == ["papa (1)", "pmf (1)"]
    assert out["filtered"] == ["rock.pmf"] and out["shown"] == "1 of 2 models"
    assert out["model_url"] == srv.url + "m/1/"  # grouped by format: papa's card comes first
    assert out["back_visible"] and out["back_url"] == srv.url


def test_info_panel_gets_the_native_records_in_words(tree: Path) -> None:
    from gamemesh.viewer.server import prepare

    info = prepare(tree / "units" / "col" / "col.papa").info
    rows = dict(info["viewer"]["native_words"])
    assert rows["vertex formats"] == "8 Position3Weights4bBones4bNormal3TexCoord2"
    assert rows["model list"].startswith("name col_mesh, skeleton 0, mesh bindings 1")
    assert not any(c in v for v in rows.values() for c in "[]{}")
