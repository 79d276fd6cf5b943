"""Pieces shared by the verbs: format options as flags, and printing JSON or text."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..registry import Option, formats


def add_format_options(parser: argparse.ArgumentParser) -> None:
    """Every format's options as flags, once each (several formats share ``--texture-dir``)."""
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
    names = {o.name for s in formats() for o in s.options}
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
