"""The cocotb regression: every parameter set of ``hw.catalog.REGRESSION`` on both simulators.

``SIM=verilator`` or ``SIM=icarus`` restricts it to one simulator (``make regress`` does).
A simulator that is not installed is skipped with the reason; CI has both.
"""

import os

import pytest

from hw.catalog import REGRESSION
from tb.runner import SIMULATORS, missing_simulator, run_bench

_selected = os.environ.get("SIM")
if _selected and _selected not in SIMULATORS:
    raise ValueError(f"SIM must be one of {', '.join(SIMULATORS)}, not {_selected!r}")


@pytest.mark.cocotb
@pytest.mark.parametrize("simulator", [s for s in SIMULATORS if _selected in (None, "", s)])
@pytest.mark.parametrize("config", REGRESSION, ids=[config.name for config in REGRESSION])
def test_rtl_matches_model(config, simulator):
    reason = missing_simulator(simulator)
    if reason:
        pytest.skip(reason)
    run_bench(config, simulator)
