"""docs/rules/ is generated from the rules' own docstrings, so the docs and `irscope explain`
can never disagree. Regenerate with `python -m irscope.engine.docs docs/rules`; a test fails
when the committed pages differ from what this writes."""

from __future__ import annotations

import sys
from pathlib import Path

from irscope.engine.rule import Rule
from irscope.engine.selection import load_rules


def page(rule: type[Rule]) -> str:
    """A rule's documentation as Markdown: title, metadata, then the docstring's sections."""
    doc = rule.documentation()
    first, _, body = doc.partition("\n")
    meta = (f"- Code: `{rule.code}`, slug: `{rule.slug}`\n- Default severity: {rule.severity}\n"
            f"- Reads: {', '.join(rule.stages)}; backends: {', '.join(rule.backends)}\n")
    return f"# {rule.code} {rule.slug}\n\n{first.strip()}\n\n{meta}\n{body.strip()}\n"


def index(rules: tuple[type[Rule], ...]) -> str:
    rows = "\n".join(f"| [{r.code}]({r.code}.md) | `{r.slug}` | {r.severity} | {r.summary} |" for r in rules)
    return ("# Rules\n\nGenerated from the rule classes by `python -m irscope.engine.docs docs/rules`; "
            "`irscope rules` lists the same, `irscope explain CODE` prints one page.\n\n"
            f"| code | slug | severity | what it finds |\n|---|---|---|---|\n{rows}\n")


def expected_files() -> dict[str, str]:
    rules = load_rules()
    files = {f"{r.code}.md": page(r) for r in rules}
    files["README.md"] = index(rules)
    return files


def write(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in expected_files().items():
        (directory / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"))
