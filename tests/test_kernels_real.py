"""Real kernels, as the hardware and the tools have them (issue 31, items 1 and 2).

Occupancy: the converter's occupancy (``adapt`` then ``resident_workgroups``, what
``trace_workload`` uses) is held against the vendors' own rules, ``cuda_occupancy`` (the CUDA
occupancy calculator) and ``amd_occupancy`` (AMD's compiler / runtime), on every kernel shape
of the real traces we ship: the 151 (kernel, threads, registers, shared memory) shapes of 37
CUDA applications profiled with nvprof on a GTX 1080 Ti (``tests/data/nvprof-magus``), and
the llama.cpp rocprof trace on the AMD presets.

Files as written: real nvprof output read whole; fractional rocprof-compute timestamps,
rocpd's column spelling, early rocprofv3 files without registers, UTF-16 and byte-order
marks accepted; a truncated or nameless row refused naming file, row and column; binary and
empty files refused in one line, through the command line too (exit 2, no traceback).
"""

import csv
from dataclasses import replace
from pathlib import Path

import pytest

from model.cli import main as gpusched
from model.config import ConfigError
from model.dispatch.gpus import (
    CUDA_CAPABILITIES,
    GPU_PRESETS,
    LaunchError,
    WorkgroupShape,
    amd_occupancy,
    cuda_occupancy,
)
from model.dispatch.kernels import adapt, resident_workgroups, trace_workload
from model.dispatch.profilers import Kernel, read_kernel_trace

DATA = Path(__file__).resolve().parent / "data"
MAGUS = DATA / "nvprof-magus"
SYNTHETIC = DATA / "kernel-traces"
LLAMA = DATA / "rocprof-llamacpp" / "results.csv"


def _shape_table():
    with (MAGUS / "shapes.csv").open(newline="") as file:
        return [(row["kernel"], int(row["threads"]), int(row["registers"]),
                 int(row["smem_bytes"]), int(row["launches"]), row["applications"])
                for row in csv.DictReader(file)]


SHAPES = _shape_table()


def converter_occupancy(preset, kernel: Kernel) -> int:
    """What the conversion uses for a launch's rounds: the model's occupancy of the shape
    the launch becomes on ``preset`` (0 when it cannot run there)."""
    try:
        shape = adapt(kernel, preset).shape
    except LaunchError:
        return 0
    return resident_workgroups(preset, shape)


# -- item 1: occupancy as the hardware decides it -------------------------------------------

def test_the_shape_table_holds_every_launch_of_the_37_applications():
    assert len(SHAPES) == 151
    assert len({app for *_, apps in SHAPES for app in apps.split(";")}) == 37
    assert sum(launches for *_, launches, _ in SHAPES) == 6565


def test_the_shape_table_agrees_with_the_shipped_files():
    # Every shipped trace's launches are in the table (the table was made by the same reader
    # from all 37 files; tests/data/nvprof-magus/README.md has the command).
    table = {(name, threads, regs, smem): (launches, apps.split(";"))
             for name, threads, regs, smem, launches, apps in SHAPES}
    for path in sorted(MAGUS.glob("traces_*.csv")):
        app = path.stem.removeprefix("traces_")
        counts = {}
        for k in read_kernel_trace(path).kernels:
            key = (k.name.rsplit(" [", 1)[0], k.threads, k.registers, k.lds_bytes)
            counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            launches, apps = table[key]
            assert app in apps
            if apps == [app]:
                assert launches == count, (path.name, key)


def test_occupancy_of_every_real_cuda_shape_is_the_occupancy_calculators(monkeypatch):
    pascal = GPU_PRESETS["pascal-sm"]
    # The same rule without the blocks-per-SM limit, to find where that limit binds.
    monkeypatch.setitem(CUDA_CAPABILITIES, "6.1 uncapped",
                        replace(CUDA_CAPABILITIES["6.1"], blocks_per_sm=1 << 30))
    binding = []
    for name, threads, regs, smem, _, apps in SHAPES:
        kernel = Kernel(row=0, name=name, stream=(), start_ns=0, duration_ns=1, workgroups=1,
                        threads=threads, registers=regs, lds_bytes=smem, wave_size=32)
        rule = cuda_occupancy("6.1", threads, regs, smem)
        assert converter_occupancy(pascal, kernel) == rule, (name, threads, regs, smem, apps)
        assert pascal.vendor_occupancy(threads, regs, smem) == rule
        if cuda_occupancy("6.1 uncapped", threads, regs, smem) > rule:
            binding.append((name, threads))
    # The 32-blocks-per-SM limit binds on 12 of the shapes (one-warp blocks of 1, 3, 7 and
    # 16 threads, registers and warp slots allowing 64): the model placed 64 before.
    assert len(binding) == 12
    assert {threads for _, threads in binding} == {1, 3, 7, 16}


