"""Synthetic PET documents made by gamemesh's own writer: the test fixtures of every kind and
version (no real file is public, spec §D) and the benchmark's large sample.

The model is a tube standing on +Y in file space, skinned to a chain of bones, with triangles
ordered so that ``(p1 - p0) x (p2 - p0)`` points outward as the spec says Pangya files do
(§B.16), outward per-corner normals, one- two- and five-influence vertices, and (on request) more
than 254 bones so that ids need the 0xFE escape.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...scene.skinning import safe_inverse
from .document import (
    AnimSection,
    BoneSection,
    CollBox,
    CollSection,
    ExtrSection,
    FanmSection,
    Frame,
    FramSection,
    MeshSection,
    Motion,
    MotiSection,
    Payload,
    PetDocument,
    Section,
    SmtlMaterial,
    SmtlSection,
    SmtlValue,
    TextSection,
    Texture,
    Track,
    Vers,
    corner_records,
)
from .layout import FANM_DT, KIND_SECTIONS, SKIN_DT, WRITE_ORDER
from .skeleton import bone_rows


def tube(rings: int, sides: int, height: float = 2.0,
         radius: float = 0.3) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64],
                                       npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Positions, triangles (outward by the right-hand rule), smooth normals and UVs."""
    ang = np.arange(sides) * 2 * np.pi / sides
    ys = np.linspace(0.0, height, rings)
    pos = np.zeros((rings, sides, 3))
    pos[..., 0] = radius * np.cos(ang)[None, :]
    pos[..., 2] = radius * np.sin(ang)[None, :]
    pos[..., 1] = ys[:, None]
    nrm = np.zeros_like(pos)
    nrm[..., 0] = np.cos(ang)[None, :]
    nrm[..., 2] = np.sin(ang)[None, :]
    uv = np.zeros((rings, sides, 2))
    uv[..., 0] = (np.arange(sides) / sides)[None, :]
    uv[..., 1] = (1.0 - ys / height)[:, None]
    r = np.arange(rings - 1)[:, None]
    c = np.arange(sides)[None, :]
    a = r * sides + c
    b = r * sides + (c + 1) % sides
    a2, b2 = a + sides, b + sides
    # With x = cos, z = sin, (a, a2, b) has (p1 - p0) x (p2 - p0) pointing outward.
    tris = np.stack([np.stack([a, a2, b], -1), np.stack([b, a2, b2], -1)], 2).reshape(-1, 3)
    return pos.reshape(-1, 3), tris, nrm.reshape(-1, 3), uv.reshape(-1, 2)


