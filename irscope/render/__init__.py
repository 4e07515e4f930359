"""Renderers: each takes a Report and returns text. They never call parsers."""
