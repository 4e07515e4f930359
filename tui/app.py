"""The irscope browser: `irscope tui [PATH|REPORT]` and `irscope tui --diff BEFORE AFTER`.

The app is handed values the core made (a Report, or a DiffReport) and renders them; it
reads artifact text from disk to show it, and asks the core for line maps
(irscope/ir/line_map.py). Nothing outside this package imports textual.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

from irscope.diff.compare import DiffReport
from irscope.model.report import Report

INTERRUPTED = 130  # Ctrl-C: the status a shell gives a process ended by SIGINT

HELP = """irscope tui: keys

Kernel table   Enter open a kernel   / filter (name, arch, key, rule code)   Esc clear the filter
               s sort by the next column (or click a header)   r reverse the order
               key: the cache directory's first 8 characters (tells same-named kernels apart)
               f kernel families (the configs of one autotuned kernel)
Families       Enter a family's config sweep: a row per config, #1 the most serious,
               * the autotuner's pick; below it, why configs cannot launch and each
               finding once per rule and Python line, "in N of M configs"
               Enter on a config opens its kernel   Esc (or Backspace) back
Kernel view    ] next tab, [ previous, 1-9 a tab (or click it)   arrows, PgUp/PgDn, g/G move   Enter pick
               picking a Python line marks the lines it became in every stage;
               picking an IR/ISA line jumps to its Python line; Enter on a finding jumps to it
               / search in this tab, n next match   c copy the artifact's path   Esc (or Backspace) back
Occupancy tab  type VGPRs, LDS, warps (or registers, shared) and press Enter: the what-if
               digits and Backspace edit the fields here; ] [ switch tabs, Esc back
Diff           Enter show a pair's changes and a stage's text diff   t the next stage
               a open the pair's after kernel, b its before kernel   r regressions only
Everywhere     ? this help   q or Ctrl-Q quit   Ctrl-C quit with exit status 130
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def compose(self):
        yield Static(Text(HELP), id="help")


class IrscopeApp(App):
    TITLE = "irscope"
    CSS_PATH = "irscope.tcss"
    # Ctrl-C quits as it does every other command, with the exit status of an interrupt (the CLI
    # returns app.return_code); Textual's own binding would only say to press Ctrl-Q.
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("question_mark", "help", "Help"),
                Binding("ctrl+c", "interrupt", "Quit (130)", show=False, priority=True)]

    def __init__(self, report: Report | None = None, diff: DiffReport | None = None,
                 source_dirs: tuple[str, ...] = (), run=None, sides: tuple[Report, Report] | None = None) -> None:
        """One of: `report`, a finished scan; `run`, a pipeline.ScanRun whose results the kernel
        table shows as they arrive; `diff`, two builds compared, with `sides`, the two scans it was
        made of (for the stage diff and the kernels' views)."""
        super().__init__()
        self.sides = sides
        self.report = report
        self.diff = diff
        self.scan_run = run
        self.source_dirs = source_dirs

    def on_mount(self) -> None:
        if self.diff is not None:
            from irscope.tui.diff_view import DiffScreen

            self.push_screen(DiffScreen(self.diff, self.sides, self.source_dirs))
        else:
            from irscope.tui.kernels import KernelsScreen

            self.push_screen(KernelsScreen(self.report, self.source_dirs, run=self.scan_run))

    def action_interrupt(self) -> None:
        self.exit(return_code=INTERRUPTED)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())
