"""Where the kernels' Python files are in this checkout: `--source DIR` and `[tool.irscope] source-roots`.

An artifact names a kernel's Python file by the path it had where it was compiled (a `loc(...)`
in the IR, a `.file` in the ISA), often another machine's. Renderers show and export such a path
relative to the repository (SARIF's SRCROOT) when a root maps it, at render time from the
Report's saved paths:
- `source-roots = {"/build/machine/repo" = "."}` in pyproject.toml: a path under a key is the same
  path under its value (a directory relative to that pyproject.toml), as declared;
- `--source DIR`: a path under DIR is itself; else the file is found under DIR by its trailing path
  components, the longest that exists (`/build/repo/examples/k.py` -> DIR/examples/k.py, else
  DIR/k.py). The TUI finds a kernel's source this way too (irscope/ir/source_file.py).
A path that no root maps stays as it is: never guessed. Paths are only compared and stat'ed here.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CONFIG_KEY = "source-roots"


@dataclass(frozen=True)
class SourceRoots:
    base: str  # the repository's root on this machine: SARIF's SRCROOT; shown paths are relative to it
    prefixes: tuple[tuple[str, str], ...] = ()  # (directory where it was compiled, directory here)
    dirs: tuple[str, ...] = ()  # --source DIRs

    @property
    def configured(self) -> bool:
        """Whether the user gave any root: without one, the console and Markdown show paths as before."""
        return bool(self.prefixes or self.dirs)

    def local(self, path: str) -> str | None:
        """The path on this machine of the file an artifact names as `path`, or None when no root maps it."""
        absolute = os.path.abspath(path)
        for built, here in self.prefixes:
            rest = _under(absolute, built)
            if rest is not None:
                return os.path.join(here, *rest)
        if any(_under(absolute, d) is not None for d in self.dirs):
            return absolute
        return find_under(absolute, self.dirs)

    def relative(self, path: str) -> str | None:
        """`path` as a repository-relative POSIX path (mapped by a root, or under the base), else None."""
        rest = _under(self.local(path) or os.path.abspath(path), self.base)
        return PurePosixPath(*rest).as_posix() if rest else None

    def shown(self, path: str) -> str:
        """The path to show: repository-relative when a root maps it, else as the artifact gave it."""
        return (self.relative(path) if self.configured else None) or path


def _under(path: str, directory: str) -> tuple[str, ...] | None:
    """The components of `path` below `directory` (both absolute, compared as written), or None."""
    parts, top = Path(path).parts, Path(os.path.abspath(directory)).parts
    return parts[len(top):] if parts[:len(top)] == top and len(parts) > len(top) else None


@functools.lru_cache(maxsize=4096)
def find_under(path: str, dirs: tuple[str, ...]) -> str | None:
    """The file `path` names, found under one of `dirs` by its longest trailing path components
    that exist there (the whole path below its root first, its base name last), else None."""
    parts = PurePosixPath(path).parts
    parts = parts[1:] if parts and parts[0] == "/" else parts
    for directory in dirs:
        for i in range(len(parts)):
            candidate = os.path.join(directory, *parts[i:])
            try:
                if os.path.isfile(candidate):
                    return candidate
            except ValueError:  # a NUL in a hostile path
                return None
    return None


def load_source_roots(dirs: tuple[str, ...] | list[str] = (), start: Path | None = None) -> SourceRoots:
    """The roots of `--source DIR...` and of `[tool.irscope] source-roots` in the nearest pyproject.toml at
    or above `start` (default: cwd). The base is the first DIR, else that pyproject.toml's directory when
    it has source-roots, else the current directory. A bad table raises RuleConfigError naming the file."""
    from irscope.model.project_config import RuleConfigError, config_table

    dirs = tuple(os.path.abspath(d) for d in dirs)
    prefixes: tuple[tuple[str, str], ...] = ()
    base = dirs[0] if dirs else os.getcwd()
    found = config_table(start)
    if found and CONFIG_KEY in found[0]:
        table, source = found
        value = table[CONFIG_KEY]
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) and k
                                                  for k, v in value.items()):
            raise RuleConfigError(f"{source}: [tool.irscope] {CONFIG_KEY} must be a table of strings: "
                                  '{"/where/it/was/compiled" = "directory here, relative to this file"}')
        here = os.path.dirname(os.path.abspath(source))
        # The longest prefix first: a nested build directory maps before the one that holds it.
        prefixes = tuple(sorted(((os.path.abspath(k), os.path.normpath(os.path.join(here, v)))
                                 for k, v in value.items()), key=lambda kv: -len(kv[0])))
        base = dirs[0] if dirs else here
    return SourceRoots(base=base, prefixes=prefixes, dirs=dirs)


def source_dir_problem(dirs: list[str] | tuple[str, ...]) -> str | None:
    """Why a `--source DIR` cannot be used (one line naming it), or None."""
    for d in dirs:
        if d == "" or not os.path.isdir(d):
            return f"--source {d!r}: not a directory"
    return None
