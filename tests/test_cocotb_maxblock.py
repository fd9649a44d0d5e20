"""The cocotb regression: every parameter set of ``hw.flow.catalog.REGRESSION`` on both simulators.

``SIM=verilator`` or ``SIM=icarus`` restricts it to one simulator (``make regress`` does).
A simulator that is not installed is skipped with the reason; CI has both. Each bench must
report exactly the tests that apply to it as run and passed (the exhaustive test is skipped,
and counted as skipped, above 12 blocks), and the Verilog it simulated must pass Verilator's
lint with the waivers ``make verilog`` ships beside it. The last tests feed deliberately
broken circuits to the same bench, which must reject each of them.
"""

import os
from pathlib import Path

import pytest
from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.flow.catalog import REGRESSION, SHARED_REGRESSION, BlockConfig
from hw.flow.generate import lint, ports, waivers
from hw.flow.runner import bench_outcomes, run_bench
from hw.maxblock import GroupedMaxFreeBlock, MaxFreeBlock, pipeline_ports

#: The tests of tb/test_maxblock.py and tb/test_shared.py.
BLOCK_TESTS = ("directed", "exhaustive", "seeded_random", "stalls_holds_and_resets")
SHARED_TESTS = ("boundaries", "seeded_random", "stalls_and_resets")


#: Icarus is the four-state cross-check of benches Verilator runs in full. On the wide circuits
#: (64 blocks or more) vvp took about 9 ms a clock (110 of the 134 s of the n = 128 exact
#: bench, cocotb's profiler: the bench's Python is 13 s; two thirds of that on the netlist
#: Yosys cleans for Icarus, hw.flow.runner.run_bench), so there it draws a quarter of the
#: random words, from another seed: the two simulators together see 12,500 different words
#: instead of the same 10,000 twice. The directed, exhaustive and stall/hold/reset tests run
#: whole on both. ``TB_SEED`` or ``TB_RANDOM_VECTORS`` set by the user win.
ICARUS_WIDE = 64
ICARUS_WIDE_ENV = {"TB_RANDOM_VECTORS": "2500", "TB_SEED": "2027"}


def bench_env(width: int, simulator: str) -> dict[str, str] | None:
    """The random-stimulus settings of a bench of ``width`` blocks on ``simulator``."""
    if simulator != "icarus" or width < ICARUS_WIDE:
        return None
    return {name: value for name, value in ICARUS_WIDE_ENV.items() if name not in os.environ}


def _lint_clean(config, results: Path) -> None:
    # The Verilog the bench simulated, with the waivers `make verilog` writes beside it.
    verilog = results.parent / f"{config.name}.v"
    text = verilog.read_text()
    waiver_file = verilog.with_suffix(".vlt")
    component = config.component()
    component._MustUse__silence = True          # only its signature is read
    waiver_file.write_text(waivers(config, text, ports(component.signature, text,
                                                       config.name)))
    result = lint(verilog, waiver_file)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.cocotb
@pytest.mark.parametrize("config", REGRESSION, ids=[config.name for config in REGRESSION])
def test_rtl_matches_model(config, simulator):
    results = run_bench(config, simulator, extra_env=bench_env(config.n, simulator))
    expected = {test: "passed" for test in BLOCK_TESTS}
    if config.n > 12:
        expected["exhaustive"] = "skipped"
    assert bench_outcomes(results) == expected
    if simulator == "verilator":
        _lint_clean(config, results)


@pytest.mark.cocotb
@pytest.mark.parametrize("config", SHARED_REGRESSION,
                         ids=[config.name for config in SHARED_REGRESSION])
def test_shared_unit_matches_model(config, simulator):
    results = run_bench(config, simulator, test_module="tb.test_shared",
                        extra_env=bench_env(config.schedule.width, simulator))
    assert bench_outcomes(results) == dict.fromkeys(SHARED_TESTS, "passed")
    if simulator == "verilator":
        _lint_clean(config, results)


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
    """A correct circuit with one register too many in front of its data, while ``valid``
    goes straight in: every answer comes one clock after its ``result_valid``."""

    def __init__(self, n, latency):
        self._inner = MaxFreeBlock(n, latency=latency)
        super().__init__({"status": In(n), "length": Out(range(n + 1)),
                          **pipeline_ports(latency)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner
        m.d.sync += inner.status.eq(self.status)
        m.d.comb += [inner.valid.eq(self.valid), inner.enable.eq(self.enable),
                     self.length.eq(inner.length), self.result_valid.eq(inner.result_valid)]
        return m


class _StallIgnored(wiring.Component):
    """A correct circuit whose data move on while ``enable`` is low (only ``valid`` and
    ``result_valid`` obey it): a stalled word is lost."""

    def __init__(self, n, latency):
        self._data = MaxFreeBlock(n, latency=latency)
        self._control = MaxFreeBlock(n, latency=latency)
        super().__init__({"status": In(n), "length": Out(range(n + 1)),
                          **pipeline_ports(latency)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.data = data = self._data
        m.submodules.control = control = self._control
        m.d.comb += [data.status.eq(self.status), data.enable.eq(1),
                     control.valid.eq(self.valid), control.enable.eq(self.enable),
                     self.length.eq(data.length), self.result_valid.eq(control.result_valid)]
        return m


MUTANTS = {
    "top_length": (BlockConfig("full", 16, 1, 0), lambda: _TopLengthWrong(16)),
    "group_any": (BlockConfig("grouped", 32, 1, 1, groups=8),
                  lambda: _GroupAnyFree(32, 8, latency=1)),
    "one_clock_late": (BlockConfig("full", 16, 1, 1), lambda: _OneClockLate(16, 1)),
    "stall_ignored": (BlockConfig("full", 16, 1, 3), lambda: _StallIgnored(16, 3)),
}


@pytest.mark.cocotb
@pytest.mark.parametrize("mutant", MUTANTS)
def test_bench_rejects_broken_circuit(mutant, any_simulator):
    config, build = MUTANTS[mutant]
    with pytest.raises(SystemExit):
        run_bench(config, any_simulator, component=build(), tag=f"_mutant_{mutant}",
                  extra_env={"TB_RANDOM_VECTORS": "200"})


def test_icarus_draws_other_words_on_the_wide_circuits_only(monkeypatch):
    monkeypatch.delenv("TB_SEED", raising=False)
    monkeypatch.delenv("TB_RANDOM_VECTORS", raising=False)
    assert bench_env(128, "verilator") is None and bench_env(32, "icarus") is None
    assert bench_env(64, "icarus") == {"TB_RANDOM_VECTORS": "2500", "TB_SEED": "2027"}
    monkeypatch.setenv("TB_SEED", "7")           # the user's replay seed is kept
    assert bench_env(128, "icarus") == {"TB_RANDOM_VECTORS": "2500"}
