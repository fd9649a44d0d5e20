"""Shared pytest set-up: the ``simulator`` parameter of every cocotb co-simulation test.

A test that takes a ``simulator`` argument runs once per HDL simulator of
:data:`hw.flow.runner.SIMULATORS`; ``SIM=verilator`` or ``SIM=icarus`` keeps one (``make regress``
passes it through). A simulator that is not installed is skipped with the reason.
"""

import os

import pytest

from hw.flow.runner import SIMULATORS, missing_simulator


def _simulators() -> list:
    selected = os.environ.get("SIM") or None
    if selected is not None and selected not in SIMULATORS:
        raise pytest.UsageError(f"SIM must be one of {', '.join(SIMULATORS)}, not {selected!r}")
    params = []
    for simulator in SIMULATORS:
        if selected in (None, simulator):
            reason = missing_simulator(simulator)
            params.append(pytest.param(simulator,
                                       marks=pytest.mark.skip(reason=reason) if reason else ()))
    return params


def pytest_generate_tests(metafunc):
    if "simulator" in metafunc.fixturenames:
        metafunc.parametrize("simulator", _simulators())


@pytest.fixture
def any_simulator() -> str:
    """One HDL simulator that is installed (Icarus first: it builds faster), else a skip."""
    for simulator in ("icarus", "verilator"):
        if not missing_simulator(simulator):
            return simulator
    pytest.skip("no HDL simulator is installed")
