"""The typed values every stage passes along (irscope/model/kernel.py and its neighbours).

`from irscope.model import Kernel, KernelReport, ...` keeps working: the package re-exports
irscope/model/kernel.py.
"""

from irscope.model.kernel import *  # noqa: F401,F403
