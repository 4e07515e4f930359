"""The README's first commands are the ones CI runs, and it documents every command."""

from __future__ import annotations

import re

from conftest import REPO

from irscope.cli.main import _parser


def _first_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block and text.index("```bash") < 200, "the commands come first"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_ci_runs_the_readme_test_command():
    install_and_run, install_and_test = _first_block()
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == install_and_test
    assert "irscope scan examples/" in install_and_run and "--target" in install_and_run


def test_bundled_example_of_the_first_command_exists():
    install_and_run, _ = _first_block()
    path = install_and_run.rsplit("irscope scan ", 1)[1].split()[0]
    assert (REPO / path).is_file()


def test_every_command_is_documented():
    readme = (REPO / "README.md").read_text()
    sub = next(a for a in _parser()._actions if a.dest == "==SUPPRESS==" or getattr(a, "choices", None))
    for name in sub.choices:
        assert f"### `irscope {name}" in readme, name
