"""The Textual browser (installed as `irscope.tui`).

Only this package imports textual; nothing in the core imports this package.
"""
