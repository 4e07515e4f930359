"""What the command line says when it is given something it cannot use: a near miss of a command, an
option or a choice gets "did you mean ...?", the same on every Python irscope supports (argparse's own
suggestions, 3.14's suggest_on_error, differ by version and are never turned on here).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Iterable, NoReturn, Sequence


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


class Parser(argparse.ArgumentParser):
    """argparse with one "did you mean" for every kind of typo. Subparsers are made of this class too
    (add_subparsers takes the parser's own class)."""

    _argv: list[str] = []

    def parse_known_args(self, args: Sequence[str] | None = None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)  # which command an unknown option follows
        return super().parse_known_args(args, namespace)

    def _check_value(self, action: argparse.Action, value) -> None:
        # argparse's own check, with the message spelled the same on 3.10 to 3.14
        if action.choices is None or value in action.choices:
            return
        choices = ", ".join(map(str, action.choices))
        guess = nearest(value, map(str, action.choices)) if isinstance(value, str) else None
        hint = f"; did you mean {guess!r}?" if guess else ""
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {choices})")

    def error(self, message: str) -> NoReturn:
        unknown = "unrecognized arguments: "
        if message.startswith(unknown):
            hints = [f"{word} (did you mean {guess}?)" if guess else word
                     for word in message[len(unknown):].split(" ")
                     for guess in [self._nearest_option(word)]]
            message = unknown + " ".join(hints)
        super().error(message)

    def _nearest_option(self, word: str) -> str | None:
        if not word.startswith("-"):
            return None
        name = word.split("=", 1)[0]
        return nearest(name, _long_options(self._command_parser()))

    def _command_parser(self) -> argparse.ArgumentParser:
        """The subcommand's parser when argv names one, else this one."""
        commands = next((a.choices for a in self._actions if isinstance(a, argparse._SubParsersAction)), {})
        return next((commands[w] for w in self._argv if w in commands), self)


def _long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [s for action in parser._actions for s in action.option_strings if s.startswith("--")]


def add_debug_everywhere(commands: Iterable[argparse.ArgumentParser], help_text: str) -> None:
    """--debug after the command as well as before it (`irscope scan --debug X`). SUPPRESS: a command
    without it leaves the top level's value alone instead of resetting it to False."""
    for parser in commands:
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=help_text)


def add_usage_line(parser: argparse.ArgumentParser, form: str) -> None:
    """A second usage line under argparse's own (`irscope scan ... SCRIPT.py [-- ARGS ...]`), which it cannot
    draw: the words after `--` are never parsed. Call once every argument is added."""
    color = getattr(parser, "color", None)
    parser.color = False  # 3.14+ would colour this text once, for whatever reads it later
    own = parser.format_usage().removeprefix("usage: ").rstrip().replace("%", "%%")
    parser.color = color
    parser.usage = f"{own}\n       {parser.prog} {form}"


def no_default_cache(command: str) -> str | None:
    """Why `irscope COMMAND` without PATH has nothing to read: where it looked for Triton's cache (the
    variables, and the directory they led to), and the PATH to give instead. None when the cache exists."""
    import os

    from irscope.pipeline.harvester import default_cache_dir

    where = default_cache_dir()
    if where.exists():
        return None
    if os.environ.get("TRITON_CACHE_DIR"):
        looked = f"$TRITON_CACHE_DIR is {where}, which does not exist"
    else:
        home = "$TRITON_HOME/.triton/cache" if os.environ.get("TRITON_HOME") else "~/.triton/cache"
        unset = "$TRITON_CACHE_DIR is not set" + ("" if os.environ.get("TRITON_HOME") else ", nor $TRITON_HOME")
        looked = f"{unset}, and {home} ({where}) does not exist"
    script = ", or `irscope scan SCRIPT.py [-- ARGS ...]` to run a script and scan the kernels it compiles" \
        if command == "scan" else ""
    return (f"no Triton cache found: {looked}. Give a PATH: `irscope {command} DIR` with DIR a Triton cache, "
            f"a torch inductor cache or a TRITON_KERNEL_DUMP directory{script}; or point TRITON_CACHE_DIR at a cache")
