"""The ``gamemesh`` command. Each verb is a module in this package with ``HELP``,
``add_args(parser)`` and ``run(args) -> int``; verbs are discovered, so a new one is a new file.

Exit codes: 0 success, 1 bad input (one line ``gamemesh: error: FILE: message``), 2 usage.
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

from ..errors import FormatError
from ..scene import InvalidSceneError

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


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(prog="gamemesh", description="Read, write and convert game 3D formats "
                     "(Papa, PMF, SPLASHPACK, PBA/PTX, PET) to and from glTF 2.0.")
    parser.add_argument("--version", action="version", version=f"gamemesh {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for name, mod in _verbs().items():
        p = sub.add_parser(name, help=getattr(mod, "HELP", ""),
                           description=getattr(mod, "HELP", ""))
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks")
        mod.add_args(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "verb", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args))
    except FormatError as e:
        return _fail(args, f"{e.path or getattr(args, 'src', '') or '-'}: {e}", 1)
    except InvalidSceneError as e:
        return _fail(args, f"{getattr(args, 'src', '-')}: {e}", 1)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        return _fail(args, f"{e.filename}: {e.strerror}", 1)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except OSError as e:  # a full disk, an I/O error: the file it hit and why, in one line
        return _fail(args, f"{e.filename or '-'}: {e.strerror or e}", 1)
    except ValueError as e:  # unknown format names, unusable destinations: the call's words
        return _fail(args, str(e), 2)
    except KeyboardInterrupt:
        print("gamemesh: interrupted", file=sys.stderr)
        return 130


def _quiet_broken_pipe() -> int:
    # The reader went away (`gamemesh info x | head`): stop quietly, as SIGPIPE would, and
    # point stdout at /dev/null so the interpreter's final flush does not raise again.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    if getattr(args, "debug", False):
        traceback.print_exc()
    print(f"gamemesh: error: {message}", file=sys.stderr)
    return code
