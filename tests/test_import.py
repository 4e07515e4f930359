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


# What a person waits for at start-up (issue 25): none of these is needed to print the version or to
# show a kernel whose results are in the result index.
STARTUP_HEAVY = "{'pandas', 'pyarrow', 'networkx', 'lark', 'textual', 'yaml', 'pygments', 'triton', 'torch'}"


def _startup_check(code: str, env: dict | None = None) -> None:
    proc = subprocess.run([sys.executable, "-c", code + f"\nheavy = {STARTUP_HEAVY} & set(sys.modules)\n"
                           "assert not heavy, sorted(heavy)\n"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def test_import_and_version_need_no_heavy_module():
    _startup_check("import sys, irscope, irscope.cli.main")
    _startup_check("import sys, contextlib, io\nfrom irscope.cli.main import main\n"
                   "with contextlib.redirect_stdout(io.StringIO()):\n"
                   "    try:\n        main(['--version'])\n    except SystemExit:\n        pass")


def test_a_warm_scan_of_one_kernel_needs_no_heavy_module(tmp_path):
    import os

    kernel = next(p for p in sorted((FIXTURES / "caches" / "triton-3.6").iterdir())
                  if any(p.glob("*.ttgir")) and any(p.glob("*.amdgcn")))
    env = {**os.environ, "IRSCOPE_CACHE_DIR": str(tmp_path / "home")}
    scan = (f"import sys, contextlib, io\nfrom irscope.cli.main import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    code = main(['scan', {str(kernel)!r}, '--quiet'])\n"
            "assert code in (0, 1), code\n")
    subprocess.run([sys.executable, "-c", scan], check=True, env=env)  # fills the result index
    _startup_check(scan + "from irscope.pipeline import index_db\n", env)
