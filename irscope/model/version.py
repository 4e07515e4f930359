"""irscope's version, on its own so that every layer can read it without importing irscope/__init__
(which imports the pipeline and the API: issue 24's import direction). pyproject.toml says the same."""

__version__ = "0.1.0"
