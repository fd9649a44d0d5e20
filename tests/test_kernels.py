"""Kernel traces from real profilers, GPU presets and occupancy (issue 15, sections 1-2).

The readers are checked field by field on a real rocprof v1 trace and on hand-written files in
the other four formats (every expected value worked out from the file by hand); malformed rows
must be reported one per line with file, row and column. Occupancy is the model's own
allocator, held against an independent implementation of each vendor's published rules
(written here from the documents, not from ``model.dispatch.gpus``) on every kernel shape of
the real trace and on seeded random shapes; where they differ, the difference is documented
below and checked to be exactly that.
"""

import random
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest

from model.cli import main as gpusched
from model.config import ConfigError
from model.dispatch import kernels as kernels_module
from model.dispatch.config import PRESETS, load_scenario, with_policy
from model.dispatch.engine import DispatchSimulator
from model.dispatch.gpus import GPU_PRESETS, LaunchError, WorkgroupShape, gpu_preset
from model.dispatch.kernels import (
    MAX_WORKGROUPS,
    adapt,
    ns_to_cycles,
    occupancy,
    prepare,
    preset_gpu,
    trace_workload,
    workgroup_duration,
)
from model.dispatch.profilers import Kernel, detect_format, read_kernel_trace

DATA = Path(__file__).resolve().parent / "data"
REAL = DATA / "rocprof-llamacpp" / "results.csv"
SYNTHETIC = DATA / "kernel-traces"
CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "dispatch"


# -- readers --------------------------------------------------------------------------------

def test_the_real_rocprof_trace_is_read_whole():
    trace = read_kernel_trace(REAL)
    assert trace.format == "rocprof" and trace.skipped == {}
    assert len(trace.kernels) == 1963
    assert sum(k.workgroups for k in trace.kernels) == 14_610_308
    assert len({k.name for k in trace.kernels}) == 20
    assert {k.stream for k in trace.kernels} == {("2", "0"), ("2", "1"), ("2", "2")}
    first = trace.kernels[0]
    # Row 2: grd 256, wgr 256, lds 0, arch_vgpr 16, sgpr 128, BeginNs ..099688, EndNs ..107288
    assert first == Kernel(row=2, name="__amd_rocclr_fillBufferAligned.kd", stream=("2", "0"),
                           start_ns=769537350099688, duration_ns=7600, workgroups=1,
                           threads=256, registers=16, sgprs=128, lds_bytes=0, wave_size=32)
    mmq = next(k for k in trace.kernels if k.name.startswith("void mul_mat_q"))
    assert (mmq.workgroups, mmq.threads, mmq.lds_bytes, mmq.registers) == (128, 256, 57856, 256)


def test_rocprofv3_kernel_trace():
    trace = read_kernel_trace(SYNTHETIC / "mi300x_kernel_trace.csv")
    assert trace.format == "rocprofv3"
    gemm, add, stencil, reduce_, conv = trace.kernels
    # 8192 x 4 work-items in WGs of 256 x 1: 32 x 4 WGs.
    assert (gemm.workgroups, gemm.threads, gemm.registers, gemm.accum_registers, gemm.sgprs,
            gemm.lds_bytes, gemm.duration_ns) == (128, 256, 128, 64, 96, 32768, 50000)
    assert add.workgroups == 4096
    # 100 x 100 work-items in 16 x 16 WGs: a partial WG in each dimension, 7 x 7.
    assert (stencil.workgroups, stencil.threads) == (49, 256)
    assert (reduce_.workgroups, reduce_.threads) == (64, 1024)
    assert (conv.workgroups, conv.threads) == (8 * 8 * 4, 256)
    # Stream_Id names the stream (with the agent); no wave size in this format.
    assert [k.stream for k in trace.kernels] == [("Agent 2", "1"), ("Agent 2", "1"),
                                                 ("Agent 2", "2"), ("Agent 2", "2"),
                                                 ("Agent 2", "1")]
    assert {k.wave_size for k in trace.kernels} == {None}


def test_rocprof_compute_pmc_perf_ignores_the_counter_columns():
    trace = read_kernel_trace(SYNTHETIC / "mi300x_pmc_perf.csv")
    assert trace.format == "rocprof-compute"
    copy, gemm, softmax, transpose = trace.kernels
    assert (copy.workgroups, copy.threads, copy.duration_ns, copy.wave_size) == (4096, 256,
                                                                                 3325, 64)
    assert (gemm.workgroups, gemm.accum_registers, gemm.lds_bytes) == (2048, 64, 32768)
    assert (softmax.stream, transpose.stream) == (("2", "2"), ("2", "2"))
    assert (transpose.workgroups, transpose.lds_bytes, transpose.sgprs) == (1024, 8448, 20)


