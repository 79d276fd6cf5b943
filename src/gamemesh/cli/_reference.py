"""``docs/cli.md``, made from the parser the command runs (``python -m gamemesh.cli._reference
> docs/cli.md``); a test fails when the file and the parser disagree."""

from __future__ import annotations

import os

from ..registry import formats

_WIDTH = "100"


def render() -> str:
    from . import build_parser
    from .completion import _subparsers
    from .formats import describe

    # Help text wraps at the terminal's width: fix it, so the page does not depend on who ran it.
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = _WIDTH
    try:
        parser = build_parser()
        out = ["# gamemesh command line", "",
               "Generated from the parser by `python -m gamemesh.cli._reference > docs/cli.md`;"
               " `tests/test_cli_habits.py` fails when this page and the parser disagree.", "",
               "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub in _subparsers(parser).items():
            out += [f"## gamemesh {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
        out += ["## Format options", "",
                "Accepted by convert, info, thumbnail, textures, view, scan and batch; an "
                "option of a format the call does not involve is a usage error. "
                "`gamemesh formats NAME` prints one of these.", ""]
        for spec in formats():
            out += [f"### {spec.name}", "", "```text", describe(spec), "```", ""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")
