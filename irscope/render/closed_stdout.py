"""A reader that closes stdout early (`irscope scan | head`) must not change the exit status.

Rich's Console exits 1 on a BrokenPipeError, and 1 is the gate's code (README "Exit codes"):
`irscope occupancy DIR | head` read as "a gate tripped". Here, once the reader is gone, stdout
is pointed at /dev/null (so no later write or the final flush fails either) and the command
runs to its end: its exit status is what it found, as it would be without the pipe.
"""

from __future__ import annotations

import os
import sys


def stdout_closed() -> None:
    """The reader of stdout went away: send what is still written to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def write_stdout(text: str) -> None:
    """sys.stdout.write, flushed; a closed stdout ends the output, not the command."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()


def console(**options):
    """A rich Console on stdout whose closed pipe ends the output, not the command (rich would exit 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            stdout_closed()

    return _Console(**options)
