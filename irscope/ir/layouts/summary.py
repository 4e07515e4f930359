"""The layout facts a saved report keeps: each convert_layout and each LDS round trip.

Built from LayoutFacts (irscope/ir/layouts/graph.py) when the scan has parsed the TTGIR, so a
diff of two saved reports can say which conversions and round trips a change added or
removed without the artifacts at hand.
"""

from __future__ import annotations

from irscope.model.layout_summary import ConversionSummary, LayoutSummary, RoundTripSummary


def summarize(facts) -> LayoutSummary:
    conversions = tuple(ConversionSummary(c.source, c.target, c.lowering, c.loop_depth > 0, c.line, c.python_line)
                        for c in facts.conversions)
    trips = tuple(RoundTripSummary(t.stored_layout, t.loaded_layout, t.loop_depth > 0, t.feeds_dot,
                                   t.python_lines[0] if t.python_lines else None)
                  for t in facts.round_trips)
    return LayoutSummary(facts.module.path, conversions, trips)