NVIDIA_KERNELS = [  # name prefix, start ns, duration ns, WGs, threads, registers, stream
    ("saxpy", 2_000_128, 12_352, 4096, 256, 8, "7"),
    ("void sgemm_tile", 2_015_000, 96_480, 256, 256, 72, "7"),
    ("reduce", 2_020_000, 5_120, 120, 512, 32, "13"),
    ("histogram", 2_030_500, 40_064, 28, 1024, 40, "13"),
]


@pytest.mark.parametrize("name", ["gtx1080ti_nvprof_ms.csv", "gtx1080ti_nvprof_s.csv"])
def test_nvprof_units_differ_from_file_to_file(name):
    trace = read_kernel_trace(SYNTHETIC / name)
    assert trace.format == "nvprof"
    assert trace.skipped == {"memory copies and sets": 4}
    got = [(k.name.split("(")[0], k.start_ns, k.duration_ns, k.workgroups, k.threads,
            k.registers, k.stream[-1]) for k in trace.kernels]
    assert [g[1:] for g in got] == [e[1:] for e in NVIDIA_KERNELS]
    assert all(g[0].startswith(e[0]) for g, e in zip(got, NVIDIA_KERNELS, strict=True))
    # Static 8 KB (1024-byte KB) or 8192 B; dynamic 2048 B or 2 KB; static 1 KB or 1024 B.
    assert [k.lds_bytes for k in trace.kernels] == [0, 8192, 2048, 1024]
    assert {k.row for k in trace.kernels} == {9, 10, 11, 12}


def test_nsys_cuda_gpu_trace_after_its_notices():
    trace = read_kernel_trace(SYNTHETIC / "gtx1080ti_nsys_gputrace.csv")
    assert trace.format == "nsys"
    assert trace.skipped == {"memory copies and sets": 4}
    assert [(k.start_ns, k.duration_ns, k.workgroups, k.threads, k.registers, k.stream[-1])
            for k in trace.kernels] == [e[1:] for e in NVIDIA_KERNELS]
    # nsys prints shared memory in decimal MB with three decimals: 0.008 MB is 8000 bytes.
    assert [k.lds_bytes for k in trace.kernels] == [0, 8000, 2000, 1000]


def test_format_is_detected_from_the_header_or_named():
    expected = {"mi300x_kernel_trace.csv": "rocprofv3", "mi300x_pmc_perf.csv":
                "rocprof-compute", "gtx1080ti_nvprof_ms.csv": "nvprof",
                "gtx1080ti_nsys_gputrace.csv": "nsys"}
    for name, format_ in expected.items():
        assert detect_format(SYNTHETIC / name) == format_
        assert read_kernel_trace(SYNTHETIC / name, format_).format == format_
    assert detect_format(REAL) == "rocprof"
    with pytest.raises(ConfigError, match=r"no nvprof --print-gpu-trace --csv header in the "
                                          r"first 50 lines \(is the format 'nvprof' right\?\)"):
        read_kernel_trace(REAL, "nvprof")
    with pytest.raises(ConfigError, match="unknown kernel-trace format 'ncu'; known: rocprof"):
        read_kernel_trace(REAL, "ncu")


def test_an_unknown_file_says_what_it_found(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ConfigError) as error:
        read_kernel_trace(path)
    assert str(error.value).startswith(f"{path}: cannot tell which profiler wrote this file "
                                       f"from its header (first line 'a,b,c')")
    counters = tmp_path / "counter_collection.csv"
    counters.write_text("Correlation_Id,Dispatch_Id,Kernel_Name,Grid_Size,Workgroup_Size,"
                        "LDS_Block_Size,Counter_Name,Counter_Value,Start_Timestamp,"
                        "End_Timestamp\n")
    with pytest.raises(ConfigError, match="counter-collection file is not a kernel trace"):
        read_kernel_trace(counters)
    with pytest.raises(ConfigError, match="counter-collection file"):
        read_kernel_trace(counters, "rocprofv3")


def test_every_malformed_row_is_reported_with_file_row_and_column(tmp_path):
    lines = (SYNTHETIC / "gtx1080ti_nvprof_ms.csv").read_text().splitlines()
    lines[9] = lines[9].replace(",72,", ",seventy-two,")          # row 10: registers
    lines[11] = lines[11].replace("2.030500,", "-2.030500,")       # row 12: start
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as error:
        read_kernel_trace(path)
    assert str(error.value).splitlines() == [
        f"{path}: row 10, column 'Registers Per Thread': 'seventy-two' is not an integer",
        f"{path}: row 12, column 'Start': '-2.030500' is not a non-negative number",
    ]


