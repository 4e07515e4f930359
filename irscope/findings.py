"""Deprecated alias of `irscope.model.findings` (Finding), kept for one release after the move to
subpackages (issue 24): import from `irscope.model.findings`."""

from irscope.model.findings import *  # noqa: F401,F403
