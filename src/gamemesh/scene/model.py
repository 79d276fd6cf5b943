"""The common scene model, in glTF 2.0 conventions.

Right-handed, +Y up, counter-clockwise front faces, quaternions as (x, y, z, w), UV origin at the
top left. Matrices are stored as mathematical 4x4 arrays (``m @ column_vector``); the glTF writer
turns them into glTF's column-major lists. Bulk data is numpy arrays, never per-vertex objects.

Every format converts into these conventions in ``to_scene`` and out of them in ``from_scene``;
nothing else ever converts axes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import Note

F32 = npt.NDArray[np.float32]
Arr = npt.NDArray[Any]

AlphaMode = Literal["OPAQUE", "MASK", "BLEND"]
Interpolation = Literal["LINEAR", "STEP", "CUBICSPLINE"]
Path = Literal["translation", "rotation", "scale", "weights"]

# glTF sampler constants, kept by value so formats need not know them.
NEAREST, LINEAR = 9728, 9729
LINEAR_MIPMAP_LINEAR = 9987
REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT = 10497, 33071, 33648


@dataclass
class Sampler:
    mag_filter: int | None = None
    min_filter: int | None = None
    wrap_s: int = REPEAT
    wrap_t: int = REPEAT

    def key(self) -> tuple[int | None, int | None, int, int]:
        return (self.mag_filter, self.min_filter, self.wrap_s, self.wrap_t)


@dataclass
class Image:
    """A texture image: decoded RGBA pixels, or encoded bytes (PNG/JPEG) kept as they are.

    ``uri`` is the source reference (the texture name the format gave), kept even when the file
    was not found; then ``pixels`` and ``data`` are both None and the image is a placeholder.
    """

    name: str = ""
    pixels: npt.NDArray[np.uint8] | None = None  # (H, W, 4) RGBA
    data: bytes | None = None
    mime_type: str | None = None
    uri: str | None = None
    sampler: Sampler = field(default_factory=Sampler)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) when known without decoding: the pixels' shape, else the header of
        encoded PNG or JPEG bytes (None when they are neither or are damaged)."""
        if self.pixels is not None:
            return (int(self.pixels.shape[1]), int(self.pixels.shape[0]))
        # Imported on first use: importing the textures package loads Pillow, which the model
        # itself never needs.
        from ..textures.encoded import encoded_size

        return encoded_size(self.data)


@dataclass
class TextureRef:
    """A material's use of an image: which UV set, an optional sampler override, and the
    texture's own glTF extensions (``KHR_texture_transform``) kept as plain data."""

    image: int
    texcoord: int = 0
    scale: float = 1.0  # normalTexture.scale / occlusionTexture.strength
    sampler: Sampler | None = None
    extensions: dict[str, Any] = field(default_factory=dict)


@dataclass
class Material:
    name: str = ""
    base_color_factor: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    base_color_texture: TextureRef | None = None
    metallic_factor: float = 0.0
    roughness_factor: float = 1.0
    metallic_roughness_texture: TextureRef | None = None
    normal_texture: TextureRef | None = None
    occlusion_texture: TextureRef | None = None
    emissive_texture: TextureRef | None = None
    emissive_factor: tuple[float, float, float] = (0.0, 0.0, 0.0)
    emissive_strength: float = 1.0  # KHR_materials_emissive_strength
    alpha_mode: AlphaMode = "OPAQUE"
    alpha_cutoff: float = 0.5
    double_sided: bool = False
    unlit: bool = False  # KHR_materials_unlit
    extras: dict[str, Any] = field(default_factory=dict)

    def textures(self) -> list[TextureRef]:
        refs = (self.base_color_texture, self.metallic_roughness_texture, self.normal_texture,
                self.occlusion_texture, self.emissive_texture)
        return [r for r in refs if r is not None]


@dataclass
class MorphTarget:
    """Displacements added to the base attributes, weighted by the mesh's morph weights."""

    positions: F32 | None = None
    normals: F32 | None = None
    tangents: F32 | None = None


