"""Deprecated alias of `irscope.model.report` (Report), kept for one release after the move to
subpackages (issue 24): import from `irscope.model.report`."""

from irscope.model.report import *  # noqa: F401,F403
