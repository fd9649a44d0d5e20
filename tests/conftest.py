"""Shared pytest set-up: the ``simulator`` parameter of every cocotb co-simulation test, and
the order of the suite.

A test that takes a ``simulator`` argument runs once per HDL simulator of
:data:`hw.flow.runner.SIMULATORS`; ``SIM=verilator`` or ``SIM=icarus`` keeps one (``make regress``
passes it through). A simulator that is not installed is skipped with the reason.

The fast tier runs first (:data:`FIRST`: the dispatcher RTL under Amaranth's simulator), so
that a slip in ``hw/dispatch/`` fails in the first minutes of ``make test``, then the longest
tests: pytest-xdist's ``--dist loadgroup`` hands tests to the workers in the order collected.
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


#: Test files run before every other, in this order: the fast RTL tier, then the files of the
#: longest single tests (builds, co-simulations, make sim, proofs), so that the two workers
#: end together on short tests instead of one waiting for the other's long one.
FIRST = ("test_dispatch_rtl_sim.py", "test_make_sim.py", "test_cocotb_dispatch.py",
         "test_cocotb_maxblock.py", "test_cocotb_arbiter.py", "test_formal_sby.py",
         "test_formal.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = item.path.name
        return FIRST.index(name) if name in FIRST else len(FIRST)

    items.sort(key=rank)                # stable: the rest keep their order


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
