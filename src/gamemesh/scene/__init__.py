"""The common scene model (glTF conventions), its validation, summary and math helpers."""

from __future__ import annotations

from .model import (
    CLAMP_TO_EDGE,
    LINEAR,
    LINEAR_MIPMAP_LINEAR,
    MIRRORED_REPEAT,
    NEAREST,
    REPEAT,
    Animation,
    Channel,
    Image,
    Light,
    Material,
    Mesh,
    MorphTarget,
    Node,
    Primitive,
    Sampler,
    Scene,
    Skin,
    TextureRef,
)
from .summary import summarize
from .validate import InvalidSceneError, problems, validate

__all__ = [
    "CLAMP_TO_EDGE",
    "LINEAR",
    "LINEAR_MIPMAP_LINEAR",
    "MIRRORED_REPEAT",
    "NEAREST",
    "REPEAT",
    "Animation",
    "Channel",
    "Image",
    "InvalidSceneError",
    "Light",
    "Material",
    "Mesh",
    "MorphTarget",
    "Node",
    "Primitive",
    "Sampler",
    "Scene",
    "Skin",
    "TextureRef",
    "problems",
    "summarize",
    "validate",
]
