"""Find every compiled Triton kernel under a path, without writing anything there.

Lifecycle of a harvest:
1. resolve the paths (none given: the user's Triton cache, found the way Triton finds it);
2. walk each directory tree, grouping the files of a directory by kernel name:
   `<name>.<stage>` where stage is one of Triton's (model.STAGES). Nothing leads out of the
   tree: a directory link is not descended into (a warning names it), a file that links out
   of its kernel's directory or is no regular file (a FIFO) is not read (an error names it);
3. classify each group: a Triton cache entry (it has the metadata `.json`, a `__grp__` file or
   a `.source`, or sits beside such entries), a TRITON_KERNEL_DUMP entry (IR only), or a single
   artifact named on the command line; skip what is not a kernel: autotune-only and
   launcher-only directories, Triton's in-progress `tmp.pid_*` files and directories. A cache
   entry without its `__grp__` file is incomplete (Triton writes it last); one whose `__grp__`
   file names files that are gone lost them (the names are compared, its paths never followed);
4. read the small metadata json; record a problem against the kernel, not the run,
   when it is broken; stage texts are left on disk and read only when analyzed.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Mapping

from irscope.model.artifact_reader import read_artifact, read_file
from irscope.model.json_input import OTHER, REPORT, json_kind, not_an_input
from irscope.model.kernel import STAGES, Artifact, Fact, Kernel, KernelOptions, Origin, Problem, Skipped
from irscope.model.errors import ArtifactError
from irscope.parsers.metadata import parse_metadata
from irscope.pipeline.home import default_cache_dir  # noqa: F401  (where callers have always found it)
from irscope.model.safe_text import has_surrogates

_STAGE_OF_EXT = {stage: stage for stage in STAGES}
_STAGE_ORDER = {stage: i for i, stage in enumerate(STAGES)}
# Triton's in-progress files: `<file>.tmp.pid_<pid>_<uuid>` (3.0-3.1) and the
# `tmp.pid_<pid>_<uuid>/` directory inside a hash directory (3.2+).
IN_PROGRESS = _IN_PROGRESS = re.compile(r"(^|\.)tmp\.pid_")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_B64_43 = re.compile(r"^[A-Za-z0-9_-]{43}$")
_B32_52 = re.compile(r"^[A-Z2-7]{52}$")
_INCOMPLETE = "incomplete: Triton has not finished writing this kernel (no __grp__ file yet)"
_NOT_UTF8 = "name is not UTF-8: read all the same; reports show each byte that is not UTF-8 as \\udcXX"
_GROUP_FILE_LIMIT = 1 << 20  # Triton's group files are a few hundred bytes


EMPTY_PATH = ("an empty path was given (an unset variable such as $TRITON_CACHE_DIR?); give a directory, "
              "or no path for Triton's own cache")


class HarvestError(Exception):
    """The path cannot be harvested at all (missing, unreadable, not an artifact)."""


@dataclass(frozen=True)
class Harvest:
    roots: tuple[str, ...]
    kernels: tuple[Kernel, ...]
    # Problems found while harvesting, keyed by Kernel.key; run-level ones under "".
    problems: Mapping[str, tuple[Problem, ...]] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()


# Told of each kernel as soon as nothing the harvest does later can change it: (its position in
# Harvest.kernels, the kernel, its harvest problems). A scan hands it to the workers at once.
KernelSink = Callable[[int, Kernel, tuple[Problem, ...]], None]


def harvest(paths: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
            on_kernel: KernelSink | None = None) -> Harvest:
    """Every kernel under `paths` (a cache, a dump directory, one hash directory, one file).
    `on_kernel`, when given, is called with each kernel as it becomes final, in no fixed order."""
    roots = _root_paths(paths)
    for root in roots:
        _check_root(root)

    collector = _Collector(on_kernel)
    for root in roots:
        if root.is_file():
            collector.add_file(root)
        else:
            collector.add_tree(root)
        collector.tell()
    return Harvest(
        roots=tuple(str(r) for r in roots),
        kernels=tuple(collector.kernels),
        problems={k: tuple(v) for k, v in collector.problems.items()},
        skipped=tuple(collector.skipped),
    )


def roots_of(paths: str | os.PathLike | Iterable[str | os.PathLike] | None) -> tuple[str, ...]:
    """Harvest.roots of a harvest of `paths`, before it is made."""
    return tuple(str(r) for r in _root_paths(paths))


def _root_paths(paths: str | os.PathLike | Iterable[str | os.PathLike] | None) -> list[Path]:
    given = None if paths is None else [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if given is not None and any(os.fspath(p) == "" for p in given):
        raise HarvestError(EMPTY_PATH)  # Path("") is ".": an unset variable would scan the working directory
    return [default_cache_dir()] if given is None else [Path(p) for p in given]


def _check_root(root: Path) -> None:
    """A path given to scan that is missing or cannot be listed is unusable input (exit 2), said as such:
    a directory of mode 000 would otherwise read as "no Triton kernels found"."""
    try:
        if root.is_dir():
            with os.scandir(root):
                pass
        else:
            os.stat(root)
    except OSError as exc:
        why = "no such file or directory" if isinstance(exc, FileNotFoundError) else f"cannot read: {exc.strerror}"
        raise HarvestError(f"{root}: {why}") from None


class _Collector:
    def __init__(self, on_kernel: KernelSink | None = None) -> None:
        self.on_kernel = on_kernel
        self._looked = 0  # kernels[:_looked] were given to on_kernel, or are in _held
        self._held: list[int] = []  # kernels given at the end of their tree
        self.kernels: list[Kernel] = []
        self.problems: dict[str, list[Problem]] = {}
        self.skipped: list[Skipped] = []
        self._keys: set[str] = set()
        # Overlapping paths (`scan small ./small/ /abs/small`, a cache and one of its entries) reach
        # a kernel more than once: it is counted once, by its resolved directory and name.
        self._seen: set[tuple[str, str]] = set()
        self._resolved: dict[str, str] = {}

    def add_tree(self, root: Path) -> None:
        def on_error(exc: OSError) -> None:
            self.problems.setdefault("", []).append(Problem(str(exc.filename), f"cannot read: {exc.strerror}"))

        first = len(self.kernels)
        real = {str(root): os.path.realpath(root)}  # each folder's resolved path, from its parent's
        for dirpath, dirnames, filenames in os.walk(root, onerror=on_error):
            dirnames.sort()
            directory = str(Path(dirpath))
            in_progress = [d for d in dirnames if _IN_PROGRESS.search(d)]
            for d in in_progress:
                self.skipped.append(Skipped(os.path.join(dirpath, d), "being written by Triton (tmp.pid_ directory)"))
                dirnames.remove(d)
            for d in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                # os.walk does not descend into it either; said so, since kernels may sit behind it.
                link = os.path.join(dirpath, d)
                self.problems.setdefault("", []).append(Problem(link, _link_message(link), severity="warning"))
                dirnames.remove(d)
            # os.walk descends into no link: a subfolder's resolved path is its parent's and its name (one
            # realpath a kernel folder, each an lstat per path component, was a fifth of the harvest).
            parent = real.get(directory) or real.get(dirpath)
            if parent is not None:
                self._resolved.setdefault(directory, parent)
                for d in dirnames:
                    real[os.path.join(dirpath, d)] = os.path.join(parent, d)
            self._add_directory(root, directory, sorted(filenames), bool(in_progress))
            self._tell_cache_entries()
        self._being_written(first)

    def _tell_cache_entries(self) -> None:
        """A Triton cache entry is final once its directory is read. A dump-like one waits for the end of
        its tree: `_being_written` may still find it is a cache entry Triton is writing."""
        if self.on_kernel is None:
            return
        for i in range(self._looked, len(self.kernels)):
            if self.kernels[i].layout == "triton-cache":
                self._give(i)
            else:
                self._held.append(i)
        self._looked = len(self.kernels)

    def tell(self) -> None:
        """Give on_kernel every kernel not given yet (a root is done: they are final)."""
        if self.on_kernel is not None:
            for i in self._held + list(range(self._looked, len(self.kernels))):
                self._give(i)
        self._held, self._looked = [], len(self.kernels)

    def _give(self, i: int) -> None:
        k = self.kernels[i]
        self.on_kernel(i, k, tuple(self.problems.get(k.key, ())))

    def _being_written(self, first: int) -> None:
        """IR files alone look like a TRITON_KERNEL_DUMP directory; beside Triton cache entries, such a
        directory is one Triton is writing, between two of its files (3.0-3.2 write no `.source`)."""
        kernels = self.kernels[first:]
        cache_parents = {os.path.dirname(k.directory) for k in kernels if k.layout == "triton-cache"}
        for i, k in enumerate(kernels, first):
            if k.layout == "kernel-dump" and os.path.dirname(k.directory) in cache_parents:
                self.kernels[i] = replace(k, layout="triton-cache", complete=False,
                                          triton_version=k.triton_version or _version_from_dirname(k.directory))
                self.problems.setdefault(k.key, []).append(Problem(k.directory, _INCOMPLETE, severity="warning"))

    def add_file(self, path: Path) -> None:
        name, stage = _split(path.name)
        if stage is None:
            raise HarvestError(f"{path}: not a Triton artifact (expected one of .{', .'.join(STAGES)})")
        if stage == "json":  # a named .json must be Triton's metadata, not any JSON (issue 22 item 17)
            kind, what = json_kind(path)
            if kind == REPORT:
                raise HarvestError(f"{path}: a report saved by `irscope scan --json`, not a Triton artifact; "
                                   "`irscope diff` and `irscope tui` read it")
            if kind == OTHER:
                raise HarvestError(not_an_input(path, what))
        # A sibling metadata json is read (never changed) for the target and options.
        sibling = path.parent / f"{name}.json"
        self._add_kernel(path.parent, str(path.parent), name, [(stage, path.name)],
                         str(sibling) if sibling.is_file() else None, layout="file",
                         has_grp=True, in_progress=False, named=path.name)

    # Directories and files are plain strings below: a cache holds thousands of them, and
    # pathlib's objects were a third of the harvest's time.
    def _add_directory(self, root: Path, directory: str, filenames: list[str], in_progress: bool) -> None:
        groups: dict[str, list[tuple[str, str]]] = {}
        grp_names: set[str] = set()
        autotune = launcher = 0
        for fname in filenames:
            if _IN_PROGRESS.search(fname):
                self.skipped.append(Skipped(os.path.join(directory, fname), "being written by Triton (tmp.pid_ file)"))
                continue
            if fname.startswith("__grp__") and fname.endswith(".json"):
                grp_names.add(fname[len("__grp__"):-len(".json")])
                continue
            if fname.endswith(".autotune.json"):
                autotune += 1
                continue
            if fname.endswith(".so"):
                launcher += 1
                continue
            name, stage = _split(fname)
            if stage is not None:
                groups.setdefault(name, []).append((stage, fname))

        kernels = {n: files for n, files in groups.items()
                   if n in grp_names or any(stage != "json" for stage, _ in files)}
        if not kernels:
            if autotune:
                self.skipped.append(Skipped(directory, "autotune results only (.autotune.json)"))
            elif launcher:
                self.skipped.append(Skipped(directory, "launcher modules only (.so)"))
            return
        for name, files in kernels.items():
            has_json = any(stage == "json" for stage, _ in files)
            meta = os.path.join(directory, f"{name}.json") if has_json else None
            # A `.source` (Triton 3.6+ puts it first) is never in a TRITON_KERNEL_DUMP directory: without
            # json and group file, this is a cache entry Triton is writing, between two of its files.
            cache_entry = has_json or name in grp_names or any(stage == "source" for stage, _ in files)
            layout = "triton-cache" if cache_entry else "kernel-dump"
            lost = _group_problems(directory, name, filenames) if name in grp_names else []
            self._add_kernel(root, directory, name, files, meta, layout,
                             has_grp=name in grp_names, in_progress=in_progress,
                             many=len(kernels) > 1, found=lost)

    def _add_kernel(self, root: Path, directory: str, name: str, files: list[tuple[str, str]],
                    meta_path: str | None, layout: str, has_grp: bool, in_progress: bool,
                    many: bool = False, named: str | None = None, found: Iterable[Problem] = ()) -> None:
        if directory not in self._resolved:
            self._resolved[directory] = os.path.realpath(directory)
        identity = (self._resolved[directory], name)
        if identity in self._seen:  # not "skipped" (a path holding no kernel): the same kernel again
            return
        self._seen.add(identity)
        key = self._unique_key(root, directory, name, many or layout == "file")
        problems: list[Problem] = list(found)
        artifacts = []
        for stage, fname in sorted(files, key=lambda f: _STAGE_ORDER[f[0]]):
            path = os.path.join(directory, fname)
            try:
                artifact, refused = _look(stage, path, directory, follow=fname == named)
            except OSError as exc:  # removed between listing and stat (Triton replacing it), a link loop
                problems.append(Problem(path, f"cannot read: {exc.strerror}"))
                continue
            if refused:
                problems.append(Problem(path, refused))
            else:
                artifacts.append(artifact)
        problems.extend(_not_utf8(key, directory, [fname for _, fname in files]))
        meta_file = _metadata_artifact(meta_path, artifacts, directory) if meta_path is not None else None

        kernel_name, hash_, target, version, options, raw = name, None, None, None, KernelOptions(), {}
        if meta_file is not None:
            try:
                # Through the artifact's reader: the file lstat'ed above, never what its name links to now.
                data, digest = read_artifact(meta_file)
                if meta_file in artifacts:  # the digest a saved report's reader checks this file against
                    artifacts[artifacts.index(meta_file)] = replace(meta_file, digest=digest)
                meta = parse_metadata(data, meta_path)
            except ArtifactError as exc:
                problems.append(Problem(exc.path, exc.message, exc.line))
            except OSError as exc:
                problems.append(Problem(meta_path, f"cannot read: {exc.strerror}"))
            else:
                kernel_name = meta.name or name
                hash_, target, version = meta.hash, meta.target, meta.triton_version
                options, raw = meta.options, meta.raw
                problems.extend(Problem(meta_path, message, line, "warning") for line, message in meta.wrong_types)
        if version is None and layout != "kernel-dump":
            version = _version_from_dirname(directory)
        complete = not in_progress and (has_grp or layout != "triton-cache")
        if not complete:
            problems.append(Problem(directory, _INCOMPLETE, severity="warning"))
        self.kernels.append(Kernel(
            key=key, name=kernel_name, directory=directory, layout=layout,
            artifacts=tuple(artifacts), target=target, hash=hash_, triton_version=version,
            options=options, complete=complete, metadata=raw,
        ))
        if problems:
            self.problems[key] = problems

    def _unique_key(self, root: Path, directory: str, name: str, with_name: bool) -> str:
        rel = Path(os.path.relpath(directory, root)).as_posix() if directory != str(root) \
            else os.path.basename(directory)
        key = f"{rel}/{name}" if with_name else rel
        base, n = key, 1
        while key in self._keys:
            n += 1
            key = f"{base}#{n}"
        self._keys.add(key)
        return key


def _group_problems(directory: str, name: str, filenames: list[str]) -> list[Problem]:
    """The files a kernel's `__grp__<name>.json` names that its directory no longer holds (removed
    since Triton wrote them: cache eviction, `rm`). Only the names are compared with the listing:
    the paths the file gives for them are never followed, since they may point anywhere."""
    path = os.path.join(directory, f"__grp__{name}.json")
    try:
        group, refused = _look("json", path, directory)
        if refused:
            return [Problem(path, refused)]
        children = json.loads(read_file(path, group.identity, _GROUP_FILE_LIMIT))["child_paths"]
        names = [c for c in children if isinstance(c, str)]
    except OSError as exc:  # removed since the listing: the kernel is being deleted
        return [Problem(path, f"cannot read: {exc.strerror}")]
    except (ArtifactError, ValueError, KeyError, TypeError, RecursionError):  # RecursionError: `[[[[...`
        return [Problem(path, "not a Triton group file (JSON with `child_paths`): which files the kernel "
                        "should have is unknown", severity="warning")]
    listing = set(filenames)
    return [Problem(os.path.join(directory, c), f"cannot read: No such file or directory ({os.path.basename(path)} "
                    "lists it: removed since Triton wrote it?)")
            for c in names if "/" not in c and c not in listing]


def _not_utf8(key: str, directory: str, filenames: list[str]) -> list[Problem]:
    """A warning naming the kernel's directory or file whose name is not UTF-8 (os.walk gives its bytes
    as lone surrogates). It is read all the same; reports and exports write each such byte as `\\udcff`."""
    bad = [f for f in filenames if has_surrogates(f)]
    if bad:
        return [Problem(os.path.join(directory, bad[0]), _NOT_UTF8, severity="warning")]
    return [Problem(directory, _NOT_UTF8, severity="warning")] if has_surrogates(key) else []


def _look(stage: str, path: str, directory: str, follow: bool = False) -> tuple[Artifact | None, str | None]:
    """(the Artifact, None) for a file irscope may read, else (None, why not); OSError when it cannot
    be stat'ed. The Artifact holds the file's (device, inode): every later read checks it is still
    that file (irscope/model/artifact_reader.py), so nothing swapped in after this look is ever read.

    A symbolic link is followed only to a file in the kernel's own directory (or when `follow`:
    the user named it): a cache from elsewhere must not make irscope read, and put in its report,
    files outside it. Only regular files are read: a FIFO would block forever, a device never end.
    """
    st, opened = os.lstat(path), None
    if stat.S_ISLNK(st.st_mode):
        if not follow and os.path.dirname(os.path.realpath(path)) != os.path.realpath(directory):
            return None, _link_message(path)
        st = os.stat(path)  # a loop or a dangling link raises here
        opened = os.path.realpath(path)  # what later reads open (without following links)
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file (a FIFO, socket or device): not read"
    return Artifact(stage, path, st.st_size, identity=(st.st_dev, st.st_ino), opened=opened), None


def _metadata_artifact(meta_path: str, artifacts: list[Artifact], directory: str) -> Artifact | None:
    """The kernel's metadata json as an Artifact to read, or None: refused above (and said why), or a
    named file's sibling that is no plain file (not the named kernel's problem)."""
    found = next((a for a in artifacts if a.path == meta_path), None)
    if found is not None:
        return found
    try:
        return _look("json", meta_path, directory)[0]
    except OSError:
        return None


def _link_message(link: str) -> str:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    target_dir, parent = os.path.realpath(link), os.path.realpath(os.path.dirname(link))
    if os.path.isdir(link) and (parent + os.sep).startswith(target_dir.rstrip(os.sep) + os.sep):
        what = f"a symbolic link loop (to {target}, a directory above it)"
    else:
        what = f"a symbolic link to {target}"
    return f"{what}: not followed (irscope reads only the files in a kernel's own directory)"


def _split(filename: str) -> tuple[str, str | None]:
    name, dot, ext = filename.rpartition(".")
    if not dot or not name:
        return filename, None
    return name, _STAGE_OF_EXT.get(ext)


def _version_from_dirname(directory: str) -> Fact[str] | None:
    """Triton < 3.3 writes no version; its cache directory naming still tells the range.

    3.0-3.1 name directories by the hex sha256, 3.2 by urlsafe base64 of it,
    3.3+ by base32 (and write `triton_version` into the json).
    """
    name = os.path.basename(directory)
    origin = Origin(directory, None, "hash directory naming")
    if _HEX64.match(name):
        return Fact("3.0-3.1", origin)
    if _B64_43.match(name):
        return Fact("3.2", origin)
    if _B32_52.match(name):
        return Fact(">=3.3", origin)
    return None
