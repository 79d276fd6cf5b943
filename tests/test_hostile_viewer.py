"""Viewer hygiene (issue 13, item 7): the page learns the file's name, not where it lives, and a
client resetting its connection leaves no traceback on the server's stderr."""

from __future__ import annotations

import json
import socket
import struct
import time
import urllib.request
from pathlib import Path

import pytest

from gamemesh.formats.gltf import write_glb
from gamemesh.sample import sample_scene
from gamemesh.viewer.server import ViewerServer, prepare


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    p = tmp_path / "deep" / "folder" / "sample.glb"
    p.parent.mkdir(parents=True)
    p.write_bytes(write_glb(sample_scene()))
    return p


def test_info_json_shows_the_name_not_the_path(sample: Path) -> None:
    model = prepare(sample.resolve())
    with ViewerServer(model) as srv, urllib.request.urlopen(srv.url + "api/info.json",
                                                             timeout=10) as r:
        body = r.read().decode()
    info = json.loads(body)
    assert info["file"] == "sample.glb" and info["viewer"]["file"] == "sample.glb"
    assert str(sample.parent) not in body and "deep/folder" not in body


def _reset(port: int, request: bytes) -> None:
    """Connect, send ``request``, and close with an RST (SO_LINGER 0), as a browser that
    gives up mid-way can."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(request)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def test_client_reset_prints_no_traceback(sample: Path, capfd: pytest.CaptureFixture[str]
                                          ) -> None:
    model = prepare(sample)
    with ViewerServer(model) as srv:
        for _ in range(5):
            # Mid-headers: the server's read of the request is reset.
            _reset(srv.port, b"GET /model.glb HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            # A whole request, reset while the body is on its way.
            _reset(srv.port, b"GET /model.glb HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.5)
        with urllib.request.urlopen(srv.url + "api/info.json", timeout=10) as r:
            assert r.status == 200  # still serving
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
