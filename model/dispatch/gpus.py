"""GPUs that exist, as the dispatcher model's blocks, wave slots and PEUs.

A :class:`GpuPreset` holds a real GPU's published per-compute-unit figures and maps a kernel's
launch shape (threads per workgroup, registers per thread, LDS bytes, SGPRs, wave size) onto
the model's resources with the vendor's allocation granularities:

=============  =======================  ==========================  =========================
model          ``cdna3-cu``             ``rdna4-wgp``               ``pascal-sm``
=============  =======================  ==========================  =========================
AP             MI300X compute unit      RX 9070 XT workgroup        GTX 1080 Ti SM
               (304)                    processor, WGP mode (32)    (28)
PEU            SIMD (4 per CU)          SIMD32 (4 per WGP)          SM sub-partition (4)
VGPR block     8 registers per lane     24 (wave32) / 12 (wave64)   256 registers of a warp
               (unified arch + acc)     registers per lane          (8 per thread)
VGPR blocks    64 (512 per lane)        64 (1536 / 768 per lane)    64 (16384 per partition)
SGPR block     16 SGPRs, 50 per SIMD    none (not pooled on gfx10+) none
LDS block      512 B, 128 per CU        512 B, 256 per WGP          256 B, 384 per SM
LDS per WG     at most 64 KiB           at most 64 KiB              at most 48 KiB
wave slots     8 per SIMD               16 per SIMD                 16 warps per partition
wave size      64                       32 (or 64)                  32
=============  =======================  ==========================  =========================

How a shape becomes blocks (:meth:`GpuPreset.shape`): ``waves = ceil(threads / wave size)``;
VGPR blocks per wave ``= ceil(registers / granule)``, where on CDNA3 the registers are
``align(arch, 4) + accum`` (the architected and accumulation registers share one file);
SGPR blocks per wave ``= ceil(sgprs / 16)`` (CDNA3 only); LDS blocks per WG ``= ceil(bytes /
granule)``. A shape the GPU cannot launch at all (too many threads, registers or LDS bytes per
workgroup, a wave size it does not run, or, on Pascal, more registers per block than the
hardware check allows) raises :class:`LaunchError` naming the limit.

What the model does not have: a limit on workgroups per AP (barrier resources: 16 multi-wave
workgroups per CDNA3 CU, 32 per RDNA WGP; 32 blocks per Pascal SM). It is kept here
(:attr:`GpuPreset.workgroups_per_ap`) so that an occupancy comparison can show where it binds.

Sources (figures only; nothing is copied):

* AMD, ROCm documentation "GPU hardware specifications" (``docs/reference/gpu-arch-specs.rst``
  of the ROCm repository): MI300X 304 CUs, wave 64, LDS 64 KiB, VGPR file 512 KiB and SGPR
  file 12.5 KiB per CU; RX 9070 XT (gfx1201) 64 CUs, wave 32 or 64, LDS 128 KiB and VGPR file
  768 KiB (per WGP).
* AMD's compiler, LLVM ``llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp``: VGPR allocation
  granule 8 and 512 registers on gfx90a-class parts (CDNA2/3), 24/12 (wave32/64) and 1536/768
  on parts with 1.5x VGPRs; 800 SGPRs per SIMD allocated in 16s before gfx10, none pooled from
  gfx10; at most 8 waves per SIMD on gfx90a-class parts and 16 from gfx10.3; 112 SGPRs at
  most per wave (gfx8-9); LDS doubled to 128 KiB in WGP mode; 16 (CU) or 32 (WGP) workgroup
  barriers. ``llvm/docs/AMDGPUUsage.rst``: LDS granule 128 dwords (512 B) on GFX7-GFX12;
  ``vgprs_used = align(arch_vgprs, 4) + acc_vgprs`` on GFX90A/GFX942.
* AMD HIP runtime (ROCm clr ``hipamd/src/hip_platform.cpp``,
  ``ihipOccupancyMaxActiveBlocksPerMultiprocessor``): 8 waves per SIMD up to gfx9, 16 from
  gfx10; SIMDs doubled in WGP mode; SGPRs per SIMD / ``align(sgprs, 16)``.
* NVIDIA, CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
  (6.1): 64K 32-bit registers, 64 warps, 32 blocks and 96 KB shared memory per SM; 255
  registers per thread; 48 KB shared memory and 64K registers per block. NVIDIA
  ``cuda_occupancy.h`` (CUDA toolkit): 4 sub-partitions per SM on 6.1, registers allocated
  per warp in units of 256, shared memory in units of 256 B.
* Clocks (for time in cycles): MI300X peak engine clock 2100 MHz (its published 163.4 TFLOPS
  FP32 matrix = 304 CUs x 256 FLOP/clock x 2.1 GHz); RX 9070 XT boost 2970 MHz; GTX 1080 Ti
  boost 1582 MHz.

The RDNA4 preset matches the shipped trace (``tests/data/rocprof-llamacpp``): its Tensile
kernel names carry ``ISA1201`` (gfx1201, Navi 48), its waves are 32 wide and its SGPR column
reads 128, which rocprof v1 reports for every gfx10+ kernel. gfx1201 ships as the RX 9070 XT,
the RX 9070 (56 CUs) and the Radeon AI PRO R9700 (64 CUs); the trace does not name the card,
so the preset is the 64-CU RX 9070 XT.
"""