def test_more_than_twenty_malformed_rows_are_counted(tmp_path):
    lines = REAL.read_text().splitlines()[:31]
    path = tmp_path / "results.csv"
    path.write_text("\n".join([lines[0]] + [line.replace(",256,256,", ",256,0,")
                                            for line in lines[1:]]) + "\n")
    with pytest.raises(ConfigError) as error:
        read_kernel_trace(path)
    reported = str(error.value).splitlines()
    assert reported[0] == f"{path}: row 2, column 'wgr': 0 is below 1"
    assert len(reported) == 21 and reported[-1] == f"{path}: ... and 10 more malformed rows"


def test_units_and_columns_are_checked(tmp_path):
    text = (SYNTHETIC / "gtx1080ti_nvprof_ms.csv").read_text()
    bad = tmp_path / "units.csv"
    bad.write_text(text.replace("ms,us,", "ms,fortnights,"))
    with pytest.raises(ConfigError, match=r"row 5, column 'Duration': unit 'fortnights' is not "
                                          r"one of s, sec, ms"):
        read_kernel_trace(bad)
    missing = tmp_path / "missing.csv"
    missing.write_text(REAL.read_text().split("\n", 1)[0].replace('"arch_vgpr",', "") + "\n")
    with pytest.raises(ConfigError, match="a rocprof v1 results.csv file needs a column "
                                          "'arch_vgpr' or 'vgpr'"):
        read_kernel_trace(missing)
    backwards = tmp_path / "backwards.csv"
    backwards.write_text((SYNTHETIC / "mi300x_kernel_trace.csv").read_text().replace(
        "1700000000100000,1700000000150000", "1700000000100000,1700000000050000"))
    with pytest.raises(ConfigError, match="row 2, column 'End_Timestamp': 1700000000050000 is "
                                          "before Start_Timestamp"):
        read_kernel_trace(backwards)


def test_rows_that_are_not_dispatches_are_skipped_and_counted(tmp_path):
    text = (SYNTHETIC / "mi300x_kernel_trace.csv").read_text().splitlines()
    text.insert(2, text[2].replace('"KERNEL_DISPATCH"', '"MEMORY_COPY"'))
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(text) + "\n")
    trace = read_kernel_trace(path)
    assert len(trace.kernels) == 5
    assert trace.skipped == {"MEMORY_COPY rows (not kernel dispatches)": 1}


# -- presets --------------------------------------------------------------------------------

def test_presets_map_shapes_with_the_vendor_granules():
    cdna3, rdna4, pascal = (GPU_PRESETS[n] for n in ("cdna3-cu", "rdna4-wgp", "pascal-sm"))
    # CDNA3: 300 threads -> 5 waves; align(130, 4) + 64 = 196 registers -> 25 blocks of 8;
    # 100 SGPRs -> 7 blocks of 16; 5000 bytes -> 10 blocks of 512.
    assert cdna3.shape(300, 130, 5000, sgprs=100, accum_registers=64) == WorkgroupShape(
        waves=5, vgpr=25, sgpr=7, lds=10)
    # RDNA4 wave32: 49 registers -> 3 blocks of 24; wave64: 49 -> 5 blocks of 12.
    assert rdna4.shape(96, 49, 513) == WorkgroupShape(waves=3, vgpr=3, sgpr=0, lds=2)
    assert rdna4.shape(96, 49, 0, wave_size=64) == WorkgroupShape(waves=2, vgpr=5, sgpr=0,
                                                                  lds=0)
    # Pascal: 33 registers x 32 threads = 1056 -> 5 units of 256 per warp; 257 B -> 2 x 256.
    assert pascal.shape(33, 33, 257) == WorkgroupShape(waves=2, vgpr=5, sgpr=0, lds=2)
    for preset in (cdna3, rdna4, pascal):
        assert preset_gpu(preset).vgpr == 64
    assert (preset_gpu(cdna3).sgpr, preset_gpu(cdna3).lds, preset_gpu(cdna3).aps) == (50, 128,
                                                                                      304)
    assert (preset_gpu(rdna4).lds, preset_gpu(rdna4).wave_slots) == (256, 16)
    assert (preset_gpu(pascal).lds, preset_gpu(pascal).aps) == (384, 28)


