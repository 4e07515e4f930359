"""The typed values every stage passes along (irscope/model/kernel.py and its neighbours).

`from irscope.model import Kernel, KernelReport, ...` keeps working: the package re-exports
irscope/model/kernel.py.
"""

import os

_HERE = os.path.dirname(__file__)


def _is_submodule(name: str) -> bool:
    return os.path.exists(os.path.join(_HERE, name + ".py"))


def __getattr__(name: str):
    # Imported on first use (PEP 562): irscope.model.version and the other small modules of this
    # package are read at start-up, and must not pull kernel.py's imports in (issue 25).
    if name.startswith("__") or _is_submodule(name):  # `from irscope.model import facts` imports only facts
        raise AttributeError(name)
    from irscope.model import kernel

    try:
        value = getattr(kernel, name)
    except AttributeError:
        raise AttributeError(f"module 'irscope.model' has no attribute {name!r}") from None
    globals()[name] = value
    return value
