"""Pieces shared by the verbs: format options as flags, and printing JSON or text."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..registry import Option, formats

# Limits on what an input may cost, for every verb that reads files (api options of the same
# names): the defaults suit any real model, and a user with a larger one raises them.
LIMITS = (("max_input_size", "--max-input-size", "BYTES",
           "refuse inputs larger than this (default 4 GiB; suffixes K, M, G)"),
          ("max_image_pixels", "--max-image-pixels", "PIXELS",
           "refuse images decoding to more pixels than this (default 64M; suffixes K, M, G)"))


def _size(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    try:
        value = int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        msg = f"expected a whole number (suffixes K, M, G allowed), got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 1:
        msg = f"expected a positive number, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def add_format_options(parser: argparse.ArgumentParser) -> None:
    """Every format's options as flags, once each (several formats share ``--texture-dir``),
    and the input limits."""
    limits = parser.add_argument_group("input limits")
    for dest, flag, metavar, help_text in LIMITS:
        limits.add_argument(flag, dest=dest, type=_size, metavar=metavar, default=None,
                            help=help_text)
    seen: set[str] = set()
    group = parser.add_argument_group("format options")
    for spec in formats():
        for opt in spec.options:
            if opt.name in seen:
                continue
            seen.add(opt.name)
            _add_option(group, opt, spec.name)


def _add_option(group: Any, opt: Option, fmt: str) -> None:
    help_text = f"[{fmt}] {opt.help}"
    if opt.type is bool:
        group.add_argument(opt.flag, dest=opt.name, action="store_true", default=None,
                           help=help_text)
        return
    kwargs: dict[str, Any] = {"dest": opt.name, "type": opt.type, "default": None,
                              "help": help_text}
    if opt.choices:
        kwargs["choices"] = opt.choices
    if opt.multiple:
        kwargs["action"] = "append"
    group.add_argument(opt.flag, **kwargs)


def format_options(args: argparse.Namespace) -> dict[str, Any]:
    names = {o.name for s in formats() for o in s.options} | {d for d, *_ in LIMITS}
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
