"""One kernel: its findings, its Python source and every stage, cross-navigated by line.

Pick a Python line (Enter in Source) and the lines it became are marked in every stage;
pick an IR or ISA line and the view jumps to its Python line, with the same marks; pick a
finding and the view jumps to its line. The line maps (irscope/ir/line_map.py) are built in a
worker thread, so the screen opens before the TTGIR is read.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from irscope.ir.line_map import LineMap, line_map
from irscope.model.kernel import KernelReport, Problem
from irscope.model.errors import ArtifactError
from irscope.model.safe_text import printable, printable_message, shorten
from irscope.tui.code_view import CodeView
from irscope.tui.panels import LayoutPanel, OccupancyPanel
from irscope.tui.passes_view import PassesPanel
from irscope.tui.sources import gutter_for_isa, gutter_for_source, read_python_source, source_styles

STAGES = ("ttir", "ttgir", "llir", "amdgcn", "ptx", "json")


class KernelScreen(Screen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("backspace", "back", "Back", show=False),
        Binding("slash", "search", "Search"),
        Binding("c", "copy_path", "Copy path"),
        # Before the focused widget: a what-if field would swallow them (the search box, which consumes
        # every printable key, still types them: `v[2:3]`).
        Binding("right_square_bracket", "tab(1)", "Next tab", priority=True),
        Binding("left_square_bracket", "tab(-1)", "Previous tab", show=False, priority=True),
        *(Binding(str(n), f"tab_number({n})", f"Tab {n}", show=False) for n in range(1, 10)),
    ]

    def __init__(self, report: KernelReport, source_dirs: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.report = report
        self.source_dirs = source_dirs
        self.maps: dict[str, LineMap] = {}
        self.python_file: str | None = None
        self.python_line: int | None = None

    # -- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        k = self.report.kernel
        arch = k.target.arch if k.target else "?"
        yield Static(Text(printable(f"{shorten(k.name)}  {shorten(arch)}  {k.directory}")), id="title")
        yield Input(placeholder="search this tab", id="search")
        with TabbedContent(id="tabs"):
            with TabPane("Findings", id="findings"):
                yield OptionList(*self._finding_options(), id="finding-list")
            with TabPane("Source", id="source"):
                yield self._source_view()
            for stage in self._stages():
                with TabPane(stage.upper(), id=stage):
                    yield self._stage_view(stage)
            if self.report.occupancy is not None:
                with TabPane("Occupancy", id="occupancy"):
                    yield OccupancyPanel(self.report)
            with TabPane("Layouts", id="layouts"):
                yield LayoutPanel(self.report)
            if self.report.passes is not None:
                with TabPane("Passes", id="passes"):
                    yield PassesPanel(self.report)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#search", Input).display = False
        findings = self.query_one("#finding-list", OptionList)
        findings.highlighted = 0
        findings.focus()
        self.build_maps()
        if "sass" in self._stages():
            self.disassemble()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # In Occupancy, digits and Backspace are the what-if's: they never switch tabs or close the view.
        if action in ("tab_number", "back") and self.query_one(TabbedContent).active == "occupancy":
            return False
        return True

    def action_back(self) -> None:
        self.app.pop_screen()

    def _tab_ids(self) -> list[str]:
        return [pane.id for pane in self.query(TabPane)]

    def action_tab(self, step: int) -> None:
        ids = self._tab_ids()
        tabs = self.query_one(TabbedContent)
        self._show_tab(ids[(ids.index(tabs.active) + step) % len(ids)])

    def action_tab_number(self, number: int) -> None:
        ids = self._tab_ids()
        if number <= len(ids):
            self._show_tab(ids[number - 1])

    def _show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab(tab)

    def _focus_tab(self, tab: str) -> None:
        """Focus what the tab is worked with (its text, list or first what-if field), so arrows,
        Enter and typing act on the tab shown, not on the one left."""
        pane = self.query_one(f"#{tab}", TabPane)
        for kind in (CodeView, OptionList, Input):
            found = [w for w in pane.query(kind) if w.focusable]
            if found:
                found[0].focus()
                return
        others = [w for w in pane.query("*") if w.focusable]
        if others:
            others[0].focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.tabbed_content.id != "tabs":
            return
        focused = self.focused
        if focused is None or focused.id == "search" or event.pane not in focused.ancestors:
            self._focus_tab(event.pane.id)  # a click on a tab, or ] [ 1-9
        # A view scrolled while its tab was hidden did not move: put its cursor line in view now.
        view = self._active_view()
        if view is not None and view.cursor > 1:
            view.call_after_refresh(view.center)

    def _stages(self) -> list[str]:
        stages = [s for s in STAGES if self.report.kernel.artifact(s) is not None]
        if self.report.kernel.artifact("cubin") is not None:  # SASS: disassembled when the view opens
            stages.insert(stages.index("ptx") + 1 if "ptx" in stages else len(stages), "sass")
        return stages

    def _stage_view(self, stage: str) -> CodeView:
        if stage == "sass":
            return CodeView("sass", "disassembling the cubin with nvdisasm ...", id="view-sass")
        artifact = self.report.kernel.artifact(stage)
        try:
            text = artifact.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            text = f"cannot read {artifact.path}: {exc.strerror}"
        except ArtifactError as exc:  # over the size limit
            text = f"not shown: {exc}"
        gutter = gutter_for_isa(self.report, stage) if stage in ("amdgcn", "ptx") else {}
        return CodeView(stage, text, gutter, id=f"view-{stage}")

    def _source_view(self) -> Vertical | CodeView:
        mix_files = {p.file for m in self.report.mix for p in m.python_lines}
        self.python_file, text = read_python_source(self.report, mix_files, self.source_dirs)
        return CodeView("source", text, gutter_for_source(self.report, self.python_file),
                        line_styles=source_styles(self.report, self.python_file), id="view-source")

    def _finding_options(self) -> list[Option]:
        options = []
        for i, f in enumerate(self.report.findings):
            where = f"py:{f.python_line}" if f.python_line is not None else f"{f.stage}:{f.line}"
            label = Text.assemble((f"{f.severity} {f.code} ", "bold"), printable(f"{f.slug}  {where}\n  "),
                                  printable_message(f.message), ("\n  fix: " + printable(f.fix), "dim"))
            options.append(Option(label, id=str(i)))
        if not options:
            options.append(Option(Text("no findings"), id="none", disabled=True))
        return options

    @work(thread=True, group="sass")
    def disassemble(self) -> None:
        """The SASS tab's text: the cubin through nvdisasm (irscope/isa/nvtools.py; the same text that
        `scan --sass` counted, so the mix's lines fit it)."""
        from irscope.isa.nvtools import disassemble

        cubin = self.report.kernel.artifact("cubin")
        try:  # the harvested cubin (or, from a saved report, the one its digest names), never another
            text, problem = disassemble(cubin.path, data=cubin.read_bytes())
        except (OSError, ArtifactError) as exc:
            text, problem = None, Problem(cubin.path, str(exc) if isinstance(exc, ArtifactError)
                                          else f"cannot read {cubin.path}: {exc.strerror}")
        if text is None:
            text, problem = f"no SASS: {problem.message if problem else 'nvdisasm failed'}", None
        self.app.call_from_thread(self._sass_ready, text, problem.message if problem else None)

    def _sass_ready(self, text: str, warning: str | None) -> None:
        self.query_one("#view-sass", CodeView).load(text, gutter_for_isa(self.report, "sass"))
        if warning:  # cuobjdump's SASS, without source lines
            self.notify(printable(warning), severity="warning", markup=False)

    # -- line maps -------------------------------------------------------------------------
    @work(thread=True, exclusive=True)
    def build_maps(self) -> None:
        maps = {}
        for stage in self._stages():
            found = line_map(self.report, stage)
            if found is not None:
                maps[stage] = found
        self.app.call_from_thread(self._maps_ready, maps)

    def _maps_ready(self, maps: dict[str, LineMap]) -> None:
        self.maps = maps

    # -- cross-navigation --------------------------------------------------------------------
    def on_code_view_picked(self, event: CodeView.Picked) -> None:
        if event.view.stage == "source":
            self.show_python_line(event.line, jump=False)
            return
        found = self.maps.get(event.view.stage)
        line = found.to_python.get(event.line) if found else None
        if line is None:
            self.notify(f"line {event.line} of {event.view.stage} has no Python line", severity="warning",
                        markup=False)
            return
        self.show_python_line(line, jump=True)

    def show_python_line(self, line: int, jump: bool) -> None:
        """Mark the lines one Python line became in every stage (and the line in Source)."""
        self.python_line = line
        self.query_one("#view-source", CodeView).mark({line})
        for stage, found in self.maps.items():
            lines = found.lines_of(line)
            view = self.query_one(f"#view-{stage}", CodeView)
            view.mark(lines)
            if lines:
                view.go_to(lines[0])
        if jump:
            self.query_one(TabbedContent).active = "source"
        self.query_one("#view-source", CodeView).go_to(line)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id != "finding-list" or event.option.id in (None, "none"):
            return
        finding = self.report.findings[int(event.option.id)]
        if finding.python_line is not None:
            self.show_python_line(finding.python_line, jump=True)
        if finding.stage in self._stages() and finding.line is not None:
            self.query_one(TabbedContent).active = finding.stage
            view = self.query_one(f"#view-{finding.stage}", CodeView)
            view.mark(finding.lines or (finding.line,))
            view.go_to(finding.line)
            view.focus()

    # -- search, copy ------------------------------------------------------------------------
    def _active_view(self) -> CodeView | None:
        active = self.query_one(TabbedContent).active
        views = self.query(f"#view-{active}")
        return views.first(CodeView) if views else None

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        view = self._active_view()
        event.input.display = False
        if view is not None:
            if view.search(event.value) is None:
                self.notify(printable(f"not found: {event.value}"), severity="warning", markup=False)
            view.focus()

    def action_copy_path(self) -> None:
        view = self._active_view()
        artifact = self.report.kernel.artifact(view.stage) if view and view.stage != "source" else None
        path = artifact.path if artifact else (self.python_file or self.report.kernel.directory)
        self.app.copy_to_clipboard(path)
        self.notify(printable(f"copied {path}"), markup=False)
