"""The viewer's web server: one converted model and the page's own assets, on loopback only.

Routes are an exact table built up front (the page's files found in ``static/`` when the
server starts, ``/model.glb``, ``/api/info.json``, ``/textures/N.png``, ``/exports/NAME``);
a request path is looked up as a key, never joined to a folder, so nothing else on disk can
be reached (``..``, encoded slashes, absolute paths all miss the table and get 404). Requests
whose Host header is not the loopback address get 404 too (DNS rebinding).
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
import os
import sys
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..api import info as describe
from ..api import load
from ..errors import FormatError
from ..registry import Context, by_name
from ..safeio import read_regular
from ..scene import Image
from ..textures import decode_image, encode_png
from ..words import label, words
from .flags import navmesh_nodes

__all__ = ["HOST", "ViewModel", "ViewerServer", "prepare"]

# Connections served at once (a page loads a few dozen resources; thumbnails of a grid more).
MAX_CONNECTIONS = 64
IDLE_TIMEOUT = 10.0

HOST = "127.0.0.1"
STATIC = "static"
@dataclass
class Resource:
    body: bytes
    content_type: str


@dataclass
class ViewModel:
    """Everything the page shows for one file, converted once, held in memory."""

    name: str
    glb: bytes
    info: dict[str, Any]
    files: dict[str, Resource] = field(default_factory=dict)


def prepare(path: str | os.PathLike[str], from_format: str | None = None,
            **options: Any) -> ViewModel:
    """Convert a file (siblings included) to GLB in memory, with the page's side data."""
    from ..formats.gltf import write_glb

    src = Path(path)
    info = describe(src, from_format, **dict(options))
    # The page shows the file's name: its folder (the user's home, a project's layout) is
    # nothing a browser tab, or anything the page loads, needs to see.
    info["file"] = src.name
    scene = load(src, from_format, **options)
    glb = write_glb(scene)
    model = ViewModel(src.name, glb, info)
    textures = []
    for i, image in enumerate(scene.images):
        entry = _texture_entry(i, image)
        res = _texture_resource(image)
        if res is not None:
            entry["url"] = f"textures/{i}.png"
            model.files[f"/textures/{i}.png"] = res
        textures.append(entry)
    exports = _exports(src, info["format"], options, model)
    info["viewer"] = {"file": src.name, "textures": textures, "exports": exports,
                      "navmesh_nodes": [scene.nodes[i].name for i in navmesh_nodes(scene)],
                      "glb_bytes": len(glb),
                      # The file's own records as `gamemesh info` words them (no JSON).
                      "native_words": [[label(k), words(v)]
                                       for k, v in info.get("native", {}).items()]}
    return model


def _texture_entry(i: int, image: Image) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": i, "name": image.name or image.uri or f"image {i}",
                             "uri": image.uri, "url": None}
    if (size := image.size) is not None:  # a PNG or JPEG kept as it is: its header's size
        entry["width"], entry["height"] = size
    return entry


def _texture_resource(image: Image) -> Resource | None:
    """The image as PNG (encoded bytes Pillow reads are re-encoded; PNG passes through)."""
    if image.pixels is not None:
        return Resource(encode_png(image.pixels), "image/png")
    if image.data is None:
        return None
    if image.data[:8] == b"\x89PNG\r\n\x1a\n":
        return Resource(bytes(image.data), "image/png")
    try:
        return Resource(encode_png(decode_image(image.data)), "image/png")
    except FormatError:  # shown as missing in the page rather than failing the whole view
        return None


def _exports(src: Path, fmt: str, options: dict[str, Any],
             model: ViewModel) -> list[dict[str, str]]:
    """Images the format makes straight from its native document (SPLASHPACK's VRAM sheet)."""
    spec = by_name(fmt)
    if ".png" not in spec.exports or spec.read is None:
        return []
    data = read_regular(src, options.get("max_input_size"))
    ctx = Context(src, options)
    doc = spec.read_doc(data, ctx)
    out_ctx = Context(src.with_suffix(".png"), options, ctx.notes)
    try:
        files = spec.exports[".png"](doc, out_ctx)
    except FormatError as e:
        # Papa's .png export only applies to texture files: a model is not an error.
        model.info.setdefault("notes", []).append(
            {"level": "info", "code": "viewer.no_native_image", "message": str(e)})
        return []
    out = []
    for k, (name, body) in enumerate(files.items()):
        if not body.startswith(b"\x89PNG"):
            continue
        key = f"export{k}.png"
        model.files[f"/exports/{key}"] = Resource(body, "image/png")
        label = "VRAM" if fmt == "splashpack" else "image"
        out.append({"name": name, "url": f"exports/{key}", "label": label})
    return out


