"""Build the Blender extension zip (Blender >= 4.2): manifest, add-on, bundled wheels.

The gamemesh wheel is made here from the installed package itself (pure Python, so a zip with
a ``.dist-info``), which works the same from a source checkout or a pip install and needs no
network. Pillow has compiled parts: its wheels for Blender's Python (3.11) come from the package
index through ``pip download``, one per Blender platform, or from a folder given with ``wheels``.
numpy is not bundled: Blender ships it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..fileio import write_files

__all__ = ["BLENDER_PYTHON", "PLATFORMS", "BuildError", "Built", "build_extension",
           "gamemesh_wheel", "host_platform", "manifest"]

BLENDER_PYTHON = "311"  # Blender 4.2 to 5.0 embed Python 3.11
# The first Blender the extension does not claim (the manifest's maximum is exclusive): the
# newest one tested is 5.0 (bpy 5.0.1), and the bundled Pillow is built for 3.11 alone, which
# a later Blender embedding another Python could not load.
BLENDER_VERSION_MAX = "5.1.0"
EXTENSION_ID = "gamemesh"
PILLOW = "Pillow>=10.1"

# Blender platform -> (pip --platform tag, what a wheel's platform tag must contain)
PLATFORMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "linux-x64": ("manylinux_2_28_x86_64", ("manylinux", "x86_64")),
    "windows-x64": ("win_amd64", ("win_amd64",)),
    "windows-arm64": ("win_arm64", ("win_arm64",)),
    "macos-arm64": ("macosx_11_0_arm64", ("macosx", "arm64")),
    "macos-x64": ("macosx_11_0_x86_64", ("macosx", "x86_64")),
}

ADDON = '''"""gamemesh: import and export game 3D formats (the code is in its bundled wheel)."""

from gamemesh.blender import register, unregister

__all__ = ["register", "unregister"]
'''


class BuildError(Exception):
    """The extension could not be built (no wheel for a platform, pip failed)."""


@dataclass
class Built:
    path: Path
    wheels: list[str]
    platforms: list[str]
    size: int


def host_platform() -> str:
    """This machine's Blender platform name (the default target)."""
    import platform

    machine = platform.machine().lower()
    arm = machine in ("arm64", "aarch64")
    if sys.platform.startswith("win"):
        return "windows-arm64" if arm else "windows-x64"
    if sys.platform == "darwin":
        return "macos-arm64" if arm else "macos-x64"
    return "linux-x64"


def manifest(wheels: Sequence[str], platforms: Sequence[str]) -> str:
    """``blender_manifest.toml`` (schema 1.0.0)."""
    def toml_list(items: Sequence[str]) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    return "\n".join([
        'schema_version = "1.0.0"',
        f'id = "{EXTENSION_ID}"',
        f'version = "{__version__}"',
        'name = "gamemesh"',
        'tagline = "Import and export Papa, PMF, SPLASHPACK, PBA/PTX and PET models"',
        'maintainer = "gamemesh developers"',
        'type = "add-on"',
        'blender_version_min = "4.2.0"',
        f'blender_version_max = "{BLENDER_VERSION_MAX}"',
        'license = ["SPDX:MIT"]',
        'tags = ["Import-Export"]',
        f"platforms = {toml_list(platforms)}",
        f"wheels = {toml_list([f'./wheels/{w}' for w in wheels])}",
        "",
        "[permissions]",
        'files = "Read and write game models and their textures and animations"',
        "",
    ])


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def gamemesh_wheel() -> tuple[str, bytes]:
    """A py3-none-any wheel of the gamemesh package this process runs (name, bytes)."""
    root = Path(__file__).resolve().parents[1]
    version = __version__
    dist = f"gamemesh-{version}.dist-info"
    files: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root.parent).as_posix()
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
            files[rel] = p.read_bytes()
    files[f"{dist}/METADATA"] = "\n".join([
        "Metadata-Version: 2.1", "Name: gamemesh", f"Version: {version}",
        "Summary: Read, write and convert game 3D formats to and from glTF 2.0",
        "Requires-Python: >=3.11", "Requires-Dist: numpy>=1.26", f"Requires-Dist: {PILLOW}",
        ""]).encode()
    files[f"{dist}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: gamemesh\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n")
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n"
                     for name, data in files.items())
    files[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(_entry(name), data)
    return f"gamemesh-{version}-py3-none-any.whl", buf.getvalue()


def _entry(name: str) -> zipfile.ZipInfo:
    # A fixed date: the same sources build the same bytes.
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _matches(wheel: str, platform: str) -> bool:
    parts = wheel[:-4].split("-")
    if len(parts) < 5 or not wheel.lower().startswith("pillow-"):
        return False
    py, plat = parts[-3], parts[-1]
    return (py == f"cp{BLENDER_PYTHON}"
            and all(word in plat for word in PLATFORMS[platform][1]))


def _pillow_from_dir(folder: Path, platform: str) -> Path:
    found = sorted((p for p in folder.glob("*.whl") if _matches(p.name, platform)),
                   key=lambda p: p.name)
    if not found:
        msg = (f"no Pillow wheel for Python 3.{BLENDER_PYTHON[1:]} on {platform} in {folder} "
               f"(want pillow-*-cp{BLENDER_PYTHON}-*{PLATFORMS[platform][0]}*.whl)")
        raise BuildError(msg)
    return found[-1]


def _pillow_download(dest: Path, platform: str) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
           "--no-deps", "--only-binary=:all:", "--implementation", "cp",
           "--python-version", f"3.{BLENDER_PYTHON[1:]}", "--abi", f"cp{BLENDER_PYTHON}",
           "--platform", PLATFORMS[platform][0], "--dest", str(dest), PILLOW]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        msg = f"pip could not download Pillow for {platform}: {tail}"
        raise BuildError(msg)
    return _pillow_from_dir(dest, platform)


def build_extension(out: Path, platforms: Sequence[str] | None = None,
                    wheels: Path | None = None) -> Built:
    """Write the extension zip ``out`` for ``platforms`` (default: this machine's), taking
    Pillow wheels from the folder ``wheels`` or else from the package index."""
    platforms = list(dict.fromkeys(platforms or [host_platform()]))
    unknown = [p for p in platforms if p not in PLATFORMS]
    if unknown:
        msg = f"unknown Blender platform {unknown[0]!r} (known: {', '.join(PLATFORMS)})"
        raise ValueError(msg)
    name, data = gamemesh_wheel()
    bundled: dict[str, bytes] = {name: data}
    with tempfile.TemporaryDirectory(prefix="gamemesh-wheels-") as tmp:
        for plat in platforms:
            whl = (_pillow_from_dir(wheels, plat) if wheels is not None
                   else _pillow_download(Path(tmp) / plat, plat))
            bundled[whl.name] = whl.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(_entry("blender_manifest.toml"), manifest(list(bundled), platforms))
        z.writestr(_entry("__init__.py"), ADDON)
        for whl_name, whl_data in bundled.items():
            z.writestr(_entry(f"wheels/{whl_name}"), whl_data)
    write_files(out.parent, {out.name: buf.getvalue()})
    return Built(out, list(bundled), platforms, len(buf.getvalue()))
