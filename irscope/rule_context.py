"""Deprecated alias of `irscope.engine.context` (KernelContext, what a rule reads a kernel through),
kept for one release after the move to subpackages (issue 24): import from `irscope.engine.context`."""

from irscope.engine.context import *  # noqa: F401,F403