def _static_table() -> dict[str, Resource]:
    """The page's own files, by URL path, read once from the installed package."""
    table: dict[str, Resource] = {}
    root = resources.files("gamemesh.viewer").joinpath(STATIC)
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:  # iterative walk of the package's static tree
        node, prefix = stack.pop()
        for child in node.iterdir():
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                stack.append((child, rel + "/"))
                continue
            ctype = _content_type(child.name)
            table[f"/static/{rel}"] = Resource(child.read_bytes(), ctype)
    return table


def _content_type(name: str) -> str:
    if name.endswith((".js", ".mjs")):
        return "text/javascript; charset=utf-8"
    if name == "LICENSE" or name.endswith((".md", ".txt")):
        return "text/plain; charset=utf-8"
    guess = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return guess + ("; charset=utf-8" if guess.startswith("text/") else "")


def routes(model: ViewModel) -> dict[str, Resource]:
    table = _static_table()
    index = table.get("/static/index.html")
    if index is not None:
        table["/"] = table["/index.html"] = index
    table["/model.glb"] = Resource(model.glb, "model/gltf-binary")
    table["/api/info.json"] = Resource(json.dumps(model.info, default=str).encode(),
                                       "application/json")
    table.update(model.files)
    return table


class _Handler(BaseHTTPRequestHandler):
    server_version = "gamemesh-viewer"
    table: dict[str, Resource] = {}
    quiet = True
    # Seconds a connection may sit idle or half-sent before it is closed (the socket's
    # timeout): an idle client cannot hold its thread for ever.
    timeout = IDLE_TIMEOUT

    def parse_request(self) -> bool:
        """A request line without a version (HTTP/0.9 ``GET /``) gets an answer at once,
        instead of waiting for headers such a client never sends."""
        raw: bytes = getattr(self, "raw_requestline", b"")  # set by handle_one_request
        if len(raw.split()) < 3:
            self.request_version = "HTTP/1.0"  # so the error carries a status line
            self.requestline = str(raw, "iso-8859-1").rstrip("\r\n")
            self.command = ""
            self.close_connection = True
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED,
                            explain="send an HTTP/1.0 or HTTP/1.1 request")
            return False
        return super().parse_request()

    def do_GET(self) -> None:  # the name http.server dispatches to
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _host_ok(self) -> bool:
        """Only requests addressed to the loopback name: a web page that rebinds its own
        domain to 127.0.0.1 (DNS rebinding) sends its domain here and is refused."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]").lower()
        return host in ("127.0.0.1", "localhost")

    def _lookup(self, path: str) -> Resource | None:
        return self.table.get(path)

    def _respond(self, send_body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        res = self._lookup(path) if self._host_ok() else None
        if res is None:
            body = b"not found\n"
            self.send_response(HTTPStatus.NOT_FOUND)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        else:
            body = res.body
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", res.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    """At most :data:`MAX_CONNECTIONS` connections served at once: one more is answered 503
    and closed, so a flood of idle clients cannot take a thread each."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\nRetry-After: 1\r\n\r\n")
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser that closes or resets the connection mid-response (a reload, a closed tab)
        # is routine, not an error worth a traceback on the terminal.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class ViewerServer:
    """Serves one :class:`ViewModel` on 127.0.0.1 (port 0: a free port the OS picks).

    Use as a context manager in tests (``with ViewerServer(model) as srv: srv.url``), or call
    :meth:`serve_forever` from the CLI, which returns on Ctrl-C.
    """

    def __init__(self, model: ViewModel, port: int = 0, quiet: bool = True,
                 handler: type[BaseHTTPRequestHandler] | None = None) -> None:
        if handler is None:
            handler = type("Handler", (_Handler,), {"table": routes(model), "quiet": quiet})
        self.httpd = _Server((HOST, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> ViewerServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                        name="gamemesh-viewer")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()

    def serve_forever(self) -> None:
        try:
            self.httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.httpd.server_close()

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
