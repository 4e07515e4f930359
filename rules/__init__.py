"""Performance rules over the parsed artifacts (installed as `irscope.rules`).

One rule per module, `irsNNN_<slug>.py`; each registers through the `irscope.rules`
entry-point group in pyproject.toml, the way a third-party rule package would. `BUILTIN`
is the same list (tests/test_rules_engine.py checks that the two agree).
"""

from __future__ import annotations

from irscope.rules.irs101_narrow_global_load import NarrowGlobalLoad
from irscope.rules.irs102_narrow_global_store import NarrowGlobalStore
from irscope.rules.irs103_narrow_lds_access import NarrowLdsAccess
from irscope.rules.irs201_drained_wait_in_loop import DrainedWaitInLoop
from irscope.rules.irs202_barriers_per_iteration import BarriersPerIteration
from irscope.rules.irs301_lds_round_trip import LdsRoundTrip
from irscope.rules.irs302_convert_before_store import ConvertBeforeStore
from irscope.rules.irs401_spills import Spills
from irscope.rules.irs402_vgprs_above_step import VgprsAboveStep
from irscope.rules.irs403_lds_limited_occupancy import LdsLimitedOccupancy
from irscope.rules.irs404_occupancy_one import OccupancyOne
from irscope.rules.irs501_mfma_32x32 import Mfma32x32
from irscope.rules.irs601_grid_too_small import GridTooSmall

BUILTIN = (
    NarrowGlobalLoad,
    NarrowGlobalStore,
    NarrowLdsAccess,
    DrainedWaitInLoop,
    BarriersPerIteration,
    LdsRoundTrip,
    ConvertBeforeStore,
    Spills,
    VgprsAboveStep,
    LdsLimitedOccupancy,
    OccupancyOne,
    Mfma32x32,
    GridTooSmall,
)
