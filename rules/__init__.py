"""Performance rules over the parsed artifacts (installed as `irscope.rules`).

The rules engine and the rule set arrive with issue 6; rules register through the
`irscope.rules` entry-point group so third-party rules plug in the same way.
"""
