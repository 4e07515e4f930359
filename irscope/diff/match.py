"""Pair the kernels of two builds: by specialization when it is unambiguous, else by name.

A kernel's specialization is what Triton compiled it for: its name and target, the compile
options that change code (num_warps, num_stages, ...), and the TTIR signature (argument types
and the `tt.divisibility` / `tt.pointer_range` facts the JIT specialized, constexprs folded
into the tile shapes). Values that only differ by version spelling are normalized, so the
same kernel built by Triton 3.6 and 3.9 matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from irscope.ir.specialization import function_signature
from irscope.model.kernel import KernelReport

# Options that change the generated code; defaults that spell "unset" differently per version
# are folded to one value (waves_per_eu: 1 before 3.3, 0 after).
CODE_OPTIONS = ("num_warps", "num_stages", "num_ctas", "matrix_instr_nonkdim", "waves_per_eu", "kpack", "maxnreg",
                "enable_fp_fusion")
UNSET = {"waves_per_eu": (0, 1), "matrix_instr_nonkdim": (0,), "kpack": (1,), "num_ctas": (1,)}
# Every tensor shape the TTIR writes, attribute types included: the parsed module keeps an attribute
# such as `tt.contiguity = dense<[1, 64]> : tensor<2xi32>` as raw text, and those hint tensors tell a
# kernel built with tl.multiple_of / tl.max_contiguous from one without (the fixtures' tile_copy).
_TENSOR = re.compile(r"tensor<([0-9x]+)x")


@dataclass(frozen=True)
class Pair:
    before: KernelReport
    after: KernelReport
    matched_by: str  # "specialization", "name+arch", "name" or "--pair"

    @property
    def label(self) -> str:
        arch = self.after.kernel.target.arch if self.after.kernel.target else "?"
        return f"{self.after.kernel.name} {arch}"


@dataclass(frozen=True)
class Matching:
    pairs: tuple[Pair, ...]
    only_before: tuple[KernelReport, ...]
    only_after: tuple[KernelReport, ...]


def specialization(kr: KernelReport) -> tuple:
    k = kr.kernel
    options = []
    for name in CODE_OPTIONS:
        value = k.metadata.get(name)
        # Triton writes these as numbers and booleans; a list or object (a hostile json or saved
        # report; the reader said so) is left out, as the reader ignored it, and could not be hashed.
        if not isinstance(value, (int, float, str)) or value in UNSET.get(name, ()):
            continue
        options.append((name, value))
    return (k.name, k.target.arch if k.target else None, tuple(options), _ttir_signature(kr))


def _ttir_signature(kr: KernelReport) -> tuple:
    """Argument types with their specialization attributes (from the parsed TTIR), and the tensor
    shapes (constexprs) its text writes."""
    artifact = kr.kernel.artifact("ttir")
    if artifact is None:
        return ()
    from irscope.model.errors import ArtifactError
    from irscope.parsers.mlir_parser import parse_mlir

    try:
        text = artifact.read_bytes().decode("utf-8", "replace")
        args = function_signature(parse_mlir(text, str(artifact.path)))
    except (OSError, ArtifactError):  # gone, over the size limit, or no MLIR
        return ()
    if args is None:
        return ()
    return args, tuple(sorted(set(_TENSOR.findall(text))))


def match(before: tuple[KernelReport, ...], after: tuple[KernelReport, ...],
          explicit: tuple[tuple[str, str], ...] = ()) -> Matching:
    """Explicit pairs first (a kernel key, or `name` / `name@arch`), then equal
    specializations, then a name (and arch) found once on each side."""
    left, right = list(before), list(after)
    pairs: list[Pair] = []

    def take(a: KernelReport, b: KernelReport, how: str) -> None:
        left.remove(a)
        right.remove(b)
        pairs.append(Pair(a, b, how))

    for a_name, b_name in explicit:
        a = _find(left, a_name, "before")
        b = _find(right, b_name, "after")
        take(a, b, "--pair")
    # The same kernel directory with the same bytes on both sides (a build diffed with itself, an entry two
    # caches share) is the same specialization: paired without parsing its TTIR (a diff of 1,250 kernels with
    # themselves spent 11 s parsing TTIRs in this process, 2.5x its scans).
    # The very same result on both sides (irscope diff analyzed it once: scan(shared=...)), or the same
    # directory whose every artifact has the same digest.
    same = _group(right, _same_files)
    unpaired = {id(b): b for b in right}
    for a in list(left):
        files = _same_files(a) if id(a) not in unpaired else None
        found = [a] if id(a) in unpaired else same.get(files, []) if files is not None else []
        if len(found) == 1 and id(found[0]) in unpaired:
            take(a, unpaired.pop(id(found[0])), "specialization")
    for how, key in (("specialization", specialization), ("name+arch", _name_arch), ("name", _name)):
        groups_a, groups_b = _group(left, key), _group(right, key)
        for k, items in groups_a.items():
            if len(items) == 1 and len(groups_b.get(k, ())) == 1:
                take(items[0], groups_b[k][0], how)
    order = {id(k): i for i, k in enumerate(after)}
    pairs.sort(key=lambda p: order[id(p.after)])
    return Matching(tuple(pairs), tuple(left), tuple(right))


def _same_files(kr: KernelReport) -> tuple | None:
    """The kernel's directory, key and every artifact's path and digest; None when one was not read (no
    digest: nothing proves the bytes are the same)."""
    k = kr.kernel
    if not k.artifacts or any(a.digest is None for a in k.artifacts):
        return None
    return k.directory, k.key, tuple((a.stage, a.path, a.size, a.digest) for a in k.artifacts)


def _name_arch(kr: KernelReport) -> tuple:
    return kr.kernel.name, kr.kernel.target.arch if kr.kernel.target else None


def _name(kr: KernelReport) -> str:
    return kr.kernel.name


def _group(items: list[KernelReport], key) -> dict:
    out: dict = {}
    for kr in items:
        out.setdefault(key(kr), []).append(kr)
    return out


def _find(items: list[KernelReport], spec: str, side: str) -> KernelReport:
    name, _, arch = spec.partition("@")
    hits = [kr for kr in items if kr.kernel.key == spec] or [
        kr for kr in items if kr.kernel.name == name and (not arch or _name_arch(kr)[1] == arch)]
    if len(hits) != 1:
        found = "no kernel" if not hits else f"{len(hits)} kernels"
        raise ValueError(f"--pair: {found} on the {side} side match {spec!r} (give a kernel key, or name@arch)")
    return hits[0]
