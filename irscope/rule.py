"""Deprecated alias of `irscope.engine.rule` (the rule base class third-party rules subclass), kept for
one release after the move to subpackages (issue 24): import from `irscope.engine.rule`."""

from irscope.engine.rule import *  # noqa: F401,F403
