"""Performance rules over the parsed artifacts (installed as `irscope.rules`).

One rule per module, `irsNNN_<slug>.py`; each registers through the `irscope.rules`
entry-point group in pyproject.toml, the way a third-party rule package would. `BUILTIN`
is the same list, for a source tree that was never installed.
"""

from __future__ import annotations

from irscope.rules.irs101_narrow_global_load import NarrowGlobalLoad
from irscope.rules.irs102_narrow_global_store import NarrowGlobalStore

BUILTIN = (NarrowGlobalLoad, NarrowGlobalStore)
