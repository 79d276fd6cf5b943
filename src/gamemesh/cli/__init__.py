"""The ``gamemesh`` command. Each verb is a module in this package with ``HELP``,
``add_args(parser)`` and ``run(args) -> int`` (and optionally ``EXAMPLES``, shown under its
help, and ``FORMAT_OPTIONS = True`` when it takes the formats' options); verbs are discovered,
so a new one is a new file.

Exit codes: 0 success, 1 bad input (one line ``gamemesh: error: FILE: message``; with
``--json``, ``{"error": {...}}`` on stdout), 2 usage.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from .. import allocator
from ._common import FORMAT_OPTIONS_LINE, Settings, add_format_options, emit_json, error_fields

__all__ = ["main"]


def _verbs() -> dict[str, ModuleType]:
    pkg = importlib.import_module(__name__)
    out: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "run") and hasattr(mod, "add_args"):
            out[getattr(mod, "NAME", info.name)] = mod
    return dict(sorted(out.items()))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"gamemesh: usage error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _epilog(mod: ModuleType) -> str:
    parts = []
    examples = [e for e in getattr(mod, "EXAMPLES", ()) if e]
    if examples:
        parts.append("examples:\n" + "\n".join(f"  {e}" for e in examples))
    if getattr(mod, "FORMAT_OPTIONS", False):
        parts.append(FORMAT_OPTIONS_LINE)
    return "\n\n".join(parts)


def build_parser(all_options_shown: bool = False) -> argparse.ArgumentParser:
    """The command's parser. ``all_options_shown`` puts the formats' options in each verb's
    help (the completion scripts need them; the help people read lists them apart)."""
    from .. import __version__

    parser = _Parser(prog="gamemesh", description="Read, write and convert game 3D formats "
                     "(Papa, PMF, SPLASHPACK, PBA/PTX, PET) to and from glTF 2.0.",
                     epilog="`gamemesh VERB --help` shows a verb's options and examples.")
    parser.add_argument("--version", action="version", version=f"gamemesh {__version__}",
                        help="print the program's version and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for name, mod in _verbs().items():
        p = sub.add_parser(name, help=getattr(mod, "HELP", ""),
                           description=getattr(mod, "HELP", ""), epilog=_epilog(mod),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks")
        mod.add_args(p)
        if getattr(mod, "FORMAT_OPTIONS", False):
            add_format_options(p, all_options_shown)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:
        # Answered before the parser is built (every verb's module and every format's options):
        # the commonest "is it installed?" call costs the interpreter's start and nothing more.
        from .. import __version__

        print(f"gamemesh {__version__}")
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "verb", None):
        parser.print_help(sys.stderr)
        return 2
    Settings.debug = bool(getattr(args, "debug", False))
    allocator.tune()
    try:
        return int(args._run(args))
    except BrokenPipeError:
        # The reader went away (`gamemesh info x | head`): stop quietly, as SIGPIPE would, and
        # point stdout at /dev/null so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (ValueError, OSError) as e:
        fields = error_fields(e, str(getattr(args, "src", "") or "-"))
        if fields is not None:
            return _fail(args, fields, 1)
        if isinstance(e, OSError):
            raise
        # Unknown format names, unusable destinations: the call's words.
        return _fail(args, {"message": str(e), "type": "UsageError"}, 2)
    except KeyboardInterrupt:
        print("gamemesh: interrupted", file=sys.stderr)
        return 130


def _fail(args: argparse.Namespace, fields: dict[str, object], code: int) -> int:
    if getattr(args, "debug", False):
        traceback.print_exc()
    if getattr(args, "json", False):
        # A script reading --json output gets the failure in the same shape, on stdout.
        emit_json({"error": {**fields, "exit_status": code}})
    where = f"{fields['file']}: " if "file" in fields else ""
    # The call's words (exit 2) read as argparse's own usage errors do.
    kind = "usage error" if code == 2 else "error"
    print(f"gamemesh: {kind}: {where}{fields['message']}", file=sys.stderr)
    return code
