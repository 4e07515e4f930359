"""Issue 24: irscope's imports follow the pipeline, and no module imports itself in a circle.

Every module of irscope/ (with its subpackages), parsers/ (installed as irscope.parsers), rules/
(irscope.rules) and tui/ (irscope.tui) is read with `ast`, and every import in it is collected: at
module level, inside functions and classes, and in `if TYPE_CHECKING:` blocks. Relative imports are
resolved; `from irscope.x import name` counts as importing the submodule irscope.x.name when that is a
module, else irscope.x. A package's own `__init__` that Python runs before any of its submodules is not
counted as imported: only what the source names.

Layers (an import may go to the same or a lower layer, never to a higher one):

    0 model (irscope/model/*, and the data models of IR and ISA the parsers
      build: ir/mlir.py, ir/types.py, ir/llvm_ir.py, ir/layouts/encodings.py, ir/layouts/params.py,
      isa/model.py)
    1 parsers        2 ir, isa (the analyses)
    3 occupancy      4 engine     5 rules      6 pipeline      7 diff, render
    8 cli, tui, pytest_plugin, api, testing, __main__

Faces: irscope/__init__ and the deprecated one-release aliases irscope/rule.py, rule_context.py,
report.py and findings.py only re-export. A face sits at the highest layer it imports (irscope/__init__
re-exports api, so it is layer 8: only cli/tui/... may import it, e.g. for `__version__`, which lives in
irscope/model/version.py at layer 0 so that nothing below needs the face). No module of irscope imports a
deprecated alias: they exist for third-party code only. (irscope/model/__init__ re-exports
irscope/model/kernel.py from its own layer, so it is an ordinary layer-0 module.)

Cycles: the import graph may have no strongly connected component of more than one module; function-level
imports count (a function-level import that closes a circle is a circle deferred, not removed). Imports
under `if TYPE_CHECKING:` are checked for direction (a lower layer naming a higher one's type is still
coupled to it) but not for cycles: they never run, and two modules of one layer may name each other's
types.

Rules: a rule module (rules/irsNNN_*.py) imports no other rule module. Helpers that several rules share
live in rules/_*.py modules, which any rule may import.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DATA_MODELS = ("irscope.ir.mlir", "irscope.ir.types", "irscope.ir.llvm_ir", "irscope.ir.layouts.encodings",
               "irscope.ir.layouts.params", "irscope.isa.model")

# Where each installed package's source lives in the checkout (pyproject's package-dir).
SOURCES = {"irscope": ROOT / "irscope", "irscope.parsers": ROOT / "parsers", "irscope.rules": ROOT / "rules",
           "irscope.tui": ROOT / "tui"}

LAYERS: tuple[tuple[str, int], ...] = (
    ("irscope.model", 0),
    # The data models of IR and ISA, which the parsers build and the analyses of ir/ and isa/ read:
    # plain types that import only the model (checked like any layer-0 module).
    *((module, 0) for module in DATA_MODELS),
    ("irscope.parsers", 1),
    ("irscope.ir", 2),
    ("irscope.isa", 2),
    ("irscope.occupancy", 3),
    ("irscope.engine", 4),
    ("irscope.rules", 5),
    ("irscope.pipeline", 6),
    ("irscope.diff", 7),
    ("irscope.render", 7),
    ("irscope.cli", 8),
    ("irscope.tui", 8),
    ("irscope.pytest_plugin", 8),
    ("irscope.api", 8),
    ("irscope.testing", 8),
    ("irscope.__main__", 8),
)
DEPRECATED_ALIASES = frozenset({"irscope.rule", "irscope.rule_context", "irscope.report", "irscope.findings"})
FACES = DEPRECATED_ALIASES | {"irscope"}

RULE_MODULE = re.compile(r"^irscope\.rules\.irs\d{3}_\w+$")

# Exceptions to the three rules below: none. One would be listed here with its reason (a rule importing
# a rule, an import up a layer, a circle); test_the_allow_lists_are_not_stale fails when a listed
# exception no longer exists, so a list can only shrink to the truth.
RULE_IMPORTS_ALLOWED: frozenset[tuple[str, str]] = frozenset()
UPWARD_ALLOWED: frozenset[tuple[str, str]] = frozenset()
CYCLES_ALLOWED: frozenset[frozenset[str]] = frozenset()


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: Path
    line: int
    type_checking: bool

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def module_files() -> dict[str, Path]:
    modules = {}
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


MODULES = module_files()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, type_checking: bool = False):
    """Every import statement under node, with whether it sits in an `if TYPE_CHECKING:` body."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, type_checking
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), True)
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), type_checking)
        else:
            yield from _walk(child, type_checking)