def test_one_warp_blocks_hold_a_slot_of_the_sm_as_lds():
    pascal = GPU_PRESETS["pascal-sm"]
    # 384 blocks of 256 B per SM over 32 block slots: a one-warp block holds at least 12.
    assert pascal.slot_lds == 12
    assert pascal.shape(16, 12, 0) == WorkgroupShape(waves=1, vgpr=2, sgpr=0, lds=12,
                                                     reserved=12)
    assert pascal.shape(16, 32, 1024) == WorkgroupShape(waves=1, vgpr=4, sgpr=0, lds=12,
                                                        reserved=8)
    # Where the limit cannot bind (2 warps: 64 slots hold 32), nothing is reserved.
    assert pascal.shape(64, 8, 0).reserved == 0
    # Nor above 1/32 of the shared memory (4 KiB: 24 blocks by shared memory).
    assert pascal.shape(32, 8, 4096) == WorkgroupShape(waves=1, vgpr=1, sgpr=0, lds=16)
    assert converter_occupancy(pascal, Kernel(0, "k", (), 0, 1, 1, 32, 8, lds_bytes=4096)) \
        == cuda_occupancy("6.1", 32, 8, 4096) == 24


def test_the_conversion_names_the_reservation():
    trace = read_kernel_trace(MAGUS / "traces_rodinia_gaussian.csv")
    notes = "\n".join(trace_workload(trace, "pascal-sm").notes)
    assert "LDS raised to 12 blocks per WG, the share of one of the 32 resident-WG slots" \
        in notes


def test_occupancy_of_the_real_amd_trace_is_amds_rule():
    shapes = {(k.threads, k.registers, k.accum_registers, k.sgprs, k.lds_bytes, k.wave_size)
              for k in read_kernel_trace(LLAMA).kernels}
    for preset in (GPU_PRESETS["cdna3-cu"], GPU_PRESETS["rdna4-wgp"]):
        for threads, regs, accum, sgprs, lds, wave in sorted(shapes, key=str):
            kernel = Kernel(0, "k", (), 0, 1, 1, threads, regs, accum, sgprs, lds, wave)
            adapted = adapt(kernel, preset)
            # the rule on the kernel as the conversion compiled it for the preset
            wave_size = None if f"wave{wave} ran as" in " ".join(adapted.changes) else wave
            rule = preset.vendor_occupancy(
                threads, min(regs, preset.max_registers), lds,
                sgprs=min(sgprs, preset.max_sgprs) if preset.sgprs_per_peu else 0,
                accum_registers=accum, wave_size=wave_size)
            assert resident_workgroups(preset, adapted.shape) == rule, (preset.name, kernel)


@pytest.mark.parametrize("args, expected", [
    # (cc, threads, registers, shared bytes): worked out from cuda_occupancy.h
    (("6.1", 256, 32, 0), 8),        # warps: 64 // 8
    (("6.1", 1, 1, 0), 32),          # blocks per SM
    (("6.1", 128, 64, 0), 8),        # 2048 registers a warp: 8 warps per partition x 4 / 4
    (("6.1", 96, 40, 0), 16),        # 1280 a warp: 12 per partition x 4 = 48 warps / 3
    (("6.1", 256, 8, 49152), 2),     # 96 KiB // 48 KiB
    (("6.1", 256, 8, 12289), 7),     # 12,544 B allocated: 98,304 // 12,544
    (("6.1", 256, 8, 49153), 0),     # above 48 KiB per block
    (("6.1", 1024, 72, 0), 0),       # 2304 a warp x 32 warps > 64K registers per block
    (("6.1", 1025, 8, 0), 0),
    (("6.1", 32, 256, 0), 0),        # 255 registers per thread at most
    (("6.0", 32, 8, 0), 32),
    (("6.0", 256, 128, 0), 2),       # 4096 a warp; 2 partitions of 32K: 8 warps each
    (("6.1", 256, 128, 0), 2),       # 4 partitions of 16K: 4 warps each
    (("5.2", 32, 8, 0), 32),
    (("5.0", 256, 8, 32768), 2),     # 64 KiB per SM
    (("5.3", 1024, 64, 0), 0),       # 32K registers per block
])
def test_cuda_occupancy_by_hand(args, expected):
    assert cuda_occupancy(*args) == expected