@pytest.mark.parametrize("preset, args, kwargs, message", [
    ("cdna3-cu", (128, 16, 0), {"wave_size": 32}, "cdna3-cu runs waves of 64 threads, not 32"),
    ("rdna4-wgp", (2048, 16, 0), {}, "2048 threads per workgroup, but rdna4-wgp allows at "
                                     "most 1024"),
    ("pascal-sm", (256, 16, 49153), {}, "49153 LDS bytes per workgroup, but pascal-sm allows "
                                        "at most 49152"),
    ("pascal-sm", (256, 256, 0), {}, "256 registers per thread, but pascal-sm allows at most "
                                     "255"),
    ("rdna4-wgp", (256, 16, 0), {"accum_registers": 8}, "rdna4-wgp has no accumulation "
                                                        "registers"),
    ("cdna3-cu", (256, 16, 0), {"sgprs": 120}, "120 SGPRs per wave, but cdna3-cu allocates at "
                                               "most 112"),
    # 1024 threads x 72 registers: 2304 per warp x 32 warps > 64K.
    ("pascal-sm", (1024, 72, 0), {}, "2304 registers per warp x 32 warps exceeds pascal-sm's "
                                     "65536 registers per block"),
])
def test_shapes_a_gpu_cannot_launch_name_the_limit(preset, args, kwargs, message):
    with pytest.raises(LaunchError) as error:
        gpu_preset(preset).shape(*args, **kwargs)
    assert str(error.value).startswith(message)
    assert occupancy(preset, *args, **{("accum_vgprs" if k == "accum_registers" else k): v
                                       for k, v in kwargs.items()}) == 0


def test_bad_arguments_are_type_and_value_errors():
    with pytest.raises(TypeError, match="threads must be an integer, not 1.5"):
        GPU_PRESETS["rdna4-wgp"].shape(1.5, 16, 0)
    with pytest.raises(ValueError, match="threads must be at least 1, not 0"):
        GPU_PRESETS["rdna4-wgp"].shape(0, 16, 0)
    with pytest.raises(ValueError, match="unknown GPU preset 'h100-sm'"):
        occupancy("h100-sm", 256, 16, 0)


# -- occupancy: the model against the vendors' published rules ------------------------------

