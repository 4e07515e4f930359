"""The pass timeline of a kernel (from `irscope scan script.py --dump`): the passes in order,
which changed the IR, and for the pass picked, what it changed.

The change is a unified diff of the IR before the pass and after it (the dump before the
next pass); the gutter gives each line's line in the dump, so every line shown can be found
in the file. The dump is read once, in a worker thread, through the core (pass_timeline).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from irscope.model.kernel import KernelReport
from irscope.model.errors import ArtifactError
from irscope.ir.pass_timeline import PassTimeline, dump_lines, pass_change
from irscope.model.safe_text import printable, shorten
from irscope.tui.code_view import CodeView

DIFF_STYLES = {"+": Style(color="green"), "-": Style(color="red"), "@": Style(color="cyan")}


def change_lines(t: PassTimeline, index: int, lines) -> tuple[str, list[str], dict[int, str]]:
    """(heading, diff lines, gutter: diff line -> `dump:N`) for pass `index`."""
    change = pass_change(t, index, lines)
    step = change.step
    first, last = change.before_lines
    heading = f"pass {step.index} {step.name}: IR before it at {t.path}:{first}-{last}"
    if change.after is None:
        return heading + "; nothing was dumped after it", [f" {line}" for line in change.before], \
            {i: f"dump:{first + i - 1}" for i in range(1, len(change.before) + 1)}
    after_first, after_last = change.after_lines
    heading += f", after it at {after_first}-{after_last}"
    if change.before == change.after:
        return heading + "; it changed nothing", [], {}
    diff: list[str] = []
    gutter: dict[int, str] = {}
    matcher = difflib.SequenceMatcher(None, change.before, change.after, autojunk=False)
    for group in matcher.get_grouped_opcodes(3):
        diff.append(f"@@ -{first + group[0][1]} +{after_first + group[0][3]} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for i in range(i1, i2):
                    diff.append(f" {change.before[i]}")
                    gutter[len(diff)] = f"dump:{first + i}"
                continue
            for i in range(i1, i2):
                diff.append(f"-{change.before[i]}")
                gutter[len(diff)] = f"dump:{first + i}"
            for j in range(j1, j2):
                diff.append(f"+{change.after[j]}")
                gutter[len(diff)] = f"dump:{after_first + j}"
    return heading, diff, gutter


class PassesPanel(Horizontal):
    def __init__(self, report: KernelReport) -> None:
        super().__init__()
        self.timeline: PassTimeline = report.passes
        self.lines: Sequence[str] | None = None

    def compose(self) -> ComposeResult:
        t = self.timeline
        options = []
        for p in t.passes:
            mark = "final TTGIR" if p.index == t.final_ttgir else ("changed" if p.changed else "-")
            options.append(Option(Text.assemble(f"{p.index:>3} ", printable(p.name), (f"  {mark}", "dim")),
                                  id=str(p.index)))
        yield OptionList(*options, id="pass-list")
        with Vertical(id="pass-change"):
            yield Static(Text(printable(f"{shorten(t.kernel or '?')}: {len(t.passes)} passes, {len(t.changed)} "
                                        f"changed the IR; pick one to see what it changed")), id="pass-heading")
            yield CodeView("pass", "", id="view-pass")

    def on_mount(self) -> None:
        self.read_dump()

    @work(thread=True, exclusive=True)
    def read_dump(self) -> None:
        try:
            lines = dump_lines(self.timeline)
        except (OSError, ArtifactError) as exc:  # gone, unreadable, cut or too large: said in the heading
            self.app.call_from_thread(self._heading, f"cannot read the dump: {exc}")
            return
        self.app.call_from_thread(self._dump_ready, lines)

    def _dump_ready(self, lines: Sequence[str]) -> None:
        self.lines = lines
        listing = self.query_one("#pass-list", OptionList)
        first_change = next((i for i, p in enumerate(self.timeline.passes) if p.changed), 0)
        listing.highlighted = first_change

    def _heading(self, text: str) -> None:
        self.query_one("#pass-heading", Static).update(Text(printable(text)))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id != "pass-list" or self.lines is None or event.option.id is None:
            return
        event.stop()
        self.show(int(event.option.id))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "pass-list":
            event.stop()
            self.query_one("#view-pass", CodeView).focus()

    def show(self, index: int) -> None:
        try:
            heading, diff, gutter = change_lines(self.timeline, index, self.lines)
        except ValueError as exc:
            heading, diff, gutter = str(exc), [], {}
        self._heading(heading)
        styles = {n: DIFF_STYLES[line[0]] for n, line in enumerate(diff, 1) if line[:1] in DIFF_STYLES}
        self.query_one("#view-pass", CodeView).load("\n".join(diff), gutter, styles)

    def on_code_view_picked(self, event: CodeView.Picked) -> None:
        if event.view.stage == "pass":
            event.stop()  # a diff line has no place in the kernel's line maps
