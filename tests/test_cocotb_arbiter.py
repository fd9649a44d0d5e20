"""The cocotb regression of the delay-factor arbiter: a few parameter sets on both simulators.

``SIM=verilator`` or ``SIM=icarus`` restricts it to one simulator. A simulator that is not
installed is skipped with the reason; CI has both. The last tests feed broken arbiters to the
bench -- built with the wrong parameters, or without the rule that makes one grant per job --
which must reject each of them.
"""

import pytest

from hw.arbiter import ArbiterConfig, DelayFactorArbiter
from hw.flow.runner import run_bench
from tb.test_arbiter import LevelRequestArbiter

#: The regression: the seed's arbiter at the default size; two classes and integer H with
#: slot-index ties; an odd slot count (the slot field has unused values) with 16 fraction
#: bits and a long-memory table; the no-decay variant; and the proposed setting (no decay,
#: 12-bit W) at the default size.
ARBITER_REGRESSION = (
    ArbiterConfig(),
    ArbiterConfig(4, 2, 0, tie_break="index"),
    ArbiterConfig(5, 3, 16, ((1, 4096), (3, 2048), (8, 256), (256, 64))),
    ArbiterConfig(6, 3, 0, decay=False),
    ArbiterConfig(8, 3, 0, tie_break="index", decay=False, weight_bits=12),
)


@pytest.mark.cocotb
@pytest.mark.parametrize("config", ARBITER_REGRESSION,
                         ids=[config.name for config in ARBITER_REGRESSION])
def test_arbiter_matches_model(config, simulator):
    run_bench(config, simulator, test_module="tb.test_arbiter")


# -- the bench bites: arbiters that differ from their configuration must fail it ------------------

MUTANTS = {
    # A delay factor of 8 instead of 16 for the large weights.
    "table": lambda: DelayFactorArbiter(
        table=((1, 256), (2, 128), (4, 64), (8, 32), (256, 8))),
    # Ties of T and W broken by slot instead of by the smaller H.
    "tie_break": lambda: DelayFactorArbiter(tie_break="index"),
    # Four fraction bits instead of eight.
    "frac_bits": lambda: DelayFactorArbiter(frac_bits=4),
    # The old contract: the slot whose grant is taken is never left out of the decision, so
    # a requester with one job gets two grants (the protocol checker and the reactive
    # requesters catch it, as does the model).
    "double_grant": lambda: LevelRequestArbiter(ArbiterConfig()),
}


@pytest.mark.cocotb
@pytest.mark.parametrize("mutant", MUTANTS)
def test_bench_rejects_wrong_arbiter(mutant, any_simulator):
    with pytest.raises(SystemExit):
        run_bench(ArbiterConfig(), any_simulator, component=MUTANTS[mutant](),
                  tag=f"_mutant_{mutant}", test_module="tb.test_arbiter",
                  extra_env={"TB_RANDOM_VECTORS": "300"})
