"""The cocotb regression: every parameter set of ``hw.flow.catalog.REGRESSION`` on both simulators.

``SIM=verilator`` or ``SIM=icarus`` restricts it to one simulator (``make regress`` does).
A simulator that is not installed is skipped with the reason; CI has both. The last tests
feed deliberately broken circuits to the same bench, which must reject each of them.
"""

import pytest
from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.flow.catalog import REGRESSION, SHARED_REGRESSION, BlockConfig
from hw.flow.runner import run_bench
from hw.maxblock import GroupedMaxFreeBlock, MaxFreeBlock


@pytest.mark.cocotb
@pytest.mark.parametrize("config", REGRESSION, ids=[config.name for config in REGRESSION])
def test_rtl_matches_model(config, simulator):
    run_bench(config, simulator)


@pytest.mark.cocotb
@pytest.mark.parametrize("config", SHARED_REGRESSION,
                         ids=[config.name for config in SHARED_REGRESSION])
def test_shared_unit_matches_model(config, simulator):
    run_bench(config, simulator, test_module="tb.test_shared")


# -- the bench bites: deliberately broken circuits must fail it -----------------------------------

class _TopLengthWrong(MaxFreeBlock):
    """Reports n - 1 when every block is free."""

    def _run_lengths(self):
        samples, lengths = super()._run_lengths()
        return samples, [*lengths[:-1], self.n - 1]


class _GroupAnyFree(GroupedMaxFreeBlock):
    """Keeps a group when any block of it is free, instead of when all are."""

    def _first_stage(self):
        size = self.n // self.groups
        return Cat(*(self.status[g * size:(g + 1) * size].any() for g in range(self.groups)))


class _OneClockLate(wiring.Component):
    """A correct circuit with one register too many in front of it."""

    def __init__(self, n, latency):
        self._inner = MaxFreeBlock(n, latency=latency)
        super().__init__({"status": In(n), "length": Out(range(n + 1))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = self._inner
        m.d.sync += self._inner.status.eq(self.status)
        m.d.comb += self.length.eq(self._inner.length)
        return m


MUTANTS = {
    "top_length": (BlockConfig("full", 16, 1, 0), lambda: _TopLengthWrong(16)),
    "group_any": (BlockConfig("grouped", 32, 1, 1, groups=8),
                  lambda: _GroupAnyFree(32, 8, latency=1)),
    "one_clock_late": (BlockConfig("full", 16, 1, 1), lambda: _OneClockLate(16, 1)),
}


@pytest.mark.cocotb
@pytest.mark.parametrize("mutant", MUTANTS)
def test_bench_rejects_broken_circuit(mutant, any_simulator):
    config, build = MUTANTS[mutant]
    with pytest.raises(SystemExit):
        run_bench(config, any_simulator, component=build(), tag=f"_mutant_{mutant}",
                  extra_env={"TB_RANDOM_VECTORS": "200"})