@pytest.mark.parametrize("args, kwargs, expected", [
    (("gfx942", 64, 32, 0), {"sgprs": 112}, 28),       # 800 // 112 = 7 waves x 4 SIMDs
    (("gfx942", 256, 128, 0), {"accum_vgprs": 64}, 2),  # 192 of 512: 2 waves per SIMD
    (("gfx942", 128, 8, 0), {}, 16),                    # 32 waves / 2 = 16 = the barriers
    (("gfx942", 64, 8, 0), {}, 32),                     # single wave: no barrier
    (("gfx942", 256, 8, 65537), {}, 0),
    (("gfx1201", 64, 24, 0), {"wgp_mode": True}, 32),   # 64 waves / 2 = 32 barriers
    (("gfx1201", 32, 24, 0), {"wgp_mode": True}, 64),
    (("gfx1201", 128, 49, 0), {"wgp_mode": True, "wave_size": 64}, 24),  # 768 // 60 = 12
    (("gfx1201", 128, 49, 0), {"wgp_mode": True}, 16),   # wave32: 1536 // 72 = 21 > 16 waves
    (("gfx1201", 256, 16, 40000), {"wgp_mode": True}, 3),  # 128 KiB // 40,448 B
])
def test_amd_occupancy_by_hand(args, kwargs, expected):
    assert amd_occupancy(*args, **kwargs) == expected


def test_unknown_targets_are_refused():
    with pytest.raises(ValueError, match="no occupancy figures for compute capability '7.0'"):
        cuda_occupancy("7.0", 32, 8, 0)
    with pytest.raises(ValueError, match="no occupancy figures for AMD target 'gfx1201'"):
        amd_occupancy("gfx1201", 32, 8, 0)


# -- item 2: real files as written ----------------------------------------------------------

def _count_rows(path: Path) -> tuple[int, int]:
    """(kernel rows, rows without a grid) of an nvprof CSV, counted with the csv module."""
    with path.open(newline="") as file:
        rows = list(csv.reader(file))
    header = next(i for i, row in enumerate(rows) if row[:2] == ["Start", "Duration"])
    grid = rows[header].index("Grid X")
    data = [row for row in rows[header + 2:] if row]
    return sum(1 for r in data if r[grid]), sum(1 for r in data if not r[grid])


@pytest.mark.parametrize("path", sorted(MAGUS.glob("traces_*.csv")), ids=lambda p: p.stem)
def test_every_shipped_nvprof_file_reads_whole(path):
    trace = read_kernel_trace(path)
    kernels, others = _count_rows(path)
    assert trace.format == "nvprof"
    assert len(trace.kernels) == kernels and sum(trace.skipped.values()) == others
    assert all(k.name and k.workgroups >= 1 and k.threads >= 1 for k in trace.kernels)


def test_a_real_nvprof_file_field_by_field():
    fdtd = read_kernel_trace(MAGUS / "traces_cudasdk_FDTD3d.csv")
    first = fdtd.kernels[0]
    # Row 9: 13.947699 s, 2.417178 ms, grid 12 x 24, block 32 x 16, 40 registers, 3.75 KB.
    assert first == Kernel(row=9, name="FiniteDifferencesKernel(float*, float const *, int, "
                                       "int, int) [1172]",
                           stream=("GeForce GTX 1080 Ti (0)", "1", "7"),
                           start_ns=13_947_699_000, duration_ns=2_417_178, workgroups=288,
                           threads=512, registers=40, lds_bytes=3840, wave_size=32)
    lud = read_kernel_trace(MAGUS / "traces_rodinia_lud.csv")
    assert len({k.stream for k in lud.kernels}) == 2


def _rewrite(tmp_path, source: Path, name: str, edit) -> Path:
    lines = source.read_text().splitlines()
    edit(lines)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rocprof_compute_fractional_timestamps_and_pandas_integers(tmp_path):
    def edit(lines):
        lines[1] = lines[1].replace("2525223085264657,2525223085267982",
                                    "41551790928449.54,41551790931775.1")
        lines[2] = lines[2].replace(",524288,256,32768,", ",524288.0,256.0,32768.0,")
    path = _rewrite(tmp_path, SYNTHETIC / "mi300x_pmc_perf.csv", "pmc_perf.csv", edit)
    copy, gemm, *_ = read_kernel_trace(path).kernels
    # 41551790928449.54 -> ...450 ns; 41551790931775.1 -> ...775 ns.
    assert (copy.start_ns, copy.duration_ns) == (41551790928450, 3325)
    assert (gemm.workgroups, gemm.threads, gemm.lds_bytes) == (2048, 256, 32768)
    bad = _rewrite(tmp_path, path, "bad.csv",
                   lambda lines: lines.__setitem__(2, lines[2].replace("256.0,", "256.5,")))
    with pytest.raises(ConfigError, match=r"row 3, column 'Workgroup_Size': '256.5' is not an "
                                          r"integer"):
        read_kernel_trace(bad)


