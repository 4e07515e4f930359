"""One artifact's text, drawn a line at a time: a 50,000-line ISA listing opens at once.

Each visible line is built from its number, a gutter (what the instruction mix counts on
that line) and the text itself, always as plain segments: nothing in an artifact is read as
markup, and control characters are shown, never sent to the terminal.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from irscope.model.safe_text import printable
from irscope.tui.highlight import highlighter_for

_NUMBER = Style(color="grey50")
_GUTTER = Style(color="cyan")
_CURSOR = Style(bgcolor="grey23")
_MARKED = Style(bgcolor="dark_blue")
_MATCH = Style(bgcolor="dark_goldenrod")


class CodeView(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "move(-20)", "Page up", show=False),
        Binding("pagedown", "move(20)", "Page down", show=False),
        Binding("home,g", "go(1)", "Top", show=False),
        Binding("end,G", "go(-1)", "End", show=False),
        Binding("enter", "pick", "Pick line"),
        Binding("n", "next_match", "Next match"),
    ]

    class Picked(Message):
        """The user picked a line (Enter): cross-navigation starts here."""

        def __init__(self, view: "CodeView", line: int) -> None:
            super().__init__()
            self.view = view
            self.line = line

    def __init__(self, stage: str, text: str, gutter: dict[int, str] | None = None,
                 line_styles: dict[int, Style] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.stage = stage
        self.highlight = highlighter_for(stage)
        self.load(text, gutter, line_styles)

    def load(self, text: str, gutter: dict[int, str] | None = None,
             line_styles: dict[int, Style] | None = None) -> None:
        """Show this text (the cursor back at line 1)."""
        # Tabs expanded: a tab cell would leave what was drawn under it on the screen.
        self.lines = [printable(line.expandtabs(8)) for line in text.splitlines()] or [""]
        self.mix_gutter = gutter or {}
        self.line_styles = line_styles or {}  # a line's own color (a diff's + and -)
        self.mix_width = max((len(g) for g in self.mix_gutter.values()), default=0)
        self.number_width = len(str(len(self.lines)))
        self.cursor = 1  # 1-based, as artifact lines are
        self.marked: frozenset[int] = frozenset()
        self.pattern = ""
        self._strips: dict[int, Strip] = {}
        width = self.number_width + 1 + (self.mix_width + 1 if self.mix_width else 0) + \
            max(len(line) for line in self.lines)
        self.virtual_size = Size(width, len(self.lines))
        if self.is_mounted:
            self.scroll_to(0, 0, animate=False)
            self.refresh()

    # -- what the app asks of a view ---------------------------------------------------------
    def mark(self, lines) -> None:
        self.marked = frozenset(lines)
        self._strips.clear()
        self.refresh()

    def go_to(self, line: int) -> None:
        self.cursor = max(1, min(len(self.lines), line))
        self._strips.clear()
        self.center()
        # A view in a tab that is not shown yet has no height: center again once laid out
        # (and again when its tab is shown: KernelScreen.on_tabbed_content_tab_activated).
        self.call_after_refresh(self.center)
        self.refresh()

    def center(self) -> None:
        self.scroll_to(y=max(0, self.cursor - 1 - self.size.height // 2), animate=False)

    def search(self, pattern: str) -> int | None:
        """Move to the next line holding `pattern` (case-insensitive); its number, or None."""
        self.pattern = pattern.lower()
        self._strips.clear()
        return self.action_next_match()

    # -- actions -----------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        self.go_to(self.cursor + delta)

    def action_go(self, where: int) -> None:
        self.go_to(1 if where > 0 else len(self.lines))

    def action_pick(self) -> None:
        self.post_message(self.Picked(self, self.cursor))

    def action_next_match(self) -> int | None:
        if not self.pattern:
            return None
        count = len(self.lines)
        for step in range(1, count + 1):
            line = (self.cursor - 1 + step) % count + 1
            if self.pattern in self.lines[line - 1].lower():
                self.go_to(line)
                return line
        return None

    # -- drawing -----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y + 1
        if line > len(self.lines):
            return Strip.blank(self.size.width)
        strip = self._strip(line)
        # Exactly the width: a shorter strip would leave the previous frame's cells behind.
        return strip.crop_extend(scroll_x, scroll_x + self.size.width, None)

    def _strip(self, line: int) -> Strip:
        if line in self._strips:
            return self._strips[line]
        if len(self._strips) > 4096:  # a screenful at a time is what is ever needed
            self._strips.clear()
        self._strips[line] = strip = self._build(line)
        return strip

    def _build(self, line: int) -> Strip:
        text = self.lines[line - 1]
        base = _CURSOR if line == self.cursor else (_MARKED if line in self.marked else Style())
        segments = [Segment(f"{line:>{self.number_width}} ", _NUMBER + base)]
        if self.mix_width:
            segments.append(Segment(f"{self.mix_gutter.get(line, ''):<{self.mix_width}} ", _GUTTER + base))
        if self.pattern and self.pattern in text.lower():
            segments.append(Segment(text, _MATCH + base))
        elif line in self.line_styles:
            segments.append(Segment(text, self.line_styles[line] + base))
        elif self.highlight is not None:
            segments.extend(Segment(piece, style + base) for piece, style in _colored(self.highlight, text))
        else:
            segments.append(Segment(text, base))
        return Strip(segments)


def _colored(highlight, text: str) -> list:
    try:
        return highlight(text)
    except Exception:  # noqa: BLE001 - a lexer that chokes on a line costs its colors, not the view
        return [(text, Style())]
