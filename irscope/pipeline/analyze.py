"""scan: harvest -> parse -> model -> Report. The one pipeline every command runs."""

from __future__ import annotations

import collections
import gc
import itertools
import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from datetime import datetime, timezone
from typing import Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from irscope.model.version import __version__
from irscope.model.artifact_reader import one_read_each
from irscope.pipeline.harvester import harvest
from irscope.pipeline.twins import Requote, Twins
from irscope.model.launches import Launch
from irscope.model.kernel import Kernel, KernelReport, Problem
from irscope.model.report import Report
from irscope.engine.selection import RuleSelection
from irscope.pipeline.kernel_analysis import analyze_kernel, quoting_findings


# What one kernel's analysis takes: the kernel, its harvest problems, its recorded launches.
Work = tuple[Kernel, tuple[Problem, ...], tuple[Launch, ...]]


@dataclass(frozen=True)
class ScanCounts:
    """How far a scan is, for the CLI's progress line (irscope/render/progress.py)."""
    phase: str  # "harvesting", then "analyzing"
    kernels: int = 0  # harvested
    from_index: int = 0  # results read back from the result index
    analyzed: int = 0  # results analyzed in this run

    @property
    def done(self) -> int:
        return self.from_index + self.analyzed


ProgressHook = Callable[[ScanCounts], None]


def scan(paths: str | os.PathLike | Iterable[str | os.PathLike] | None = None, sass: bool = False,
         rules: RuleSelection | None = None, launches: Mapping[str, tuple[Launch, ...]] | None = None,
         index: bool | str | os.PathLike = False, jobs: int | None = None,
         on_progress: ProgressHook | None = None, shared: dict | None = None) -> Report:
    """Analyze every kernel under `paths` (default: the user's Triton cache).

    `sass`: also disassemble each cubin with nvdisasm (irscope/isa/nvtools.py) and count its SASS.
    `rules`: which rules run (default: all; the CLI reads `[tool.irscope]`).
    `launches`: kernel hash -> launches recorded by irscope/pipeline/runner.py.
    `index`: reuse and keep results in irscope's result index (irscope/pipeline/result_index.py):
    True for the default directory, or a directory; the CLI's default (`--no-cache` is False).
    `jobs`: worker processes for the kernels the index does not hold (default: one per core,
    and none for a handful of kernels); the report's order never depends on it.
    `on_progress`: called with the ScanCounts as the scan goes (the CLI draws them; default: nothing).
    `shared`: results of scans made earlier in this process with the same options (`irscope diff`'s
    two sides: a kernel both hold, its files unchanged, is analyzed once); filled as kernels are analyzed.
    """
    return ScanRun(paths, sass, rules, launches, index, jobs, on_progress, shared, stream=True).report()