def test_a_truncated_nvprof_row_is_refused_not_a_launch(tmp_path):
    source = MAGUS / "traces_cudasdk_FDTD3d.csv"
    path = _rewrite(tmp_path, source, "cut.csv",
                    lambda lines: lines.__setitem__(10, lines[10].split(',"GeForce')[0]))
    with pytest.raises(ConfigError) as error:
        read_kernel_trace(path)
    assert str(error.value) == (f"{path}: row 11, column 'Device': missing: the row has 13 of "
                                f"the header's 17 columns (truncated?)")
    nameless = _rewrite(tmp_path, source, "nameless.csv",
                        lambda lines: lines.__setitem__(9, lines[9].split(',"Finite')[0] + ","))
    with pytest.raises(ConfigError, match=r"row 10, column 'Name': empty kernel name"):
        read_kernel_trace(nameless)
    longer = _rewrite(tmp_path, source, "longer.csv",
                      lambda lines: lines.__setitem__(9, lines[9] + ',"extra"'))
    with pytest.raises(ConfigError, match=r"row 10: 18 cells, but the header has 17 columns"):
        read_kernel_trace(longer)


def test_nvprof_messages_and_other_activities_are_skipped_and_counted(tmp_path):
    def edit(lines):
        lines.insert(8, lines[7].replace("[CUDA memcpy HtoD]", "[Unified Memory Memcpy HtoD]"))
        lines.append("==21406== Warning: 1 records have invalid timestamps due to insufficient "
                     "device buffer space.")
    path = _rewrite(tmp_path, MAGUS / "traces_cudasdk_FDTD3d.csv", "fdtd.csv", edit)
    trace = read_kernel_trace(path)
    assert len(trace.kernels) == 5
    assert trace.skipped == {"memory copies and sets": 4, "other GPU activities (no grid)": 1,
                             "nvprof messages (==PID== lines)": 1}


def test_encodings_and_byte_order_marks(tmp_path):
    source = MAGUS / "traces_rodinia_gaussian.csv"
    expected = read_kernel_trace(source).kernels
    for encoding in ("utf-16", "utf-16-le", "utf-8-sig"):
        path = tmp_path / f"{encoding}.csv"
        path.write_bytes(source.read_text().encode(encoding))
        assert read_kernel_trace(path).kernels == expected, encoding
    # A BOM before a header on the first line (rocprofv3) is not part of the column name.
    v3 = tmp_path / "bom_kernel_trace.csv"
    v3.write_bytes((SYNTHETIC / "mi300x_kernel_trace.csv").read_text().encode("utf-8-sig"))
    assert len(read_kernel_trace(v3).kernels) == 5
    # Bytes that are not UTF-8 in a kernel name are kept as replacement characters.
    latin = tmp_path / "latin1.csv"
    latin.write_bytes(source.read_bytes().replace(b"Fan1(", b"F\xe4n1("))
    assert any("F\ufffdn1(" in k.name for k in read_kernel_trace(latin).kernels)


def test_rocpd_spelling_and_early_rocprofv3_files(tmp_path):
    rocpd = tmp_path / "out_kernel_trace.csv"
    rocpd.write_text(
        '"Guid","Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id",'
        '"Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","Lds_Block_Size",'
        '"Scratch_Size","Vgpr_Count","Accum_Vgpr_Count","Sgpr_Count","Workgroup_Size_X",'
        '"Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"\n'
        '"0000-1","KERNEL_DISPATCH","Agent 4",1,0,714789,1,3,"norm_l23",1,1678314002982197,'
        '1678314003082277,8456,0,16,0,32,256,1,1,233472,1,1\n')
    (kernel,) = read_kernel_trace(rocpd).kernels
    assert (kernel.registers, kernel.sgprs, kernel.lds_bytes, kernel.workgroups,
            kernel.duration_ns) == (16, 32, 8456, 912, 100080)
    early = tmp_path / "1_kernel_trace.csv"
    early.write_text(
        '"Kind","Agent_Id","Queue_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
        '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size",'
        '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y",'
        '"Grid_Size_Z"\n'
        '"KERNEL_DISPATCH",1,139690710949888,15,"matrixTranspose(float*, float*, int)",0,'
        '671599758568,671599825328,0,0,4,4,1,1024,1024,1\n')
    trace = read_kernel_trace(early)
    assert (trace.kernels[0].workgroups, trace.kernels[0].threads,
            trace.kernels[0].registers) == (256 * 256, 16, 0)
    assert trace.notes == ("no register column (VGPR_Count or Arch_VGPR_Count): registers "
                           "read as 0, so occupancy is decided by waves and LDS only",)