def _chain_locals(n: int, seg: float) -> npt.NDArray[np.float64]:
    """Column-form local matrices: each bone ``seg`` above its parent, turned 20 degrees about
    Y, the last one scaled 1.25 (rest matrices may hold scale, §B.6)."""
    out = np.tile(np.eye(4), (n, 1, 1))
    for k in range(n):
        a = np.radians(20.0) if k else 0.0
        c, s = np.cos(a), np.sin(a)
        out[k, :3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
        if k == n - 1 and n > 1:
            out[k, :3, :3] *= 1.25
        out[k, 1, 3] = seg if k else 0.0
    return out


def build(kind: str = "pet", version: tuple[int, int] = (1, 3), *, rings: int = 5,
          sides: int = 6, chain: int = 4, escape: bool = False, uv_sets: int = 2,
          garbage: bool = True) -> PetDocument:
    """A document of ``kind`` and ``version`` holding every section the kind allows."""
    seg = 2.0 / chain
    nbones = 300 if escape else chain + 1
    names = [f"Bip01 Spine{k}" for k in range(chain)]
    names.append(kind.upper() if kind == "mpet" else "item")
    names += [f"Bone{k:03d}" for k in range(len(names), nbones)]
    parents = [-1, *range(chain - 1), -1]
    parents += [k - 1 if k > chain + 1 else 0 for k in range(chain + 1, nbones)]
    local = np.tile(np.eye(4), (nbones, 1, 1))
    local[:chain] = _chain_locals(chain, seg)
    world = local.copy()
    for i in range(nbones):
        if parents[i] >= 0:
            world[i] = world[parents[i]] @ local[i]
    bones = BoneSection(names=[n.encode() for n in names], parents=parents,
                        parent_wide=[False] * nbones)
    if escape:
        bones.parent_wide[1] = True  # an id written escaped although it fits a byte
    if kind != "apet":
        bones.matrices = bone_rows(local).astype(np.float32)
        if version >= (1, 3):
            bones.extra = np.full(nbones, -1.0, np.float32)
    secs: dict[bytes, Payload] = {b"VERS": Vers(bytes([version[1], version[0], 0xFE, 0xFF])),
                                  b"BONE": bones}
    secs[b"TEXT"] = _text(garbage)
    secs[b"SMTL"] = _smtl()
    secs[b"MESH"] = _mesh(kind, version, rings, sides, chain, world, escape, uv_sets)
    secs[b"ANIM"] = _anim(version, chain, escape)
    fanm = np.zeros(1, FANM_DT)
    fanm[0] = (0, b"face_smile".ljust(32, b"\0"), b"item1_01.jpg".ljust(32, b"\0"))
    secs[b"FANM"] = FanmSection(fanm)
    secs[b"FRAM"] = FramSection([
        Frame(3, (b'*fx("@dust" "DustBig.spr" "Bip01 Spine0")', b"", b""), 0),
        Frame(12, (b"*hidebone(", b'"Bip01 Spine1"', b")"), 1)])
    secs[b"MOTI"] = MotiSection([
        Motion(b"idle", 0, 15, b"walk", b"blend", 0.25, names[0].encode()),
        Motion(b"walk", 15, 30, b"", b"", 0.0, b"")])
    secs[b"COLL"] = CollSection([CollBox(0, 1, b"body", names[1].encode(), b"", b"",
                                         np.array([-0.3, 0, -0.2, 0.3, 0.6, 0.25], np.float32))])
    secs[b"EXTR"] = ExtrSection([0, 299] if escape else [0, 1],
                                [False, True] if escape else [False, False])
    allowed = KIND_SECTIONS[kind]
    order = [f for f in WRITE_ORDER if f in allowed and f in secs]
    if version == (1, 0):
        order.remove(b"VERS")  # the legacy variant: no VERS at all
    return PetDocument(kind=kind, version=version,
                       sections=[Section(f, secs[f]) for f in order])


def _text(garbage: bool) -> TextSection:
    junk = b"\0\xcc\xcc\x13\x37" if garbage else b""
    return TextSection([
        Texture((b"item1_01.jpg" + junk).ljust(32, b"\0"), 0, 0, b"\0\0", 0xFFFFFFFF, 0),
        Texture(b"]glass.png".ljust(32, b"\0"), 1, 1, b"\0\0", 0xFF808080, 1),
        # A Korean (CP949) name, as Pangya files have.
        Texture("\ud55c\uae00.png".encode("cp949").ljust(32, b"\0"), 0, 2, b"\0\0",
                0xFFFFFFFF, 2)])


def _smtl() -> SmtlSection:
    vals = [SmtlValue(b"enable", 0, (1).to_bytes(4, "little")),
            SmtlValue(b"power", 2, np.float32(8.0).tobytes()),
            SmtlValue(b"color", 5, np.array([1, 0.5, 0.25, 1], "<f4").tobytes()),
            SmtlValue(b"envmap", 8, b"!env.dds")]
    return SmtlSection([SmtlMaterial(b"shiny", vals)])


def _influences(n: int, main: npt.NDArray[np.int64], chain: int,
                escape: bool) -> tuple[Any, Any, Any, Any]:
    """One, two and five influences in turn; the main bone first."""
    kind = np.arange(n) % 3
    count = np.array([1, 2, 5], np.int32)[kind]
    w = np.zeros((n, 5), np.uint8)
    b = np.zeros((n, 5), np.int32)
    w[kind == 0, 0] = 255
    w[kind == 1, :2] = (200, 55)
    w[kind == 2] = (100, 60, 40, 30, 25)
    b[:, 0] = main
    b[:, 1:4] = (main[:, None] + np.arange(1, 4)[None, :]) % chain
    b[:, 4] = chain  # the file's own bone: five distinct bones
    if escape:
        b[kind == 2, 4] = 299  # a bone id past 0xFD: FE + i16
    b[count[:, None] <= np.arange(5)[None, :]] = 0
    wide = b > 0xFD
    return count, w, b, wide


def _mesh(kind: str, version: tuple[int, int], rings: int, sides: int, chain: int,
          world: npt.NDArray[np.float64], escape: bool, uv_sets: int) -> MeshSection:
    pos, tris, nrm, uv = tube(rings, sides)
    n = len(pos)
    seg = 2.0 / chain
    main = np.clip((pos[:, 1] / seg).astype(np.int64), 0, chain - 1)
    count, w, b, wide = _influences(n, main, chain, escape)
    # Positions are stored in the main bone's rest space (§B.8).
    inv = safe_inverse(world[main])
    local = np.einsum("nij,nj->ni", inv[:, :3, :3], pos) + inv[:, :3, 3]
    corner_v = tris.reshape(-1)
    cn = nrm[corner_v]
    # v1.0 normals are in the main bone's space, except that with a "fake body bone" (here the
    # identity bone named after the file, §B.8) the Bip bones' corners use that bone's space:
    # so this model's v1.0 normals are stored in model space, as in later versions.
    cn[0] = 0.0  # a zero normal: "compute it"
    nsets = uv_sets if version >= (1, 2) else 1
    cuv = np.stack([uv[corner_v] * (k + 1) for k in range(nsets)], axis=1)
    npoly = len(tris)
    tex = (np.arange(npoly) % 2).astype(np.uint8)
    tex[-1] = 0xFF  # no texture
    mesh = MeshSection(
        positions=local.astype(np.float32), inf_count=count, inf_weight=w, inf_bone=b,
        inf_wide=wide, pad=np.zeros((n, 2), np.uint8),
        corners=corner_records(corner_v, cn, cuv),
        texture=tex,
        specular=np.where(np.arange(npoly) % 4 == 0, 0, 0xFF).astype(np.uint8)
        if version >= (1, 2) else None)
    if kind == "mpet":
        skins = np.zeros(1, SKIN_DT)
        skins[0] = (chain, b"\0\0\0", 0, n, 0, npoly)
        mesh.skins = skins
        mesh.global_weight = np.ones(n, np.float32)
    return mesh


def _anim(version: tuple[int, int], chain: int, escape: bool) -> AnimSection:
    tracks = []
    t = np.arange(0, 31, 5, dtype=np.float32) / 30.0
    for k in range(chain):
        pos = np.zeros((len(t), 4), np.float32)
        pos[:, 0] = t
        pos[:, 2] = (2.0 / chain) if k else 0.0
        pos[:, 1] = 0.05 * np.sin(t * 6)
        half = 0.3 * np.sin(t * 4) / 2
        rot = np.zeros((len(t), 5), np.float32)
        rot[:, 0] = t
        rot[:, 3] = np.sin(half)  # about z
        rot[:, 4] = np.cos(half)
        tr = Track(bone=k, pos=pos, rot=rot)
        if version >= (1, 2):
            sc = np.ones((2, 4), np.float32)
            sc[:, 0] = (0.0, 1.0)
            tr.scale = sc
        if version >= (1, 3):
            tr.flags = np.array([[0.0, -1.0], [1.0, -1.0]], np.float32)
        tracks.append(tr)
    if escape:
        tracks.append(Track(bone=299, wide=True, pos=np.array([[0, 0, 0.1, 0]], np.float32)))
    return AnimSection(tracks=tracks, terminator=b"\xff")


def sample_bytes(size: int) -> bytes:
    """A valid .pet (1.3) of about ``size`` bytes: a tube with enough sides and rings."""
    from .write import write

    per_vertex = 230  # bytes per tube vertex, measured on this layout
    nverts = max(24, size // per_vertex)
    sides = max(6, int(np.sqrt(nverts)))
    rings = max(2, nverts // sides)
    return write(build("pet", (1, 3), rings=rings, sides=sides, chain=8, garbage=False))