class ScanRun:
    """A scan under way, for views that show kernels before their results (irscope tui).

    Made in the calling thread: it harvests, keys each kernel in the result index (a stat per
    artifact) and starts the workers, so that they fork before a caller starts threads of its
    own. `results()` then yields (position, KernelReport) as each becomes known: those the
    index holds first, then the others as workers finish them. `report()` waits for all.
    """

    def __init__(self, paths: str | os.PathLike | Iterable[str | os.PathLike] | None = None, sass: bool = False,
                 rules: RuleSelection | None = None, launches: Mapping[str, tuple[Launch, ...]] | None = None,
                 index: bool | str | os.PathLike = False, jobs: int | None = None,
                 on_progress: ProgressHook | None = None, shared: dict | None = None, stream: bool = False) -> None:
        """`stream`: hand each kernel to the workers as the harvest finds it (scan), not once it is done
        (irscope tui, whose table shows every kernel before the workers compete for the cores)."""
        self.on_progress = on_progress or _no_progress
        self.on_progress(ScanCounts("harvesting"))
        if paths is not None and not isinstance(paths, (str, os.PathLike)):
            paths = list(paths)  # read twice: for the index's refusal, then by the harvest
        self.sass, self.selection = sass, rules or RuleSelection()
        self.launches = launches or {}
        self.store = None if not index else self._result_index(index, paths)
        self.keys: dict[int, str | None] = {}
        self._held: list[int] = []  # positions whose result the index should hold
        self.shared, self._local, self._known = shared, {}, []
        self._work: dict[int, Work] = {}
        self._analyses = Analyses([], sass, self.selection, jobs, streaming=True) if stream else None
        self._todo: list[int] = []
        self.twins = Twins(self.selection.rules())
        self._firsts: dict[tuple, int] = {}  # a fingerprint -> the first kernel analyzed with it
        self._twins: dict[int, list[int]] = {}  # that kernel -> the later ones with its fingerprint
        self._early: dict[int, KernelReport] = {}  # results taken while the harvest goes on (stream)
        self.found = harvest(paths, on_kernel=self._route if stream else None)
        if not stream:
            for i, k in enumerate(self.found.kernels):
                self._route(i, k, tuple(self.found.problems.get(k.key, ())))
            self._analyses = Analyses([(i, self._work[i]) for i in self._todo], sass, self.selection, jobs)
        else:
            self._analyses.finish()
        self.on_progress(ScanCounts("analyzing", len(self._work)))

    def _result_index(self, index: bool | str | os.PathLike, paths) -> object | None:
        from irscope.model.limits import limits_key
        from irscope.pipeline.harvester import roots_of
        from irscope.pipeline.result_index import ResultIndex, default_index_dir, refusal, salt_for

        directory = default_index_dir() if index is True else Path(index)
        refused = refusal(directory, roots_of(paths))
        if refused:
            _say(refused)
            return None
        return ResultIndex(directory, salt_for(self.selection.rules(), f"sass={self.sass}|limits={limits_key()}"),
                           say=_say)

    def _route(self, i: int, k: Kernel, problems: tuple[Problem, ...]) -> None:
        """Where kernel `i`'s result comes from: this process's earlier scan, the index, or an analysis."""
        self._work[i] = work = (k, problems, tuple(self.launches.get(k.hash or "", ())))
        recorded = work[2]
        if self.shared is not None and not recorded:
            self._local[i] = local = _identity_key(k, problems)
            if local is not None and local in self.shared:
                self._known.append(i)
                return
        if self.store is not None and not recorded:  # a script run's launches make its results one-off
            self.keys[i] = key = self.store.key(k, repr(problems))
            if self.store.holds(key):
                self._held.append(i)
                return
        twin_of = self.twins.fingerprint(k, problems, recorded)
        if twin_of is not None:
            first = self._firsts.setdefault(twin_of, i)
            if first != i:  # its report may be the first one's (irscope/pipeline/twins.py)
                self._twins.setdefault(first, []).append(i)
                if first in self._early:  # analyzed already: the twin goes to a worker now
                    self._early.update(self._twins_of(first, self._early[first]))
                return
        self._todo.append(i)
        if self._analyses is not None:
            self._analyses.add((i, work))
            self._take_early()

    def _take_early(self) -> None:
        """The results the workers have finished so far (streaming), and their twins handed out: a twin waits
        for its first kernel's report, and the harvest takes most of a 16-worker scan (bench/timeline.py)."""
        for i, result in self._analyses.early():
            self._early[i] = result
            self._early.update(self._twins_of(i, result))

    def _twins_of(self, i: int, result: KernelReport) -> list[tuple[int, KernelReport]]:
        """The suspected twins of kernel `i` found so far, handed out (or confirmed here): those known at once."""
        twins = self._twins.pop(i, ())
        if not twins:
            return []
        return self._analyses.add_twins(result, self._work[i][0], [(t, self._work[t]) for t in twins], self.twins)

    def results(self) -> Iterator[tuple[int, KernelReport]]:
        self._analyses.start()  # the workers analyze while the index is read here
        missed = []
        counts = ScanCounts("analyzing", len(self._work))
        for i in self._known:  # analyzed already in this process (the other side of a diff)
            counts = replace(counts, from_index=counts.from_index + 1)
            self.on_progress(counts)
            yield i, self.shared[self._local[i]]
        for i in self._held:
            cached = self.store.get(self.keys[i])
            # Not `cached.kernel == k`: analysis fills in what a dump directory's json lacks.
            k = self._work[i][0]
            if cached is not None and (cached.kernel.key, cached.kernel.directory) == (k.key, k.directory):
                counts = replace(counts, from_index=counts.from_index + 1)
                self.on_progress(counts)
                yield i, cached
            else:
                missed.append((i, self._work[i]))
        late = Analyses(missed, self.sass, self.selection, jobs=1)

        def analyzed() -> Iterator[tuple[int, KernelReport]]:
            early, self._early = self._early, {}
            for i, result in itertools.chain(early.items(), self._analyses, late):
                yield i, result
                yield from self._twins_of(i, result)  # confirmed by a worker while they run, else here

        for i, result in analyzed():
            if self.store is not None and i in self.keys:
                self.store.put(self.keys[i], result)
            if self._local.get(i) is not None:
                self.shared[self._local[i]] = result
            counts = replace(counts, analyzed=counts.analyzed + 1)
            self.on_progress(counts)
            yield i, result
        if self.store is not None:
            self.store.close()  # every result is in: note the entries used, evict beyond the cap

    def close(self) -> None:
        """Stop the workers (a viewer closed before every result came)."""
        self._analyses.close()
        if self.store is not None:
            self.store.close()

    def report(self) -> Report:
        with paused_gc():
            return self.report_of(dict(self.results()))

    def report_of(self, results: Mapping[int, KernelReport]) -> Report:
        """The Report of the results collected from results(), in the harvest's order."""
        return Report(
            irscope_version=__version__,
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            roots=self.found.roots,
            kernels=tuple(results[i] for i in sorted(results)),
            problems=self.found.problems.get("", ()),
            skipped=self.found.skipped,
        )


