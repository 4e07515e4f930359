"""The card's layout installs as one package: every folder with an __init__.py ships."""

from __future__ import annotations

import subprocess
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
import zipfile
from pathlib import Path

from conftest import REPO

SOURCE_DIRS = {"irscope": "irscope", "irscope.parsers": "parsers", "irscope.rules": "rules", "irscope.tui": "tui"}


def _packages_on_disk() -> set[str]:
    found = set()
    for package, folder in SOURCE_DIRS.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *rel)))
    return found


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_package_folder_is_listed():
    setuptools = _pyproject()["tool"]["setuptools"]
    assert set(setuptools["packages"]) == _packages_on_disk()
    assert setuptools["package-dir"] == SOURCE_DIRS


def test_installed_subpackages_come_from_the_card_folders():
    import irscope.parsers
    import irscope.rules
    import irscope.tui

    assert Path(irscope.parsers.__file__).parent == REPO / "parsers"
    assert Path(irscope.rules.__file__).parent == REPO / "rules"
    assert Path(irscope.tui.__file__).parent == REPO / "tui"


def test_triton_is_a_linux_only_unpinned_dependency():
    deps = _pyproject()["project"]["dependencies"]
    (triton,) = [d for d in deps if d.startswith("triton")]
    requirement, marker = triton.split(";")
    assert marker.strip() == "sys_platform == 'linux'"
    assert "==" not in requirement and "<" not in requirement and "~=" not in requirement


def test_wheel_holds_every_package(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("irscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in _packages_on_disk():
        assert package.replace(".", "/") + "/__init__.py" in names, package
    assert not any(n.startswith(("parsers/", "rules/", "tui/", "tests/", "fixtures/")) for n in names)
    for grammar in (REPO / "parsers").glob("*.lark"):  # package data: the parsers open them at run time
        assert f"irscope/parsers/{grammar.name}" in names
