"""Pieces shared by the verbs: format options as flags, several inputs and an output folder,
one error shape for text and JSON, and printing JSON."""

from __future__ import annotations

import argparse
import glob
import json
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..registry import FormatSpec, Option, by_extension, by_name, formats, unknown_format

# The ``format`` of errors that belong to no format (a directory given, an unknown file).
GENERAL = "gamemesh"
FORMAT_OPTIONS_LINE = "format options: see `gamemesh formats NAME` (they parse here too)"
STDIO = "-"

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


class Settings:
    """Process-wide switches of the command line (set once by ``main``)."""

    debug = False


class UsageError(ValueError):
    """The call's words are wrong (exit 2), not the data."""


def add_format_options(parser: argparse.ArgumentParser, shown: bool = False) -> None:
    """Every format's options as flags, once each (several formats share ``--texture-dir``).
    They parse on every verb that reads or writes models but stay out of its help (``shown``:
    in it, for the completion scripts): ``gamemesh formats NAME`` lists a format's options.
    The input limits are flags of every such verb, always in its help."""
    limits = parser.add_argument_group("input limits")
    for dest, flag, metavar, help_text in LIMITS:
        limits.add_argument(flag, dest=dest, type=_size, metavar=metavar, default=None,
                            help=help_text)
    seen: set[str] = set()
    for spec in formats():
        for opt in spec.options:
            if opt.name in seen:
                continue
            seen.add(opt.name)
            _add_option(parser, opt, f"[{spec.name}] {opt.help}" if shown else argparse.SUPPRESS)


def option_kwargs(opt: Option, help_text: str) -> dict[str, Any]:
    """argparse keywords of a format option (shared with ``gamemesh formats NAME``)."""
    if opt.type is bool:
        return {"dest": opt.name, "action": "store_true", "default": None, "help": help_text}
    kwargs: dict[str, Any] = {"dest": opt.name, "type": opt.type, "default": None,
                              "help": help_text}
    if opt.choices:
        kwargs["choices"] = opt.choices
    if opt.multiple:
        kwargs["action"] = "append"
    return kwargs


def _add_option(group: Any, opt: Option, help_text: str) -> None:
    group.add_argument(opt.flag, **option_kwargs(opt, help_text))


def format_options(args: argparse.Namespace) -> dict[str, Any]:
    names = {o.name for s in formats() for o in s.options} | {d for d, *_ in LIMITS}
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def check_involved(options: dict[str, Any], specs: Iterable[FormatSpec]) -> None:
    """An option of a format the call does not touch is a mistake said out loud (``convert
    a.glb b.glb --state BASE`` would otherwise do nothing, silently)."""
    involved = list({s.name: s for s in specs}.values())
    known = {o.name for s in involved for o in s.options} | {d for d, *_ in LIMITS}
    for name in sorted(options):
        if name in known:
            continue
        flag = "--" + name.replace("_", "-")
        owners = [s.name for s in formats() if any(o.name == name for o in s.options)]
        names = " and ".join(s.name for s in involved) or "no format"
        msg = (f"{flag} is an option of {', '.join(owners)}; this call involves {names} "
               "(see `gamemesh formats NAME`)")
        raise UsageError(msg)


def source_spec(src: str, from_format: str | None, data: str | bytes | None = None
                ) -> FormatSpec:
    """The format of an input as the API will see it (``--from``, else content, else name);
    stdin's from its bytes (``data``, as :func:`open_input` read them)."""
    if from_format:
        return by_name(from_format)
    if src == STDIO:
        from .. import registry

        found = registry.sniff(data[:registry.SNIFF_BYTES]) if isinstance(data, bytes) else None
        if found is None:
            raise unknown_format(Path(STDIO))
        return found
    from ..api import sniff

    name = sniff(src)
    if name is None:
        raise unknown_format(Path(src))
    return by_name(name)


def target_spec(dst: str, to_format: str | None) -> FormatSpec:
    if to_format:
        return by_name(to_format)
    spec = by_extension(dst)
    if spec is None:
        msg = f"cannot tell the output format from {Path(dst).name!r}; give one with --to"
        raise UsageError(msg)
    return spec


# -- several inputs ------------------------------------------------------------------------

def expand_inputs(patterns: Iterable[str]) -> list[str]:
    """Inputs as given, with glob patterns expanded (for shells that do not, and for quoted
    patterns); a pattern matching nothing stays, to fail as a missing file."""
    out: list[str] = []
    for p in patterns:
        if p == STDIO or Path(p).exists() or not glob.has_magic(p):
            out.append(p)
            continue
        hits = sorted(glob.glob(p, recursive=True))
        out.extend(hits or [p])
    return out


