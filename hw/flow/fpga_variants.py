"""The designs of ``make fpga-report``: which circuits, at which sizes, and their Verilog.

The catalogue of :mod:`hw.flow.fpga_report`: the free-block variants (:data:`VARIANT_LABELS`,
from :mod:`hw.maxblock`: seed 002's embodiments 4-6 and the exact allocator, each at the
latency of :func:`variant_latency`) at :data:`SIZES` blocks, and the delay-factor arbiter of
seed 001 (:data:`ARBITERS`, :mod:`hw.arbiter`) with the targets :data:`ARBITER_TARGETS`. Each
design is built inside :class:`hw.flow.fpga_wrapper.RegisterWrapper` and written as Verilog
without source locations (:func:`generate_verilog`, :func:`generate_arbiter_verilog`), so the
text, and the cache key made from it (:func:`hw.flow.fpga_flow.cache_key`), changes only when
the circuit does. :func:`accuracy_columns` gives the approximate variants' accuracy from
:mod:`model.maxblock_report`, the models' side of the same table.
"""

import hw.maxblock
from hw.flow.fpga_wrapper import RegisterWrapper
from model.arbiter import ArbiterParams
from model.maxblock import default_samples

__all__ = ["ACCURACY_OCCUPANCY", "ACCURACY_REQUEST", "ARBITERS", "ARBITER_TARGETS", "SIZES",
           "VARIANT_LABELS", "accuracy_columns", "available_variants", "build_dut",
           "design_label", "generate_arbiter_verilog", "generate_verilog", "variant_latency"]

#: Block counts of the report.
SIZES = (32, 64, 128, 256)


#: Names of the variants in the table, in table order.
VARIANT_LABELS = {
    "full": "full",
    "grouped": "grouped /4",
    "sampled": "sampled default",
    "exact": "exact",
    "exact_pipelined": "exact pipelined",
}

#: The arbiter's rows: key -> (label, parameters). Their variant in the results is
#: ``arbiter_<key>`` and their ``n`` the slot count.
ARBITERS = {
    "seed": ("seed's settings", ArbiterParams()),
    "proposed": ("no decay, 12-bit W", ArbiterParams(8, 3, 0, tie_break="index", decay=False,
                                                     weight_bits=12)),
}

#: What issue 14 asks of the seed's arbiter at 8 slots and 3 classes: iCE40 LUT4s at most,
#: ECP5 fmax at least (MHz).
ARBITER_TARGETS = {"ice40_luts": 1800, "ecp5_mhz": 60.0}

#: Occupancy and request of the accuracy columns.
ACCURACY_OCCUPANCY = 0.5
ACCURACY_REQUEST = 4


# -- the variants ---------------------------------------------------------------------------------

def available_variants() -> tuple[str, ...]:
    """The keys of :data:`VARIANT_LABELS`."""
    return tuple(VARIANT_LABELS)


def design_label(variant: str) -> str:
    """The name of a variant, or of an arbiter row (``arbiter_<key>``), in the tables."""
    if variant.startswith("arbiter_"):
        label, params = ARBITERS[variant.removeprefix("arbiter_")]
        return f"arbiter {params.tasks}x{params.classes}, {label}"
    return VARIANT_LABELS[variant]


def variant_latency(variant: str, n: int) -> int:
    """The latency each variant is measured at: 1, or the deepest pipeline of the exact one.

    With latency 1 the wrapper's input register and the circuit's output register enclose the
    whole circuit, so fmax is the speed of the circuit in one clock. The arbiter's grant is
    registered: latency 1 too (its history loop is one clock by construction).
    """
    if variant != "exact_pipelined":
        return 1
    return hw.maxblock.ExactMaxFreeBlock.max_latency(n)


def build_dut(variant: str, n: int):
    """A new component for ``variant`` (a key of :data:`VARIANT_LABELS`) with ``n`` blocks.

    The grouped variant has ``n // 4`` groups (groups of 4 blocks), the sampled one the
    samples of :func:`model.maxblock.default_samples`.
    """
    latency = variant_latency(variant, n)
    if variant == "full":
        return hw.maxblock.MaxFreeBlock(n, latency=latency)
    if variant == "grouped":
        return hw.maxblock.GroupedMaxFreeBlock(n, n // 4, latency=latency)
    if variant == "sampled":
        return hw.maxblock.SampledMaxFreeBlock(n, default_samples(n), latency=latency)
    if variant in ("exact", "exact_pipelined"):
        return hw.maxblock.ExactMaxFreeBlock(n, latency=latency)
    raise ValueError(f"Variant must be one of {', '.join(available_variants())}, "
                     f"not {variant!r}")


def generate_arbiter_verilog(key: str) -> str:
    """Verilog of the arbiter row ``key`` (of :data:`ARBITERS`) in the register wrapper,
    module ``top``, without source locations."""
    from amaranth.back import verilog

    from hw.arbiter import DelayFactorArbiter
    _, params = ARBITERS[key]
    return verilog.convert(RegisterWrapper(DelayFactorArbiter.from_params(params)), name="top",
                           emit_src=False)


def generate_verilog(variant: str, n: int) -> str:
    """Verilog of ``variant`` with ``n`` blocks inside the register wrapper, module ``top``.

    Written without source locations, so that the text (and the cache key made from it)
    changes only when the circuit does.
    """
    from amaranth.back import verilog
    return verilog.convert(RegisterWrapper(build_dut(variant, n)), name="top", emit_src=False)


# -- accuracy -------------------------------------------------------------------------------------

def accuracy_columns(n: int) -> dict[str, tuple[float, float | None]]:
    """Per variant key: the mean under-estimate at 50 % occupancy and ``P(needless refusal)``.

    The refusal is of a request of :data:`ACCURACY_REQUEST` blocks, at the same occupancy;
    both come from :func:`model.maxblock_report.accuracy_table` and
    :func:`~model.maxblock_report.refusal_table` with their default words, seed and
    occupancies, so that for ``n = 128`` they are the numbers of ``make sim``. The exact
    variants (full and exact) are 0 by construction.
    """
    from model.maxblock_report import accuracy_table, refusal_table
    names = {"grouped": "grouped, 4-block groups",
             "sampled": f"sampled, {len(default_samples(n))} lengths (default)"}
    accuracy = accuracy_table(n=n)[ACCURACY_OCCUPANCY]["variants"]
    refusal = refusal_table(n=n, requests=(ACCURACY_REQUEST,))[ACCURACY_OCCUPANCY]["refusal"]
    columns = {key: (0.0, 0.0) for key in ("full", "exact", "exact_pipelined")}
    for key, name in names.items():
        columns[key] = (accuracy[name]["mean_under"], refusal[name][0])
    return columns