from dataclasses import dataclass

__all__ = ["GPU_PRESETS", "GpuPreset", "LaunchError", "WorkgroupShape", "gpu_preset"]


class LaunchError(ValueError):
    """A kernel shape that the GPU cannot launch (the vendor's occupancy APIs return 0)."""


@dataclass(frozen=True)
class WorkgroupShape:
    """One workgroup in the model's units: waves, VGPR and SGPR blocks per wave, LDS blocks."""

    waves: int
    vgpr: int
    sgpr: int
    lds: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _align(value: int, granule: int) -> int:
    return _ceil_div(value, granule) * granule


@dataclass(frozen=True)
class GpuPreset:
    """A real GPU: its APs and PEUs, resources per PEU / AP, and allocation granularities.

    register_files
        ``((wave size, registers per lane per PEU, allocation granule in registers), ...)``,
        the GPU's native wave size first. Every entry must give the same number of blocks.
    max_registers
        Registers per thread (lane) a kernel may use.
    unified_accumulation
        The accumulation registers share the VGPR file: a wave holds
        ``align(arch, 4) + accum`` registers (CDNA2/3). Otherwise a kernel with
        accumulation registers cannot launch.
    sgprs_per_peu, sgpr_granule, max_sgprs
        The pooled SGPR file; ``0`` when SGPRs are not allocated from a pool (then they do not
        limit occupancy and the model gets a single, unused SGPR block).
    lds_per_ap, lds_granule, max_lds_per_workgroup
        LDS (shared memory) bytes per AP, its allocation unit, and the most one workgroup may
        take.
    wave_slots
        Waves (warps) per PEU.
    max_threads, max_registers_per_workgroup
        Threads per workgroup; registers per workgroup with the warp count rounded up to the
        PEUs (NVIDIA's hardware launch check), ``0`` when there is no such check.
    workgroups_per_ap, single_wave_exempt
        Resident workgroups per AP (barrier resources) and whether single-wave workgroups are
        exempt. Not modelled by the dispatcher; kept for comparisons.
    clock_mhz
        The clock that turns a trace's nanoseconds into cycles.
    """

    name: str
    description: str
    vendor: str
    aps: int
    peus: int
    register_files: tuple[tuple[int, int, int], ...]
    max_registers: int
    unified_accumulation: bool
    sgprs_per_peu: int
    sgpr_granule: int
    max_sgprs: int
    lds_per_ap: int
    lds_granule: int
    max_lds_per_workgroup: int
    wave_slots: int
    max_threads: int
    max_registers_per_workgroup: int
    workgroups_per_ap: int
    single_wave_exempt: bool
    clock_mhz: int

    def __post_init__(self):
        blocks = {total // granule for _, total, granule in self.register_files}
        if len(blocks) != 1 or any(total % granule for _, total, granule in self.register_files):
            raise ValueError(f"GPU preset {self.name!r}: every register file must split into "
                             f"the same whole number of blocks, not {self.register_files!r}")
        if self.lds_per_ap % self.lds_granule:
            raise ValueError(f"GPU preset {self.name!r}: LDS granule {self.lds_granule} must "
                             f"divide the LDS size {self.lds_per_ap}")

    @property
    def wave_sizes(self) -> tuple[int, ...]:
        """Wave sizes the GPU runs, its native one first."""
        return tuple(size for size, _, _ in self.register_files)

    @property
    def vgpr_blocks(self) -> int:
        _, total, granule = self.register_files[0]
        return total // granule

    @property
    def sgpr_blocks(self) -> int:
        """SGPR blocks per PEU in the model (1, never used, when SGPRs are not pooled)."""
        return self.sgprs_per_peu // self.sgpr_granule if self.sgprs_per_peu else 1

    @property
    def lds_blocks(self) -> int:
        return self.lds_per_ap // self.lds_granule

    def gpu_fields(self, aps: int | None = None) -> dict:
        """The model's ``GpuConfig`` fields for this GPU (``aps`` overrides the AP count).

        Embodiment 9's weights are left to ``GpuConfig``'s default, "1 / capacity" scaled
        to integers, so a whole empty AP scores the same per resource type on every preset.
        """
        return {"aps": self.aps if aps is None else aps, "peus": self.peus,
                "vgpr": self.vgpr_blocks, "sgpr": self.sgpr_blocks, "lds": self.lds_blocks,
                "wave_slots": self.wave_slots}

    def shape(self, threads: int, registers: int, lds_bytes: int, *, sgprs: int = 0,
              accum_registers: int = 0, wave_size: int | None = None) -> WorkgroupShape:
        """The model's :class:`WorkgroupShape` of a workgroup; :class:`LaunchError` when the
        GPU cannot launch it (the message names the limit)."""
        for label, value, low in (("threads", threads, 1), ("registers", registers, 0),
                                  ("LDS bytes", lds_bytes, 0), ("SGPRs", sgprs, 0),
                                  ("accumulation registers", accum_registers, 0)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{label} must be an integer, not {value!r}")
            if value < low:
                raise ValueError(f"{label} must be at least {low}, not {value}")
        size = self.wave_sizes[0] if wave_size is None else wave_size
        files = {wave: (total, granule) for wave, total, granule in self.register_files}
        if size not in files:
            raise LaunchError(f"{self.name} runs waves of {' or '.join(map(str, files))} "
                              f"threads, not {size}")
        if threads > self.max_threads:
            raise LaunchError(f"{threads} threads per workgroup, but {self.name} allows at "
                              f"most {self.max_threads}")
        if self.unified_accumulation:
            used = _align(registers, 4) + accum_registers if accum_registers else registers
        elif accum_registers:
            raise LaunchError(f"{self.name} has no accumulation registers, but the kernel "
                              f"uses {accum_registers}")
        else:
            used = registers
        if used > self.max_registers:
            raise LaunchError(f"{used} registers per thread, but {self.name} allows at most "
                              f"{self.max_registers}")
        if lds_bytes > self.max_lds_per_workgroup:
            raise LaunchError(f"{lds_bytes} LDS bytes per workgroup, but {self.name} allows "
                              f"at most {self.max_lds_per_workgroup}")
        if self.sgprs_per_peu and sgprs > self.max_sgprs:
            raise LaunchError(f"{sgprs} SGPRs per wave, but {self.name} allocates at most "
                              f"{self.max_sgprs}")
        waves = _ceil_div(threads, size)
        _, granule = files[size]
        vgpr = _ceil_div(used, granule)
        if self.max_registers_per_workgroup:
            # NVIDIA's launch check assumes registers in every sub-partition at once.
            per_warp = vgpr * granule * size
            if per_warp * _align(waves, self.peus) > self.max_registers_per_workgroup:
                raise LaunchError(f"{per_warp} registers per warp x {_align(waves, self.peus)} "
                                  f"warps exceeds {self.name}'s "
                                  f"{self.max_registers_per_workgroup} registers per block")
        sgpr = _ceil_div(sgprs, self.sgpr_granule) if self.sgprs_per_peu else 0
        return WorkgroupShape(waves=waves, vgpr=vgpr, sgpr=sgpr,
                              lds=_ceil_div(lds_bytes, self.lds_granule))


#: The presets by name.
GPU_PRESETS = {preset.name: preset for preset in (
    GpuPreset(
        name="cdna3-cu", vendor="AMD",
        description="AMD Instinct MI300X (CDNA3, gfx942): 304 CUs of 4 SIMDs, wave64",
        aps=304, peus=4, register_files=((64, 512, 8),), max_registers=512,
        unified_accumulation=True, sgprs_per_peu=800, sgpr_granule=16, max_sgprs=112,
        lds_per_ap=64 * 1024, lds_granule=512, max_lds_per_workgroup=64 * 1024,
        wave_slots=8, max_threads=1024, max_registers_per_workgroup=0,
        workgroups_per_ap=16, single_wave_exempt=True, clock_mhz=2100),
    GpuPreset(
        name="rdna4-wgp", vendor="AMD",
        description="AMD Radeon RX 9070 XT (RDNA4, gfx1201): 32 WGPs of 4 SIMD32s, WGP mode, "
                    "wave32",
        aps=32, peus=4, register_files=((32, 1536, 24), (64, 768, 12)), max_registers=256,
        unified_accumulation=False, sgprs_per_peu=0, sgpr_granule=1, max_sgprs=0,
        lds_per_ap=128 * 1024, lds_granule=512, max_lds_per_workgroup=64 * 1024,
        wave_slots=16, max_threads=1024, max_registers_per_workgroup=0,
        workgroups_per_ap=32, single_wave_exempt=True, clock_mhz=2970),
    GpuPreset(
        name="pascal-sm", vendor="NVIDIA",
        description="NVIDIA GeForce GTX 1080 Ti (Pascal GP102, compute capability 6.1): 28 SMs "
                    "of 4 sub-partitions, warp 32",
        aps=28, peus=4, register_files=((32, 512, 8),), max_registers=255,
        unified_accumulation=False, sgprs_per_peu=0, sgpr_granule=1, max_sgprs=0,
        lds_per_ap=96 * 1024, lds_granule=256, max_lds_per_workgroup=48 * 1024,
        wave_slots=16, max_threads=1024, max_registers_per_workgroup=64 * 1024,
        workgroups_per_ap=32, single_wave_exempt=False, clock_mhz=1582),
)}


def gpu_preset(name) -> GpuPreset:
    """The preset called ``name`` (a :class:`GpuPreset` is returned as it is)."""
    if isinstance(name, GpuPreset):
        return name
    if name not in GPU_PRESETS:
        raise ValueError(f"unknown GPU preset {name!r}; known: {', '.join(GPU_PRESETS)}")
    return GPU_PRESETS[name]