def group_units(inputs: list[str], from_format: str | None,
                options: dict[str, Any]) -> tuple[list[str], dict[str, list[str]]]:
    """The inputs that are units (converted), and for each the other inputs its load reads (a
    Papa unit's textures and animations, a character's parts): grouped as ``batch`` groups
    them, so ``convert units/*.papa -o out/`` writes one file per unit. Inputs whose format is
    unknown stay as they are (they fail, by name, when converted)."""
    if options.get("no_siblings") or options.get("no_parts") or len(inputs) < 2:
        return inputs, {}
    from ..batch.discover import Candidate
    from ..batch.group import group

    found: list[Candidate] = []
    alone: list[str] = []
    for src in inputs:
        try:
            spec = source_spec(src, from_format)
            st = Path(src).stat()
        except (OSError, ValueError):
            alone.append(src)
            continue
        found.append(Candidate(Path(src).resolve(), src, st.st_size, st.st_mtime_ns, spec.name))
    units = group(found)
    members = {u.primary.rel: [m.rel for m in u.members] for u in units}
    keep = set(members) | set(alone)
    return [s for s in inputs if s in keep], {k: v for k, v in members.items() if v}


def output_paths(inputs: list[str], folder: str, ext: str) -> list[Path]:
    """``OUT/<input stem><ext>`` for each input; two inputs landing on one name is a usage
    error found before anything is written."""
    if STDIO in inputs:
        msg = "'-' (stdin) cannot be one of several inputs; give file names with -o"
        raise UsageError(msg)
    outs = [Path(folder) / (Path(i).stem + ext) for i in inputs]
    seen: dict[Path, str] = {}
    for src, out in zip(inputs, outs, strict=True):
        if out in seen:
            msg = f"{seen[out]} and {src} would both write {out}; convert them separately"
            raise UsageError(msg)
        seen[out] = src
    return outs


def error_fields(exc: BaseException, src: str) -> dict[str, Any] | None:
    """The error of one input as data (the text line and the JSON object share it); None when
    the exception is not an input's fault."""
    if isinstance(exc, FormatError):
        # An error of no format (a directory, an unknown file) names none: its message has no
        # "gamemesh: " head (the line has one) and its JSON no "format".
        message = str(exc)
        own = exc.format != GENERAL
        if not own and message.startswith(f"{GENERAL}: "):
            message = message[len(GENERAL) + 2:]
        out: dict[str, Any] = {"file": exc.path or src, "message": message,
                               **({"format": exc.format} if own else {}),
                               "type": type(exc).__name__}
        for k in ("offset", "field", "expected", "actual"):
            v = getattr(exc, k)
            if v is not None:
                out[k] = v
        return out
    if _invalid_scene(exc):
        return {"file": src, "message": str(exc), "type": type(exc).__name__}
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        # Missing, unreadable, a full disk: the file it hit, and why.
        return {"file": exc.filename or src, "message": exc.strerror or str(exc),
                "type": type(exc).__name__}
    return None


def _invalid_scene(exc: BaseException) -> bool:
    """A scene breaking the model's invariants. Only a loaded scene can raise one, so when the
    scene package was never imported (a usage error before any work) it is not imported now."""
    validate = sys.modules.get("gamemesh.scene.validate")
    return validate is not None and isinstance(exc, validate.InvalidSceneError)


def print_error(fields: dict[str, Any]) -> None:
    print(f"gamemesh: error: {fields['file']}: {fields['message']}", file=sys.stderr)


def each_input(inputs: list[str], work: Callable[[str], None],
               on_error: Callable[[dict[str, Any]], None] = print_error) -> int:
    """``work`` for every input; an input's own failure is reported and the rest still run.
    Exit status 1 when any failed. Usage errors stop everything (they would fail them all)."""
    failed = 0
    for src in inputs:
        try:
            work(src)
        except (FormatError, OSError, ValueError) as e:
            fields = error_fields(e, src)
            if fields is None:
                raise
            failed += 1
            if Settings.debug:
                traceback.print_exc()
            on_error(fields)
    return 1 if failed else 0


def open_input(src: str, options: dict[str, Any]) -> str | bytes:
    """A path as given; stdin (``-``) read whole now, at most ``--max-input-size`` bytes, so
    its format is sniffed from its content and it is read once."""
    if src != STDIO:
        return src
    from ..api import read_stream
    from ..safeio import MAX_INPUT_BYTES

    return read_stream(sys.stdin.buffer, options.get("max_input_size") or MAX_INPUT_BYTES)


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