def test_rocprof_without_timestamps_says_how_to_get_them(tmp_path):
    path = tmp_path / "results.csv"
    header = LLAMA.read_text().split("\n", 1)[0]
    path.write_text(header.replace('"BeginNs",', "").replace('"EndNs",', "") + "\n")
    with pytest.raises(ConfigError, match=r"needs a column 'BeginNs' \(rocprof writes "
                                          r"timestamps with --timestamp on\)"):
        read_kernel_trace(path)


BAD_FILES = {
    "empty.csv": (b"", "the file is empty"),
    "blank.csv": (b"\n\n  \n", "the file is empty"),
    "binary.csv": (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8,
                   "a binary file (NUL bytes in its first"),
    "huge.csv": (b"a,b\n" + b"x" * 200_000 + b",1\n", "row 2: not CSV (field larger"),
    "utf16_other.csv": ("a,b,c\n1,2,3\n".encode("utf-16"),
                        "cannot tell which profiler wrote this file"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_files_give_one_line_and_exit_2(tmp_path, capsys, name):
    content, message = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as error:
        read_kernel_trace(path)
    assert str(error.value).startswith(f"{path}: {message}")
    assert "\n" not in str(error.value)
    code = gpusched(["dispatch", "--kernel-trace", str(path), "--preset", "pascal-sm",
                     "--quiet", "--plots", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


def test_rocprofv2_and_long_form_pmc_perf(tmp_path):
    # rocprofv2's file plugin (version 2) writes rocprof-compute's columns and a Counters one.
    v2 = tmp_path / "results_v2.csv"
    v2.write_text("Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,"
                  "LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,"
                  "Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID,Counters\n"
                  "1,2,1,77,77,65536,256,1024,0,16,0,24,64,\"k(int*)\",1000,4000,9,\n")
    (kernel,) = read_kernel_trace(v2).kernels
    assert (kernel.workgroups, kernel.lds_bytes, kernel.duration_ns) == (256, 1024, 3000)
    # rocprof-compute on rocprofiler-sdk: one row per dispatch and counter.
    long_form = tmp_path / "pmc_perf.csv"
    long_form.write_text(
        "GPU_ID,Dispatch_ID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,"
        "Arch_VGPR,Accum_VGPR,SGPR,Kernel_Name,Start_Timestamp,End_Timestamp,Kernel_ID,"
        "Counter_Name,Counter_Value\n"
        "0,0,256,64,0,0,8,0,16,kernel_a,10,20,0,SQ_WAVES,4\n"
        "0,0,256,64,0,0,8,0,16,kernel_a,10,20,0,SQ_BUSY_CYCLES,100\n"
        "0,1,512,64,0,0,8,0,16,kernel_a,30.5,42.25,0,SQ_WAVES,8\n")
    trace = read_kernel_trace(long_form)
    assert trace.format == "rocprof-compute"
    assert [(k.workgroups, k.start_ns, k.duration_ns) for k in trace.kernels] == [
        (4, 10, 10), (8, 31, 11)]
    assert trace.skipped == {"further counter rows of a dispatch (long-form pmc_perf)": 1}


def test_nsys_context_and_stream_spelled_out(tmp_path):
    # Older Nsight Systems reports name the columns Context and Stream (not Ctx / Strm) and
    # write units without a space; two streams must stay two channels.
    path = tmp_path / "gputrace.csv"
    path.write_text("Start(ns),Duration(ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,"
                    "StcSMem(B),DymSMem(B),Bytes(B),Device,Context,Stream,Name\n"
                    "100,50,1,4,1,1,128,1,1,32,1024,0,,GPU 0,1,7,k1\n"
                    "120,50,2,4,1,1,128,1,1,32,1024,0,,GPU 0,1,9,k2\n")
    trace = read_kernel_trace(path)
    assert trace.format == "nsys"
    assert [(k.stream, k.lds_bytes, k.start_ns) for k in trace.kernels] == [
        (("GPU 0", "1", "7"), 1024, 100), (("GPU 0", "1", "9"), 1024, 120)]
