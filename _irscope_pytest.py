"""irscope's pytest plugin entry point (pytest11): its options, and nothing else until one is used.

pytest imports every installed plugin at start. This module is top-level, as Hypothesis's
`_hypothesis_pytestplugin` is, because a module inside the irscope package imports the package
(about 100 ms of model imports) into every pytest run of an environment with irscope installed.
The plugin itself, irscope/pytest_plugin.py, is imported and registered only when `--irscope
PATH` or the ini option `irscope_paths` is given. `-p no:irscope` turns it off.
"""

from __future__ import annotations


def pytest_addoption(parser) -> None:
    group = parser.getgroup("irscope", "irscope: findings on the code Triton generated, as tests")
    group.addoption("--irscope", action="append", default=[], metavar="PATH", dest="irscope_paths",
                    help="scan this Triton cache, kernel directory or saved report (repeatable) and add a test "
                         "per kernel and rule family: irscope::<kernel>::IRS1xx")
    group.addoption("--irscope-select", action="append", default=[], metavar="CODES", dest="irscope_select",
                    help="only these rules: codes, prefixes (IRS1), slugs or ALL, comma-separated; replaces "
                         "[tool.irscope] select")
    group.addoption("--irscope-ignore", action="append", default=[], metavar="CODES", dest="irscope_ignore",
                    help="skip these rules (added to [tool.irscope] ignore)")
    group.addoption("--irscope-baseline", metavar="FILE", dest="irscope_baseline",
                    help="accept the findings in FILE (`irscope baseline PATH > FILE`): only new ones fail")
    group.addoption("--irscope-no-cache", action="store_true", dest="irscope_no_cache",
                    help="analyze every kernel afresh, without irscope's result index")
    group.addoption("--irscope-only", action="store_true", dest="irscope_only",
                    help="collect irscope's tests only, no test files from directories or testpaths")
    parser.addini("irscope_paths", type="paths", default=[],
                  help="Triton caches to check as with --irscope, relative to the ini file")
    parser.addini("irscope_baseline", default="", help="the baseline file, relative to the ini file")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "irscope: a check of a Triton kernel's generated code by irscope")
    if config.getoption("irscope_paths") or config.getini("irscope_paths"):
        from irscope.pytest_plugin import IrscopePlugin

        config.pluginmanager.register(IrscopePlugin(config), "irscope-session")
