"""The `[tool.irscope]` table of the nearest pyproject.toml: read here, below every layer that needs it
(the rule selection in irscope/engine/selection.py, source roots in irscope/ir/source_roots.py, the diff's
regression settings), so that none of them imports another for it."""

from __future__ import annotations

import sys
from pathlib import Path


CONFIG_KEYS = frozenset({"select", "ignore", "per-kernel-ignores", "regression", "regression-severity",
                         "source-roots"})  # irscope/ir/source_roots.py


class RuleConfigError(ValueError):
    """A bad selector or `[tool.irscope]` table; the message names the file or the flag."""


def config_table(start: Path | None = None) -> tuple[dict, str] | None:
    """(`[tool.irscope]`, its pyproject.toml) from the nearest one at or above `start` (default: cwd)."""
    for directory in [p := (start or Path.cwd()).resolve(), *p.parents]:
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            table = _tool_table(pyproject)
            if table is not None:
                unknown = set(table) - CONFIG_KEYS
                if unknown:
                    raise RuleConfigError(f"{pyproject}: [tool.irscope] has unknown key(s) {sorted(unknown)}; "
                                          f"known: {sorted(CONFIG_KEYS)}")
                return table, str(pyproject)
    return None


def _tool_table(pyproject: Path) -> dict | None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RuleConfigError(f"{pyproject}: cannot read: {exc}") from None
    return data.get("tool", {}).get("irscope")