@dataclass
class Primitive:
    positions: F32
    normals: F32 | None = None
    tangents: F32 | None = None  # (N, 4)
    texcoords: list[F32] = field(default_factory=list)
    colors: list[F32] = field(default_factory=list)  # (N, 4) RGBA linear, or (N, 3)
    joints: npt.NDArray[np.uint16] | None = None  # (N, 4k)
    weights: F32 | None = None  # (N, 4k)
    indices: npt.NDArray[np.uint32] | None = None
    mode: int = 4  # TRIANGLES
    material: int | None = None
    targets: list[MorphTarget] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def vertex_count(self) -> int:
        return len(self.positions)

    @property
    def triangle_count(self) -> int:
        if self.mode != 4:
            return 0
        n = len(self.indices) if self.indices is not None else len(self.positions)
        return n // 3

    def triangles(self) -> npt.NDArray[np.uint32]:
        """(T, 3) vertex indices of a TRIANGLES primitive."""
        idx = self.indices if self.indices is not None else np.arange(len(self.positions),
                                                                        dtype=np.uint32)
        n = len(idx) // 3 * 3
        return np.asarray(idx[:n], dtype=np.uint32).reshape(-1, 3)


@dataclass
class Mesh:
    name: str = ""
    primitives: list[Primitive] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)  # default morph weights
    target_names: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Node:
    name: str = ""
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)  # x, y, z, w
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    matrix: F32 | None = None  # (4, 4); when set it replaces T/R/S
    mesh: int | None = None
    skin: int | None = None
    children: list[int] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    light: int | None = None  # index into Scene.lights (KHR_lights_punctual)


@dataclass
class Skin:
    joints: list[int]
    inverse_bind_matrices: F32 | None = None  # (J, 4, 4)
    skeleton: int | None = None
    name: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Channel:
    """One animated property. For CUBICSPLINE, ``values`` holds (in-tangent, value, out-tangent)
    triples per key, as in glTF: shape (3K, C)."""

    node: int
    path: Path
    times: F32
    values: F32  # (K, C) with C = 3, 4 or the morph target count
    interpolation: Interpolation = "LINEAR"

    @property
    def duration(self) -> float:
        return float(self.times[-1]) if len(self.times) else 0.0


@dataclass
class Animation:
    name: str = ""
    channels: list[Channel] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        return max((c.duration for c in self.channels), default=0.0)

    @property
    def start(self) -> float:
        return min((float(c.times[0]) for c in self.channels if len(c.times)), default=0.0)

    @property
    def key_count(self) -> int:
        return max((len(c.times) for c in self.channels), default=0)


@dataclass
class Light:
    """A KHR_lights_punctual light, placed by the nodes that name it (at their origin, shining
    down their -Z for spot and directional lights)."""

    type: Literal["point", "spot", "directional"] = "point"
    name: str = ""
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    intensity: float = 1.0
    range: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Scene:
    name: str = ""
    nodes: list[Node] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    meshes: list[Mesh] = field(default_factory=list)
    materials: list[Material] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    skins: list[Skin] = field(default_factory=list)
    animations: list[Animation] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    lights: list[Light] = field(default_factory=list)

    # -- building helpers (return the new object's index) ------------------------------------
    def add_node(self, node: Node, parent: int | None = None) -> int:
        self.nodes.append(node)
        i = len(self.nodes) - 1
        if parent is None:
            self.roots.append(i)
        else:
            self.nodes[parent].children.append(i)
        return i

    def add_mesh(self, mesh: Mesh) -> int:
        self.meshes.append(mesh)
        return len(self.meshes) - 1

    def add_material(self, material: Material) -> int:
        self.materials.append(material)
        return len(self.materials) - 1

    def add_image(self, image: Image) -> int:
        self.images.append(image)
        return len(self.images) - 1

    def add_light(self, light: Light) -> int:
        self.lights.append(light)
        return len(self.lights) - 1

    def add_skin(self, skin: Skin) -> int:
        self.skins.append(skin)
        return len(self.skins) - 1

    def note(self, code: str, message: str, level: Literal["info", "warning"] = "warning") -> None:
        self.notes.append(Note(code, message, level))

    def parents(self) -> list[int | None]:
        out: list[int | None] = [None] * len(self.nodes)
        for i, n in enumerate(self.nodes):
            for c in n.children:
                if 0 <= c < len(out):
                    out[c] = i
        return out

    def walk(self) -> list[int]:
        """Node indices in depth-first order from the roots (iterative: no recursion limit)."""
        order: list[int] = []
        seen: set[int] = set()
        stack = list(reversed(self.roots))
        while stack:
            i = stack.pop()
            if i in seen or not 0 <= i < len(self.nodes):
                continue
            seen.add(i)
            order.append(i)
            stack.extend(reversed(self.nodes[i].children))
        return order

    def summary(self) -> dict[str, Any]:
        from .summary import summarize

        return summarize(self)

    def validate(self) -> None:
        from .validate import validate

        validate(self)
