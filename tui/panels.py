"""The kernel view's panels: occupancy with a what-if, the layout conversions, the pass timeline."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Label, Static

from irscope.model.kernel import KernelReport, Origin
from irscope.occupancy.calculator import Input as OccupancyInput
from irscope.occupancy.calculator import occupancy_for
from irscope.render.occupancy import occupancy_table
from irscope.model.safe_text import printable

# Where a what-if value came from here (the CLI's occupancy.WHAT_IF says "given on the command line").
TYPED_HERE = Origin("what-if", None, "typed here")


class WhatIfField(Input):
    """A number field. It claims only the keys of a number, so `]` and `[` still switch tabs from
    it (a plain Input claims every printable key, and the screen's bindings never see them)."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and (character.isdigit() or character == "-")


class OccupancyPanel(VerticalScroll):
    """The kernel's occupancy, and the same calculator on values the user types."""

    def __init__(self, report: KernelReport) -> None:
        super().__init__()
        self.report = report
        occ = report.occupancy
        self.arch = occ.occupancy.arch
        self.values = {i.name: i.value for i in occ.inputs}
        self.inputs = {i.name: i for i in occ.inputs}

    def compose(self) -> ComposeResult:
        yield Static(occupancy_table("As compiled", self.report.occupancy), id="as-compiled")
        yield Label(Text("What if (Enter to recompute):", style="bold"))
        with Horizontal(id="what-if-inputs"):
            for name, value in self.values.items():
                with Vertical(classes="what-if-field"):
                    yield Label(name)
                    yield WhatIfField(str(value), id=f"what-if-{name}", type="integer")
        yield Static(Text(""), id="what-if-result")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not (event.input.id or "").startswith("what-if-"):
            return
        event.stop()
        self.recompute()

    def recompute(self) -> None:
        values = {}
        for name in self.values:
            text = self.query_one(f"#what-if-{name}", Input).value.strip()
            values[name] = int(text) if text.lstrip("-").isdigit() else self.values[name]
        # A value left as compiled keeps the artifact line it came from; one changed was typed here.
        inputs = {name: self.inputs[name] if value == self.values[name] else OccupancyInput(name, value, TYPED_HERE)
                  for name, value in values.items()}
        result = self.query_one("#what-if-result", Static)
        try:
            result.update(occupancy_table("What if (typed here)", occupancy_for(self.arch, values, inputs)))
        except ValueError as exc:
            result.update(Text(printable(str(exc)), style="red"))


class LayoutPanel(VerticalScroll):
    def __init__(self, report: KernelReport) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        summary = self.report.layouts
        if summary is None:
            yield Static(Text("No TTGIR was read for this kernel."))
            return
        text = Text()
        text.append(f"{len(summary.conversions)} convert_layout, {len(summary.round_trips)} LDS round trips\n",
                    style="bold")
        for c in summary.conversions:
            loop = "in loop" if c.in_loop else "outside loops"
            py = f"py:{c.python_line}" if c.python_line else "py:-"
            text.append(printable(f"  ttgir:{c.line} {py} {loop} {c.lowering}: {c.source} -> {c.target}\n"))
        for t in summary.round_trips:
            loop = "in loop" if t.in_loop else "outside loops"
            text.append(printable(f"  round trip py:{t.python_line or '-'} {loop}"
                                  f"{' feeds dot' if t.feeds_dot else ''}: {t.stored} -> {t.loaded}\n"))
        yield Static(text)
