"""The core stays light: a copied cache is analyzed with no triton, torch or textual."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES

HEAVY = "{'triton', 'torch', 'textual'}"


def _python(code: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_import_irscope_imports_no_heavy_package():
    _python(f"import irscope, sys; assert not {HEAVY} & set(sys.modules), {HEAVY} & set(sys.modules)")


def test_scanning_imports_no_heavy_package():
    root = FIXTURES / "caches" / "triton-3.6"
    _python(
        "import irscope, sys\n"
        f"r = irscope.scan({str(root)!r})\n"
        "assert r.kernels and all(k.resources for k in r.kernels)\n"
        f"assert not {HEAVY} & set(sys.modules), {HEAVY} & set(sys.modules)\n"
    )


def test_scanning_works_when_triton_cannot_be_imported(tmp_path):
    # A package named triton that fails on import stands for a machine without it.
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("raise ImportError('no triton here')\n")
    root = FIXTURES / "caches" / "triton-3.6"
    _python(
        f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
        "import irscope.cli.main\n"
        f"assert irscope.cli.main.main(['scan', {str(root)!r}, '--json', {str(tmp_path / 'r.json')!r}]) == 0\n"
    )