def _known(name: str) -> str | None:
    """The module of irscope that `name` is, or the nearest enclosing one."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found = []
    seen = set()  # one entry per imported module and line, however many names the line imports
    for node, type_checking in _walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in MODULES else base)
        for target in targets:
            known = _known(target) if target.split(".")[0] == "irscope" else None
            if known is not None and known != module and (known, node.lineno) not in seen:
                seen.add((known, node.lineno))
                found.append(Import(module, known, path, node.lineno, type_checking))
    return found


ALL_IMPORTS = [imp for module, path in MODULES.items() for imp in imports_of(module, path)]


def layer_of(module: str) -> int | None:
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def face_layer(face: str) -> int:
    """A face sits at the highest layer it re-exports."""
    return max((layer_of(i.imported) or 0 for i in ALL_IMPORTS if i.importer == face), default=0)


def effective_layer(module: str) -> int:
    return face_layer(module) if module in FACES else layer_of(module)


def test_every_module_has_a_layer_or_is_a_face():
    missing = [m for m in MODULES if m not in FACES and layer_of(m) is None]
    assert not missing, f"modules with no layer (add them to LAYERS in {Path(__file__).name}): {missing}"


def test_the_walk_sees_the_known_imports():
    # Guards the walker itself: a module-level, a relative-free from-import of a submodule, and a
    # function-level import are all seen.
    pairs = {(i.importer, i.imported) for i in ALL_IMPORTS}
    assert ("irscope.pipeline.analyze", "irscope.pipeline.harvester") in pairs
    assert ("irscope.model.kernel", "irscope.model.artifact_reader") in pairs  # inside Artifact.read_bytes
    assert len(MODULES) > 150


def test_no_import_goes_up_a_layer():
    bad = []
    for imp in ALL_IMPORTS:
        if imp.importer in FACES:
            continue
        if imp.imported in DEPRECATED_ALIASES:
            bad.append(f"{imp.where()}: {imp.importer} imports the deprecated alias {imp.imported}")
            continue
        low, high = effective_layer(imp.importer), effective_layer(imp.imported)
        if high > low and (imp.importer, imp.imported) not in UPWARD_ALLOWED:
            bad.append(f"{imp.where()}: {imp.importer} (layer {low}) imports {imp.imported} (layer {high})"
                       + (" [TYPE_CHECKING]" if imp.type_checking else ""))
    assert not bad, "imports against the pipeline's direction:\n" + "\n".join(bad)


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (the graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return result


def _cycle_path(graph: dict[str, set[str]], members: set[str], edges: dict[tuple[str, str], Import]) -> str:
    """One circle through a component's first module, each step as `file:line`."""
    start = min(members)
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                steps = [(node, child)]
                while previous[node] is not None:
                    steps.append((previous[node], node))
                    node = previous[node]
                return "\n".join(f"    {edges[s].where()}: {s[0]} -> {s[1]}" for s in reversed(steps))
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return "    (no path found)"


def test_no_import_cycles():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    edges: dict[tuple[str, str], Import] = {}
    for imp in ALL_IMPORTS:
        if not imp.type_checking:
            graph[imp.importer].add(imp.imported)
            edges.setdefault((imp.importer, imp.imported), imp)
    cycles = [c for c in _components(graph) if len(c) > 1 and frozenset(c) not in CYCLES_ALLOWED]
    report = [f"cycle of {len(c)} modules ({', '.join(c)}):\n" + _cycle_path(graph, set(c), edges) for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(report)


def _rule_imports() -> set[tuple[str, str]]:
    return {(i.importer, i.imported) for i in ALL_IMPORTS
            if RULE_MODULE.match(i.importer) and RULE_MODULE.match(i.imported)}


def test_no_rule_imports_another_rule():
    bad = [f"{i.where()}: {i.importer} imports the rule {i.imported} (share it through a rules/_*.py helper)"
           for i in ALL_IMPORTS
           if RULE_MODULE.match(i.importer) and RULE_MODULE.match(i.imported)
           and (i.importer, i.imported) not in RULE_IMPORTS_ALLOWED]
    assert not bad, "rules importing rules:\n" + "\n".join(bad)


def test_the_allow_lists_are_not_stale():
    stale = RULE_IMPORTS_ALLOWED - _rule_imports()
    assert not stale, f"allowed rule imports that no longer exist (delete them): {sorted(stale)}"
    upward = {(i.importer, i.imported) for i in ALL_IMPORTS if effective_layer(i.imported) > effective_layer(i.importer)
              and i.importer not in FACES}
    gone = sorted(UPWARD_ALLOWED - upward)
    assert not gone, f"allowed upward imports that are gone (delete them): {gone}"
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in ALL_IMPORTS:
        if not imp.type_checking:
            graph[imp.importer].add(imp.imported)
    components = {frozenset(c) for c in _components(graph) if len(c) > 1}
    assert not CYCLES_ALLOWED - components, f"allowed cycles that are gone (delete them): {CYCLES_ALLOWED - components}"


# The top level of irscope/: the package face, the entry modules and the one-release aliases; every
# other module lives in the subpackage of its step.
TOP_LEVEL = {"irscope", "irscope.__main__", "irscope.api", "irscope.testing", "irscope.pytest_plugin"}


def test_the_top_level_holds_only_the_faces_and_entry_modules():
    top = {m for m in MODULES if m.count(".") <= 1 and not m.startswith(("irscope.parsers", "irscope.rules",
                                                                           "irscope.tui"))
           and (ROOT / "irscope" / (m.split(".", 1)[1] + ".py") if "." in m else ROOT / "irscope").exists()}
    assert top == TOP_LEVEL | DEPRECATED_ALIASES, sorted(top ^ (TOP_LEVEL | DEPRECATED_ALIASES))


def test_the_old_public_import_paths_still_work():
    """Third-party rules and scripts import these; they stay for one release after the move (issue 24)."""
    from irscope.engine.context import KernelContext
    from irscope.engine.rule import Rule
    from irscope.model.findings import Finding
    from irscope.model.kernel import Kernel, KernelReport
    from irscope.model.report import Report
    from irscope.rule import Rule as OldRule
    from irscope.rule_context import KernelContext as OldContext
    from irscope.report import Report as OldReport
    from irscope.findings import Finding as OldFinding
    from irscope.model import Kernel as OldKernel, KernelReport as OldKernelReport
    import irscope

    assert (OldRule, OldContext, OldReport, OldFinding, OldKernel, OldKernelReport) == (
        Rule, KernelContext, Report, Finding, Kernel, KernelReport)
    assert irscope.Report is Report and callable(irscope.scan) and callable(irscope.load)