def _up(value, granule):
    return -(-value // granule) * granule


def vendor_occupancy(preset: str, threads: int, registers: int, lds: int, sgprs: int = 0,
                     accum: int = 0, wave: int | None = None) -> tuple[int, int]:
    """``(workgroups per AP, the same without the workgroup-count limit)`` by the vendors'
    rules, restated here from their documents:

    AMD (HIP runtime ``ihipOccupancyMaxActiveBlocksPerMultiprocessor``; LLVM AMDGPU):
    waves per SIMD = min(max waves, VGPRs per SIMD // align(VGPRs, granule), SGPRs per SIMD
    // align(SGPRs, 16)); workgroups = SIMDs x waves per SIMD // waves per workgroup, at most
    LDS per CU // align(LDS, 512) and the barrier limit (16 per CU, 32 per WGP; single-wave
    workgroups exempt). MI300X: 4 SIMDs, 8 waves, 512 VGPRs (granule 8, arch aligned to 4
    before the accumulation registers), 800 SGPRs, 64 KiB. RX 9070 XT in WGP mode: 4 SIMD32,
    16 waves, 1536 VGPRs (granule 24) in wave32, 768 (12) in wave64, 128 KiB.

    NVIDIA (``cuda_occupancy.h``, CUDA guide for compute capability 6.1): registers per warp
    = roundup(regs x 32, 256); warps per SM limited by registers = (65536 // 4 // that) x 4;
    blocks = min(32, 64 // warps, register-limited warps // warps, 98304 // roundup(smem,
    256)); 0 when the block breaks a per-block limit (1024 threads, 255 registers, 48 KB,
    64K registers with warps rounded up to 4).
    """
    if preset == "pascal-sm":
        warps = -(-threads // 32)
        per_warp = _up(registers * 32, 256)
        if threads > 1024 or registers > 255 or lds > 48 * 1024 \
                or per_warp * _up(warps, 4) > 65536:
            return 0, 0
        by_registers = (65536 // 4 // per_warp) * 4 // warps if per_warp else 10**9
        by_lds = 98304 // _up(lds, 256) if lds else 10**9
        unlimited = min(64 // warps, by_registers, by_lds)
        return min(32, unlimited), unlimited
    if preset == "cdna3-cu":
        simds, max_waves, wave, lds_total, barriers = 4, 8, 64, 64 * 1024, 16
        vgprs, granule = 512, 8
        used = _up(registers, 4) + accum if accum else registers
        by_sgprs = 800 // _up(sgprs, 16) if sgprs else 10**9
        if used > 512 or sgprs > 112:
            return 0, 0
    else:
        simds, max_waves, lds_total, barriers = 4, 16, 128 * 1024, 32
        wave = wave or 32
        vgprs, granule = (1536, 24) if wave == 32 else (768, 12)
        used, by_sgprs = registers, 10**9
        if used > 256 or accum:
            return 0, 0
    if threads > 1024 or lds > 64 * 1024:
        return 0, 0
    waves = -(-threads // wave)
    per_simd = min(max_waves, vgprs // _up(max(used, 1), granule), by_sgprs)
    unlimited = simds * per_simd // waves
    if lds:
        unlimited = min(unlimited, lds_total // _up(lds, 512))
    return (unlimited if waves == 1 else min(unlimited, barriers)), unlimited


def _trace_shapes():
    """The distinct launch shapes of the real trace, as each preset receives them (the
    adaptations the conversion makes: wave64 on CDNA3, SGPRs read as at most 112 there,
    registers at most 255 on Pascal)."""
    shapes = sorted({(k.threads, k.registers, k.accum_registers, k.sgprs, k.lds_bytes,
                      k.wave_size) for k in read_kernel_trace(REAL).kernels})
    cases = []
    for preset in GPU_PRESETS:
        for threads, registers, accum, sgprs, lds, wave in shapes:
            if preset == "cdna3-cu":
                sgprs, wave = min(sgprs, 112), None
            else:
                sgprs = 0
            if preset == "pascal-sm":
                registers = min(registers, 255)
            cases.append((preset, threads, registers, lds, sgprs, accum, wave))
    return cases


TRACE_CASES = _trace_shapes()

#: The model once differed from the vendor rule on one shape of the real trace: Pascal holds
#: at most 32 blocks per SM, and single-warp blocks that registers and warp slots would allow
#: 64 of were placed 64 times (the model has no workgroup-count limit). The preset now carries
#: the slot as an LDS reservation where it binds (``GpuPreset.shape``), and the model places
#: 32. No shape gets fewer WGs from contiguous allocation than the vendor rule: on an empty AP
#: first fit leaves no holes, and embodiment 8's rotating split spreads the waves as evenly as
#: the vendors' per-CU pooling assumes.
WORKGROUP_LIMIT_BINDS = {("pascal-sm", 32, 32, 0): (32, 64)}


@pytest.mark.parametrize("case", TRACE_CASES, ids=lambda c: "-".join(map(str, c[:4])))
def test_occupancy_matches_the_vendor_rule_on_every_shape_of_the_real_trace(case):
    preset, threads, registers, lds, sgprs, accum, wave = case
    model = occupancy(preset, threads, registers, lds, sgprs=sgprs, accum_vgprs=accum,
                      wave_size=wave)
    vendor, without_limit = vendor_occupancy(preset, threads, registers, lds, sgprs, accum,
                                             wave)
    assert model == vendor
    key = (preset, threads, registers, lds)
    if key in WORKGROUP_LIMIT_BINDS:
        assert (model, without_limit) == WORKGROUP_LIMIT_BINDS[key]
    else:
        assert model == without_limit


def test_the_workgroup_limit_binds_where_documented():
    assert set(WORKGROUP_LIMIT_BINDS) <= {c[:3] + (c[3],) for c in TRACE_CASES}


def test_occupancy_matches_the_per_resource_rule_on_random_shapes():
    seed = 1515
    rng = random.Random(seed)
    for _ in range(120):
        preset = rng.choice(list(GPU_PRESETS))
        threads = rng.choice([1, 32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768,
                              1024]) + rng.choice([0, 0, 0, -1, 5])
        threads = max(1, min(threads, 1024))
        registers = rng.randint(1, 255)
        lds = rng.choice([0, rng.randint(1, 48 * 1024), rng.randint(1, 8 * 1024)])
        sgprs = rng.randint(1, 112) if preset == "cdna3-cu" else 0
        accum = rng.choice([0, rng.randint(1, 256 - 4)]) if preset == "cdna3-cu" else 0
        wave = rng.choice([None, 64]) if preset == "rdna4-wgp" else None
        model = occupancy(preset, threads, registers, lds, sgprs=sgprs, accum_vgprs=accum,
                          wave_size=wave)
        vendor, _ = vendor_occupancy(preset, threads, registers, lds, sgprs, accum, wave)
        assert model == vendor, (f"seed {seed}: {preset} threads={threads} "
                                        f"registers={registers} lds={lds} sgprs={sgprs} "
                                        f"accum={accum} wave={wave}")


@pytest.mark.parametrize("preset", list(GPU_PRESETS))
def test_occupancy_sweeps_each_limit_alone(preset):
    # Wave slots, VGPRs, LDS (and SGPRs on CDNA3) each made the binding limit in turn.
    sgprs = 16 if preset == "cdna3-cu" else 0
    sweeps = [(threads, 8, 0, sgprs) for threads in range(1, 1025, 37)]
    sweeps += [(64, registers, 0, sgprs) for registers in range(1, 256, 9)]
    sweeps += [(32, 8, lds, sgprs) for lds in range(1, 48 * 1024, 1693)]
    if preset == "cdna3-cu":
        sweeps += [(64, 8, 0, s) for s in range(1, 113, 5)]
    for threads, registers, lds, s in sweeps:
        model = occupancy(preset, threads, registers, lds, sgprs=s)
        assert model == vendor_occupancy(preset, threads, registers, lds, s)[0], \
            (preset, threads, registers, lds, s)


def test_the_unrotated_split_piles_single_wave_workgroups_on_one_peu():
    # A finding, not a bug: the baselines (prior art, MIAOW-like, GPGPU-Sim-like, emb1) use
    # the split table unrotated, so every single-wave WG goes to PEU 0 of its AP: a quarter of
    # the occupancy the hardware (and embodiment 8) gives.
    unrotated = with_policy(PRESETS["seed"], rotate=False)
    assert occupancy("rdna4-wgp", 32, 32, 0) == 64
    assert occupancy("rdna4-wgp", 32, 32, 0, policy=unrotated) == 16
    assert occupancy("cdna3-cu", 64, 32, 0, sgprs=112) == 28
    assert occupancy("cdna3-cu", 64, 32, 0, sgprs=112, policy=unrotated) == 7
    # Waves that divide evenly over the PEUs lose nothing.
    assert occupancy("rdna4-wgp", 256, 16, 0, policy=unrotated) == 8


# -- conversion -----------------------------------------------------------------------------

def test_workgroup_duration_is_the_kernel_time_over_its_rounds():
    # 1000 WGs on 10 APs x 4 resident: 25 rounds of a 10,000-cycle kernel.
    assert workgroup_duration(10_000, 1000, 10, 4) == 400
    assert workgroup_duration(10_000, 41, 10, 4) == 5000         # 2 rounds
    assert workgroup_duration(10_000, 40, 10, 4) == 10_000       # 1 round
    assert workgroup_duration(7, 100, 1, 1) == 1                 # never below one cycle
    assert workgroup_duration(10, 4, 1, 1) == 3                  # 2.5 rounds up
    assert workgroup_duration(500, 9, 2, 0) == 500               # fits nowhere: one round
    with pytest.raises(ValueError, match="must be positive"):
        workgroup_duration(0, 1, 1, 1)
    assert ns_to_cycles(1_000_000, 1582) == 1_582_000 and ns_to_cycles(999, 1000) == 999


def test_a_trace_becomes_workgroups_per_stream_at_the_launch_times():
    trace = read_kernel_trace(SYNTHETIC / "gtx1080ti_nvprof_ms.csv")
    converted = trace_workload(trace, "pascal-sm", priorities=(2, 0))
    wgs = converted.workgroups
    assert len(wgs) == 4096 + 256 + 120 + 28
    assert converted.channels == {("GeForce GTX 1080 Ti (0)", "1", "7"): 0,
                                  ("GeForce GTX 1080 Ti (0)", "1", "13"): 1}
    assert [w.id for w in wgs] == list(range(len(wgs)))
    assert all(a.arrival <= b.arrival for a, b in zip(wgs, wgs[1:], strict=False))
    by_arrival = {}
    for w in wgs:
        by_arrival.setdefault((w.arrival, w.channel, w.priority), []).append(w)
    # Starts 2,000,128 / 2,015,000 / 2,020,000 / 2,030,500 ns at 1582 MHz, from the first.
    assert sorted((a, c, p, len(ws)) for (a, c, p), ws in by_arrival.items()) == [
        (0, 0, 2, 4096), (23_527, 0, 2, 256), (31_437, 1, 0, 120), (48_048, 1, 0, 28)]
    # saxpy: 8 registers, 256 threads: 8 warps, 1 unit each; 16 per AP ... 8 per AP by warps
    # (64 slots / 8); 4096 WGs over 28 x 8 = 18.3 -> 19 rounds of ceil(12,352 x 1.582) cycles.
    saxpy = by_arrival[(0, 0, 2)][0]
    assert (saxpy.waves, saxpy.vgpr, saxpy.lds) == (8, 1, 0)
    assert saxpy.duration == workgroup_duration(19_541, 4096, 28, 8) == 1028
    sgemm = by_arrival[(23_527, 0, 2)][0]
    assert (sgemm.waves, sgemm.vgpr, sgemm.lds) == (8, 9, 32)
    assert not any(w.independent for w in wgs)
    assert any("4 memory copies and sets skipped" in note for note in converted.notes)


def test_a_window_the_horizon_and_unlaunchable_kernels_are_counted():
    trace = read_kernel_trace(REAL)
    converted = trace_workload(trace, "pascal-sm", first=1031, last=1037, horizon=200_000)
    notes = "\n".join(converted.notes)
    # 1031-1033: copies (queue 1) at 0, 30.8 and 400.7 us; 1034 rms_norm at 442.7 us. At
    # 1582 MHz the horizon is 126.4 us: two copies (1 WG each) are made.
    assert len(converted.workgroups) == 2
    assert "4 launches (4,737 WGs) start at or after the cycle limit 200,000: not made" in notes
    everything = trace_workload(trace, "pascal-sm", first=1031, last=1037)
    notes = "\n".join(everything.notes)
    assert "1 launches cannot run on pascal-sm, skipped; first: row 1038 (mul_mat_q" \
           in notes
    assert len(everything.workgroups) == 3 + 512 + 4096
    cdna = "\n".join(trace_workload(trace, "cdna3-cu", first=1031, last=1037).notes)
    assert "6 launches adapted to cdna3-cu: wave32 ran as wave64" in cdna
    assert "6 launches adapted to cdna3-cu: SGPRs clamped to 112" in cdna
    with pytest.raises(ConfigError, match=r"no kernel launches in the window \[5000, end\)"):
        trace_workload(trace, "rdna4-wgp", first=5000)


def test_too_large_a_window_is_refused_with_how_to_narrow_it(monkeypatch):
    trace = read_kernel_trace(REAL)
    assert MAX_WORKGROUPS >= 14_610_308         # the real trace itself converts (below)
    monkeypatch.setattr(kernels_module, "MAX_WORKGROUPS", 2_000_000)
    with pytest.raises(ConfigError, match="at most 2,000,000\\); narrow it with "
                                          "kernels = \\[first, last\\]"):
        trace_workload(trace, "rdna4-wgp")


def test_the_whole_real_trace_converts_as_launches_not_workgroup_objects():
    """The 14.6 M-WG llama.cpp trace converts whole (it was refused over 2 M WGs): one
    template per launch, its WGs made when read, the last one as the file says."""
    trace = read_kernel_trace(REAL)
    tracemalloc.start()
    converted = trace_workload(trace, "rdna4-wgp")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20          # a WG object each would be about 2.8 GB
    workload = converted.workgroups
    assert len(workload) == 14_610_308 and len(converted.launches) == 1963
    big = max(converted.launches, key=lambda span: span.workgroups)
    first, last = workload[big.first_wg], workload[big.first_wg + big.workgroups - 1]
    assert (first.id, last.id) == (big.first_wg, big.first_wg + big.workgroups - 1)
    assert first.arrival == last.arrival == big.arrival and not last.barrier
    assert workload[-1].id == 14_610_307


def test_adapt_names_each_change():
    kernel = Kernel(row=7, name="k", stream=(), start_ns=0, duration_ns=1, workgroups=1,
                    threads=64, registers=300, accum_registers=16, sgprs=128, lds_bytes=0,
                    wave_size=32)
    assert adapt(kernel, GPU_PRESETS["pascal-sm"]).changes == (
        "accumulation registers counted as VGPRs", "registers clamped to 255")
    cdna = adapt(kernel, GPU_PRESETS["cdna3-cu"])
    assert cdna.changes == ("wave32 ran as wave64", "SGPRs clamped to 112")
    assert cdna.shape == WorkgroupShape(waves=1, vgpr=40, sgpr=7, lds=0)   # 300 + 16 -> 316


# -- scenario files and the command line ----------------------------------------------------

def test_the_shipped_real_trace_scenario_replays_the_measured_time():
    scenario, converted = prepare(load_scenario(CONFIGS / "llamacpp_rdna4.toml"))
    assert scenario.gpu == preset_gpu("rdna4-wgp")
    assert len(scenario.workgroups) == 4739
    assert len(converted.channels) == 2
    policy = replace(PRESETS["rr-first-fit"])
    result = DispatchSimulator(scenario.gpu, policy, scenario.workload(), cycles=scenario.cycles,
                               debug=True, strict=True).run()
    assert result["workgroups_completed"] == 4739 and result["invariant_violations"] == 0
    # The window spans 1,221.7 us = 3,628,523 cycles at 2970 MHz; the replay ends within 0.1 %.
    assert abs(result["cycles"] - 3_628_523) < 3_629


@pytest.mark.parametrize("text, message", [
    ('preset = "rdna4-wgp"\n[[channels]]\n', "preset needs kernel_trace"),
    ('kernel_trace = "missing.csv"\npreset = "rdna4-wgp"\n', "kernel_trace names"),
    ('kernel_trace = "t.csv"\npreset = "h100"\n', "preset must be a string (one of "
                                                  "'cdna3-cu', 'rdna4-wgp', 'pascal-sm'), not "
                                                  "'h100'"),
    ('kernel_trace = "t.csv"\n', "preset is required"),
    ('kernel_trace = "t.csv"\npreset = "pascal-sm"\nkernels = [5, 5]\n',
     "kernels must be [first, last] with first < last, not [5, 5]"),
    ('kernel_trace = "t.csv"\npreset = "pascal-sm"\nformat = "csv"\n',
     "format must be a string (one of 'rocprof', 'rocprofv3'"),
    ('kernel_trace = "t.csv"\npreset = "pascal-sm"\ntrace = "t.csv"\n',
     "kernel_trace and trace cannot both be given"),
])
def test_kernel_trace_fields_are_checked(tmp_path, text, message):
    (tmp_path / "t.csv").write_text("x\n")
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_scenario(path)
    assert str(error.value).startswith(f"{path}: {message}")


def test_a_scenario_overrides_the_preset_and_names_channel_priorities(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(f'kernel_trace = "{SYNTHETIC / "gtx1080ti_nsys_gputrace.csv"}"\n'
                    'preset = "pascal-sm"\nclock_mhz = 1000\ncycles = 100000\n'
                    '[gpu]\naps = 4\n[[channels]]\npriority = 1\n[[channels]]\npriority = 3\n')
    scenario, converted = prepare(load_scenario(path))
    assert scenario.gpu.aps == 4 and scenario.gpu.lds == 384
    assert {(w.channel, w.priority) for w in scenario.workgroups} == {(0, 1), (1, 3)}
    assert max(w.arrival for w in scenario.workgroups) == 30_372     # 30,372 ns at 1 GHz
    with pytest.raises(ConfigError, match="has not been converted yet"):
        load_scenario(path).workload()


def test_cli_runs_each_synthetic_format(tmp_path, capsys):
    for name, preset in (("mi300x_kernel_trace.csv", "cdna3-cu"),
                         ("mi300x_pmc_perf.csv", "cdna3-cu"),
                         ("gtx1080ti_nvprof_s.csv", "pascal-sm"),
                         ("gtx1080ti_nsys_gputrace.csv", "pascal-sm")):
        code = gpusched(["dispatch", "--kernel-trace", str(SYNTHETIC / name), "--preset", preset,
                         "--policy", "emb1", "--quick", "--quiet", "--plots", str(tmp_path)])
        assert code == 0
        out = capsys.readouterr().out
        assert f"{name} on {preset}: kernel shapes as the model's blocks" in out
    code = gpusched(["dispatch", "--kernel-trace", str(REAL), "--preset", "rdna4-wgp",
                     "--kernels", "1031:1034", "--cycles", "1300000", "--policy", "seed",
                     "--quiet", "--plots", str(tmp_path)])
    assert code == 0 and "3 launches -> 3 WGs on rdna4-wgp" in capsys.readouterr().out


def test_cli_errors_name_what_is_missing(tmp_path, capsys):
    assert gpusched(["dispatch", "--kernel-trace", str(REAL), "--quiet"]) == 2
    assert "--kernel-trace needs --preset" in capsys.readouterr().err
    assert gpusched(["dispatch", "--kernel-trace", str(tmp_path / "none.csv"), "--preset",
                     "pascal-sm", "--quiet"]) == 2
    assert "which is not a file" in capsys.readouterr().err