def _no_progress(counts: ScanCounts) -> None:
    pass


def _identity_key(kernel: Kernel, problems: tuple[Problem, ...]) -> tuple | None:
    """A kernel within one process: its directory and key, harvest problems, and each artifact's stat
    identity (the result index's reasoning); None when an artifact cannot be stat'ed."""
    stats = []
    for artifact in kernel.artifacts:
        try:
            st = os.stat(artifact.path)
        except OSError:
            return None
        stats.append((artifact.stage, artifact.path, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
    return kernel.directory, kernel.key, repr(problems), tuple(stats)


def _say(message: str) -> None:
    """One line on stderr about how the run went (not a problem of its kernels)."""
    import sys

    from irscope.model.safe_text import printable

    print(f"irscope: {printable(message)}", file=sys.stderr)


@contextmanager
def paused_gc():
    """No cyclic garbage collection while results pile up: reading 1,000 results back from the
    index builds millions of objects, and each collection walked all of them again (0.65 s of
    a 1.1 s warm scan). Results are acyclic; the workers collect as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


T = TypeVar("T")

# Below this many kernels, starting workers costs more than it saves.
PARALLEL_FROM = 8


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Analyses:
    """analyze_kernel over (position, work) items, in worker processes when that pays.

    The workers start here, at once; iterating yields (position, KernelReport) as chunks finish.
    A worker that dies (out of memory?) costs speed, not results: what it had is analyzed here.
    `streaming`: the work comes later, item by item (`add`, then `finish`), and is handed out as it
    comes, the workers starting with the eighth item.
    """

    def __init__(self, work: Sequence[tuple[int, Work]], sass: bool, selection: RuleSelection,
                 jobs: int | None = None, streaming: bool = False) -> None:
        self.work = list(work)
        self.one = partial(_analyze_one, sass=sass, selection=selection)
        self.requote = partial(quoting_findings, sass=sass, selection=selection)  # a twin's quoting rules
        self.jobs = default_jobs() if jobs is None else max(1, jobs)
        self.pool = None
        self.futures: dict = {}
        self.streaming, self._handed = streaming, 0  # work[:_handed] is with the workers
        self._refused = False  # the pool took no more: the rest is analyzed here
        self._finished: collections.deque = collections.deque()  # futures done, for early()
        self._started = False  # start() handed the work out
        if not streaming and min(self.jobs, len(self.work)) >= 2 and len(self.work) >= PARALLEL_FROM:
            self._start(min(self.jobs, len(self.work)), len(self.work))

    def _start(self, jobs: int, expected: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # fork: the workers inherit the loaded rules (third-party ones included) and start in ms.
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self.chunk_size, self.jobs = _chunk_size(expected, jobs), jobs
        try:
            self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_gc)
            # Every worker forks on the first submit, here; the work itself is handed out when the
            # results are first asked for (a viewer draws its table before the workers compete).
            self.pool.submit(int)
        except OSError:  # no worker could start: all of it here
            self.pool = None

    def add(self, item: tuple[int, Work]) -> None:
        """One more item (streaming): the workers get it in a chunk once the next 2 x jobs items are known
        (the last 2 x jobs go one a chunk, so that the workers finish together)."""
        self.work.append(item)
        if self.pool is None and self.jobs >= 2 and len(self.work) == PARALLEL_FROM:
            self._start(self.jobs, len(self.work))
        if self.pool is not None and not self._refused:
            self.chunk_size = _chunk_size(len(self.work), self.jobs)
            while len(self.work) - self._handed - self.chunk_size >= 2 * self.jobs:
                if not self._hand(self._handed, self._handed + self.chunk_size):
                    break

    def finish(self) -> None:
        """No more items (streaming): hand out the rest."""
        if self.pool is not None and not self._refused:
            base = self._handed
            for at, end in chunk_bounds(len(self.work) - base, self.chunk_size, self.jobs):
                if not self._hand(base + at, base + end):
                    break

    def _hand(self, at: int, end: int) -> bool:
        chunk = self.work[at:end]
        if not self._submit(chunk, _analyze_chunk, [w for _, w in chunk], self.one):
            return False  # what was not handed out is analyzed in this process
        self._handed = end
        return True

    def _submit(self, items: list[tuple[int, Work]], task: Callable, *args) -> bool:
        """`task(*args)` to a worker, its results to be those of `items`; False when the pool takes no more."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            future = self.pool.submit(task, *args)
        except (OSError, BrokenProcessPool, RuntimeError):
            self._refused = True
            return False
        self.futures[future] = items
        future.add_done_callback(self._finished.append)  # in the pool's thread: a deque takes it safely
        return True

    def early(self) -> list[tuple[int, KernelReport]]:
        """The results the workers have finished, taken without waiting while the work is still being added
        (streaming): what waits on them (a first kernel's twins) then starts while the harvest goes on."""
        out = []
        while self._finished:
            future = self._finished.popleft()
            if future in self.futures and not future.cancelled() and future.exception() is None:
                out.extend(zip((i for i, _ in self.futures.pop(future)), future.result()))
        return out

    def start(self) -> None:
        """Hand the work to the workers (once; iterating does it too)."""
        if self.pool is None or self._started or self.streaming:
            return
        self._started = True
        # A family's configs (same kernel name and target) go to one worker together: what they share
        # (layouts, parsed attributes) is then found in that worker's caches. The report's order is the
        # positions', whatever the order of the work.
        self.work.sort(key=lambda item: (item[1][0].name, _target_name(item[1][0])))
        for at, end in chunk_bounds(len(self.work), self.chunk_size, self.jobs):
            if not self._hand(at, end):
                break

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def add_late(self, item: tuple[int, Work]) -> None:
        """One more item while the results are read (a twin that is not one after all): to a worker at once,
        while the workers run; else it is analyzed here, after the rest."""
        live = self.pool is not None and not self._refused and self._handed == len(self.work)
        self.work.append(item)
        if live:
            self._hand(len(self.work) - 1, len(self.work))

    def add_twins(self, first: KernelReport, harvested: Kernel, items: list[tuple[int, Work]],
                  twins: Twins) -> list[tuple[int, KernelReport]]:
        """The suspected twins of a kernel analyzed as `first` (irscope/pipeline/twins.py). While the workers
        run, they read the twins' files, and analyze those that are none: the reports come through iteration.
        Else they are confirmed here and returned; those that are none are analyzed after the rest."""
        # Twins are no part of `work`: they go to the workers while the harvest still adds to it. Those whose
        # quoting rules run again (~60% of an analysis) go one a task, side by side; the others (a digest each)
        # in one task: a task costs this process its hand-out and its result's transfer.
        quick = [item for item in items if not twins.requoted(first, harvested, item[1][0])]
        tasks = ([quick] if quick else []) + [[item] for item in items if item not in quick]
        while tasks and self.pool is not None and not self._refused:
            if self._submit(tasks[0], _twin_chunk, first, harvested, [w for _, w in tasks[0]], twins, self.one,
                            self.requote):
                tasks = tasks[1:]
        items = [item for task in tasks for item in task]
        known = []
        for t, work in items:
            report = _twin_report(twins, first, harvested, work, self.requote)
            if report is None:
                self.add_late((t, work))
            else:
                known.append((t, report))
        return known

    def __iter__(self) -> Iterator[tuple[int, KernelReport]]:
        if not self.work:
            return  # nothing to analyze: no collection turned on (it walked every result held, ~0.1 s)
        if self.pool is not None and not self._refused:
            yield from self._from_workers()
        while self._handed < len(self.work):  # what no worker took, items added late among it
            batch, self._handed = self.work[self._handed:], len(self.work)
            yield from self._here(batch)

    def _here(self, items: list[tuple[int, Work]]) -> list[tuple[int, KernelReport]]:
        return _collecting(lambda: [(i, self.one(w)) for i, w in items])

    def _from_workers(self) -> Iterator[tuple[int, KernelReport]]:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        self.start()
        lost: list[tuple[int, Work]] = []  # handed to a worker that died
        try:
            while self.futures:  # add_late may hand out more while the results are read
                done, _ = wait(list(self.futures), return_when=FIRST_COMPLETED)
                for future in done:
                    results = future.result()
                    yield from zip((i for i, _ in self.futures.pop(future)), results)
        except BrokenProcessPool:
            lost = [item for chunk in self.futures.values() for item in chunk]
            self.futures.clear()
        finally:
            self._refused = True  # from here on, what comes is analyzed in this process
            self.pool.shutdown(wait=True, cancel_futures=True)
        if lost:
            yield from self._here(lost)


def _chunk_size(count: int, jobs: int) -> int:
    return max(1, min(16, count // (jobs * 4)))


def chunk_bounds(count: int, size: int, jobs: int) -> list[tuple[int, int]]:
    """[start, end) of each chunk: `size` kernels a chunk, but the last 2 x `jobs` kernels one a chunk, so
    that the workers finish together (a worker handed 16 kernels last kept the others waiting)."""
    body = max(0, count - 2 * jobs)
    return [(at, min(at + size, body)) for at in range(0, body, size)] + [(at, at + 1) for at in range(body, count)]


def _target_name(kernel: Kernel) -> str:
    return kernel.target.arch if kernel.target is not None else ""


def _analyze_chunk(work: list[Work], one: Callable[[Work], KernelReport]) -> list[KernelReport]:
    return [one(w) for w in work]


def _twin_chunk(first: KernelReport, harvested: Kernel, work: list[Work], twins: Twins,
                one: Callable[[Work], KernelReport], requote: Requote) -> list[KernelReport]:
    """In a worker: each suspected twin's report from the first kernel's, or its own analysis when it is none."""
    return [_twin_report(twins, first, harvested, w, requote) or one(w) for w in work]


def _twin_report(twins: Twins, first: KernelReport, harvested: Kernel, work: Work,
                 requote: Requote) -> KernelReport | None:
    try:
        with one_read_each():  # the reads that confirm it serve the quoting rules too
            return twins.report(first, harvested, work[0], requote)
    except Exception:  # noqa: BLE001 - a twin that cannot be confirmed is analyzed on its own
        return None


# Analysis allocates a lot and frees most of it by reference counting; collecting cycles every
# 700 allocations (Python's default) cost a fifth of a kernel's analysis time.
ANALYSIS_GC_THRESHOLD = (100_000, 50, 100)


def _worker_gc() -> None:
    gc.freeze()  # what the worker inherited from the parent is never garbage
    gc.set_threshold(*ANALYSIS_GC_THRESHOLD)
    gc.enable()


def _collecting(run: Callable[[], T]) -> T:
    """Analysis in this process, with garbage collection on (parsers and graphs make cycles)
    but at the analysis threshold; the caller's settings are restored after."""
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    gc.set_threshold(*ANALYSIS_GC_THRESHOLD)
    gc.enable()
    try:
        return run()
    finally:
        gc.set_threshold(*threshold)
        if not enabled:
            gc.disable()


def _analyze_one(work: tuple[Kernel, tuple[Problem, ...], tuple[Launch, ...]], sass: bool,
                 selection: RuleSelection) -> KernelReport:
    kernel, problems, launches = work
    try:
        return analyze_kernel(kernel, problems, sass, selection, launches)
    except Exception as exc:  # noqa: BLE001 - one kernel that breaks irscope must not cost the others
        return failed_kernel(kernel, problems, launches, exc)


def failed_kernel(kernel: Kernel, problems: Sequence[Problem], launches: Sequence[Launch],
                  exc: BaseException) -> KernelReport:
    """The report of a kernel whose analysis raised: the kernel is listed with an error naming
    its directory and the exception; `--debug` (IRSCOPE_DEBUG=1) prints the traceback too."""
    if debug_enabled():
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__)
    where = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    problem = Problem(kernel.directory, f"irscope could not analyze {kernel.name} ({where[:300]}); this is "
                      "irscope's bug, please report it (--debug shows the traceback)")
    return KernelReport(kernel=kernel, resources=None, problems=tuple(problems) + (problem,), mix=(),
                        occupancy=None, findings=(), layouts=None, launches=tuple(launches))


def debug_enabled() -> bool:
    """`irscope --debug` sets IRSCOPE_DEBUG=1, which worker processes inherit."""
    return os.environ.get("IRSCOPE_DEBUG", "") not in ("", "0")


def empty_report(roots: tuple[str, ...]) -> Report:
    """A report of no kernels (a script run that compiled none)."""
    return Report(irscope_version=__version__, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  roots=roots, kernels=())
