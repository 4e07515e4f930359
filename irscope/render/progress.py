"""The progress line of `irscope scan`, `diff` and `baseline` on stderr, when stderr is a terminal.

The pipeline knows nothing of it: it calls an `on_progress(ScanCounts)` hook (irscope/pipeline/analyze.py)
as kernels are harvested, read from the result index and analyzed; ProgressLine draws the counts
on one line of stderr, at most `interval` apart, and clears the line when the scan is done, so the
report printed next starts on a clean line. No thread: the pipeline forks its workers, and a thread
running at a fork can leave a lock held in the child. ASCII only: stderr may not be UTF-8.
A script run (`irscope scan script.py`) relays the script's output through a pseudo-terminal
(relay_child) so that a spinner can show while the script is quiet.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TextIO

from irscope.pipeline.analyze import ScanCounts
from irscope.model.safe_text import printable

SPINNER = "|/-\\"
BAR_WIDTH = 24


def shows_progress(stream: TextIO, quiet: bool = False) -> bool:
    """Progress only on a terminal that moves its cursor: never into a pipe, a file or a CI log."""
    if quiet or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


class ProgressLine:
    """One line of stderr redrawn in place (`\\r`, then erase to its end)."""

    def __init__(self, stream: TextIO, label: str = "", interval: float = 0.1, width: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.label, self.interval, self.clock = stream, printable(label), interval, clock
        self.width = width
        self.started = clock()
        self.drawn_at: float | None = None
        self.frame = 0
        self.latest: ScanCounts | None = None
        self.dirty = False  # something is on the line

    def __call__(self, counts: ScanCounts) -> None:
        """The pipeline's hook: draws when `interval` passed or the phase changed; the final counts are
        drawn, then cleared."""
        changed = self.latest is None or counts.phase != self.latest.phase
        self.latest = counts
        finished = counts.phase == "analyzing" and counts.done >= counts.kernels
        now = self.clock()
        if changed or finished or self.drawn_at is None or now - self.drawn_at >= self.interval:
            self._draw(self.text(counts, now), now)
        if finished:
            self.clear()  # what the command prints next (a line of the runner's, the other side of a diff) starts clean

    def spin(self, what: str) -> None:
        """A phase without counts (a script running): a spinner and the seconds so far."""
        now = self.clock()
        if self.drawn_at is None or now - self.drawn_at >= self.interval:
            self._draw(f"{self.label}{SPINNER[self.frame % len(SPINNER)]} {printable(what)} "
                       f"({now - self.started:.0f} s)", now)

    def text(self, counts: ScanCounts, now: float) -> str:
        elapsed = f"{now - self.started:.0f} s"
        if counts.phase != "analyzing":
            return f"{self.label}{SPINNER[self.frame % len(SPINNER)]} {counts.phase} kernels ({elapsed})"
        total = max(counts.kernels, 1)
        filled = BAR_WIDTH * counts.done // total
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        index = f" ({counts.from_index} from the index)" if counts.from_index else ""
        return f"{self.label}analyzing [{bar}] {counts.done}/{counts.kernels} kernels{index}, {elapsed}"

    def _draw(self, text: str, now: float) -> None:
        self.frame += 1
        self.drawn_at = now
        # One column short of the width: a line that fills it wraps on some terminals, and `\r`
        # would then return to the wrapped part only.
        self._write("\r" + text[:max(self._columns() - 1, 10)] + "\x1b[K")
        self.dirty = True

    def clear(self) -> None:
        if self.dirty:
            self._write("\r\x1b[K")
            self.dirty = False

    def _columns(self) -> int:
        if self.width is not None:
            return self.width
        if os.environ.get("COLUMNS", "").isdigit():
            return int(os.environ["COLUMNS"])
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80  # 0: a terminal of no set size
        except (AttributeError, ValueError, OSError):
            return 80

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a progress line never costs the scan
            pass


@contextmanager
def scan_progress(quiet: bool = False, label: str = "", stream: TextIO | None = None) -> Iterator[ProgressLine | None]:
    """The hook to hand to the pipeline, or None where nothing is shown (not a terminal, --quiet).
    The line is cleared on leaving, Ctrl-C and errors included: what is printed next starts clean."""
    stream = sys.stderr if stream is None else stream
    line = ProgressLine(stream, label) if shows_progress(stream, quiet) else None
    swapped = line is not None and sys.stderr is stream
    if swapped:
        sys.stderr = ClearingFirst(stream, line)  # type: ignore[assignment]
    try:
        yield line
    finally:
        if swapped:
            sys.stderr = stream
        if line is not None:
            line.clear()


class ClearingFirst:
    """sys.stderr while the line shows: a message printed meanwhile (the result index's, a warning)
    erases the line first, rather than being appended to it; the next update draws it again."""

    def __init__(self, stream: TextIO, line: ProgressLine) -> None:
        self._stream, self._line = stream, line

    def write(self, text: str) -> int:
        self._line.clear()
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


# After this long without output from the script, its last line ended, the spinner shows.
QUIET_FOR = 0.3


def relay_child(command: list[str], env: dict[str, str], line: ProgressLine, what: str) -> int:
    """Run a script's child process with its stdout and stderr on a pseudo-terminal whose output is
    copied to stderr, so that a "running script.py" spinner can share the line with it: the
    spinner is cleared before each piece of output, and drawn only while the script is quiet and
    its last line ended (a script's own `\\r` progress is left alone). The child still writes to a
    terminal (colours, its own progress bars) of the real one's size. Returns its exit code;
    Ctrl-C stops it as subprocess.run does (the exit code is then -SIGINT)."""
    import pty
    import select
    import signal
    import subprocess

    master, slave = pty.openpty()
    _like_the_real_terminal(line.stream, slave)
    try:
        child = subprocess.Popen(command, env=env, stdout=slave, stderr=slave)
    finally:
        os.close(slave)
    out = getattr(line.stream, "buffer", None)
    line_ended, last_output = True, time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], line.interval)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every holder of the terminal's other end has closed it
                    data = b""
                if not data:
                    break
                line.clear()
                _write_bytes(line.stream, out, data)
                line_ended, last_output = data.endswith(b"\n"), time.monotonic()
            elif child.poll() is not None:
                break  # a process the script left behind may hold the terminal open
            elif line_ended and time.monotonic() - last_output >= QUIET_FOR:
                line.spin(what)
        return child.wait()
    except KeyboardInterrupt:  # the script had its SIGINT too: a moment to end (and say so), as subprocess.run gives
        line.clear()
        _drain(master, line, time.monotonic() + 0.25)
        if child.poll() is None:
            child.kill()
        child.wait()
        return -signal.SIGINT
    finally:
        os.close(master)
        line.clear()


def _drain(master: int, line: ProgressLine, until: float) -> None:
    """Copy what the child still writes until it closes the terminal or `until` passes."""
    import select

    out = getattr(line.stream, "buffer", None)
    while (left := until - time.monotonic()) > 0:
        if not select.select([master], [], [], left)[0]:
            return
        try:
            data = os.read(master, 65536)
        except OSError:
            return
        if not data:
            return
        _write_bytes(line.stream, out, data)


def _like_the_real_terminal(stream: TextIO, fd: int) -> None:
    """The pseudo-terminal of the real one's size, passing bytes as written (no `\n` -> `\r\n`: the
    real terminal does that once)."""
    try:
        import fcntl
        import termios

        attributes = termios.tcgetattr(fd)
        attributes[1] &= ~termios.OPOST
        termios.tcsetattr(fd, termios.TCSANOW, attributes)
        size = fcntl.ioctl(stream.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, size)
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # the child's terminal keeps its defaults


def _write_bytes(stream: TextIO, buffer, data: bytes) -> None:
    try:
        if buffer is not None:
            stream.flush()
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode("utf-8", "replace"))
            stream.flush()
    except (OSError, ValueError):
        pass
