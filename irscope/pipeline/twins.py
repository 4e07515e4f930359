"""Twins: kernels of one scan whose analysis reads the very same bytes.

An autotuning sweep compiles configs that differ in nothing the compiler's output shows: a
`num_stages` with no loop to pipeline, or none the pipeliner takes. Each is its own cache entry (its
own hash and folder), and its TTIR, TTGIR, LLVM IR and assembly are byte for byte another's: 291 of
the bench corpus's 1,016 kernels, 36 of fixtures/real_world's 721. A kernel's analysis reads those
bytes, its metadata and its folder's path, and never its hash; `num_stages` only appears in the text
of IRS202's and IRS403's fixes (`Rule.quotes_options`). So a twin's report is the first kernel's with
the path changed: no parse, no rule run. When the two differ in num_stages and the first has such a
finding, those two rules run again on the twin (its parse, not its mix, layouts or other rules).

A twin is only suspected from what the harvest knew (`Twins.fingerprint`: the same name, metadata but
for its hash and the quoted options, files and sizes, and a path of the same length); it is one once
its files are read and their digests equal those the first kernel's analysis read (`Twins.report`).
Otherwise it is analyzed as usual.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import replace
from typing import Callable, Sequence

from irscope.engine.selection import finding_order
from irscope.model.artifact_reader import read_artifact
from irscope.model.errors import ArtifactError
from irscope.model.findings import Finding
from irscope.model.kernel import Kernel, KernelReport

OWN_RULES = "irscope.rules."  # a plugin's rule may read anything: no twins when one runs
# (the twin, the codes of the rules that quote an option it differs in) -> those rules' findings for it, or None
Requote = Callable[[Kernel, frozenset], "tuple[Finding, ...] | None"]


class Twins:
    """Which kernels may share a report, for one scan's rules."""

    def __init__(self, rules: Sequence[type]) -> None:
        self.enabled = all(r.__module__.startswith(OWN_RULES) for r in rules)
        quoted = {option for r in rules for option in r.quotes_options}
        self.ignored = frozenset({"hash"} | quoted)  # metadata a twin may differ in
        self.quoting = {option: frozenset(r.code for r in rules if option in r.quotes_options) for option in quoted}

    def fingerprint(self, kernel: Kernel, problems: tuple, launches: tuple) -> tuple | None:
        """What a twin of `kernel` shares with it, as far as the harvest can tell; None when its report is its
        own: the harvest found problems, a script's launches were recorded, analysis completes the kernel
        from its IR (a dump folder without metadata), or a plugin's rule runs."""
        if not self.enabled or problems or launches or kernel.target is None or kernel.triton_version is None \
                or kernel.options.num_warps is None:
            return None
        metadata = repr({k: v for k, v in kernel.metadata.items() if k not in self.ignored})
        files = tuple((a.stage, os.path.basename(a.path), a.size) for a in kernel.artifacts)
        return (kernel.name, kernel.layout, kernel.complete, _byte_lengths(kernel), os.path.dirname(kernel.directory),
                metadata, files)

    def report(self, first: KernelReport, harvested: Kernel, twin: Kernel,
               requote: Requote | None = None) -> KernelReport | None:
        """The twin's report from the first kernel's, or None when it needs its own analysis: the first's
        report has problems (their messages name files in their own words), or a file the first's analysis
        read is other bytes in the twin. When the two differ in an option that a rule with findings quotes,
        that rule's findings are the twin's own: `requote(twin, codes)` gives them (None: analyze it)."""
        if first.problems or len(first.kernel.artifacts) != len(twin.artifacts) \
                or _byte_lengths(harvested) != _byte_lengths(twin):
            return None
        requoted = self.requoted(first, harvested, twin)
        if requoted and requote is None:
            return None
        artifacts = _same_reads(first.kernel, harvested, twin)
        if artifacts is None:
            return None
        # Every path in the report lies in the first kernel's folder, and findings name its key; the twin's
        # are of the same lengths: replacing their bytes in the pickle keeps each string's length, so the
        # pickle stays well formed.
        data = pickle.dumps(replace(first, kernel=None))
        data = data.replace(_utf8(harvested.directory), _utf8(twin.directory))
        moved = pickle.loads(data.replace(_utf8(harvested.key), _utf8(twin.key)))
        kernel = replace(twin, artifacts=artifacts)
        if not requoted:
            return replace(moved, kernel=kernel)
        # Findings fire the same whatever the quoted options (tests/test_twins.py holds every rule to it): only
        # the quoting rules run again, and their findings take the place of the first's in the report's order.
        own = requote(kernel, requoted)
        if own is None:
            return None
        findings = sorted([f for f in moved.findings if f.code not in requoted] + list(own), key=finding_order)
        return replace(moved, kernel=kernel, findings=tuple(findings))

    def requoted(self, first: KernelReport, harvested: Kernel, twin: Kernel) -> frozenset[str]:
        """The codes of the rules that must run again on the twin: those that quote an option the two differ in,
        when the first kernel has a finding of one of them."""
        codes = frozenset(code for option, codes in self.quoting.items()
                          if harvested.metadata.get(option) != twin.metadata.get(option) for code in codes)
        return codes if any(f.code in codes for f in first.findings) else frozenset()


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # as pickle writes a str


def _byte_lengths(kernel: Kernel) -> tuple[int, int]:
    """The UTF-8 lengths of the folder and key: a pickle prefixes each string with its length in bytes,
    so only strings of the same byte length may replace each other in one (a name that is not ASCII can
    have as many characters and more bytes)."""
    return len(_utf8(kernel.directory)), len(_utf8(kernel.key))


def _same_reads(analyzed: Kernel, harvested: Kernel, twin: Kernel) -> tuple | None:
    """The twin's artifacts with the digests its analysis would record, or None when a file the first
    kernel's analysis read (its digest was filled in then) holds other bytes in the twin."""
    read = {a.stage: a.digest for a, h in zip(analyzed.artifacts, harvested.artifacts)
            if a.digest is not None and a.digest != h.digest}
    artifacts = []
    for a in twin.artifacts:
        if a.stage in read:
            try:
                _, digest = read_artifact(a)
            except (ArtifactError, OSError):
                return None
            if digest != read[a.stage]:
                return None
            a = replace(a, digest=digest)
        artifacts.append(a)
    return tuple(artifacts)
