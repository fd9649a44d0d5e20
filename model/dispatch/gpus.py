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

**Resident workgroups per AP** (:attr:`GpuPreset.workgroups_per_ap`: 32 blocks per Pascal SM;
16 multi-wave workgroups per CDNA3 CU and 32 per RDNA WGP in WGP mode, single-wave ones
exempt, as they take no barrier). The dispatcher model has no workgroup-slot resource, so the
slot is carried as LDS: a shape whose other resources would let an empty AP hold more than
``workgroups_per_ap`` of it reserves ``lds_blocks / workgroups_per_ap`` LDS blocks per
workgroup (at least; :attr:`WorkgroupShape.reserved` counts the blocks added). For one shape
on an AP this gives exactly ``min(per-resource occupancy, workgroups_per_ap)``, the vendor's
rule (``floor(L / max(l, L / W)) = min(floor(L / l), W)`` when ``W`` divides ``L``, which
:class:`GpuPreset` checks); for a mix of shapes on one AP it is conservative (a reserving WG
holds LDS that a real one would leave to a WG of another kernel). It binds only on Pascal
(one-warp blocks: 64 warp slots, 32 blocks): with 32 (CDNA3) or 64 (RDNA4) wave slots per
AP a multi-wave workgroup never fits more than 16 or 32 times. The engine's own per-AP slot
count will replace it (docs/kernels.md, "Occupancy").

The vendors' occupancy rules are restated independently of the presets by
:func:`cuda_occupancy` (the CUDA occupancy calculator, ``cuda_occupancy.h``, for compute
capabilities 5.x and 6.x) and :func:`amd_occupancy` (AMD's compiler, LLVM's AMDGPU backend,
and the HIP runtime), each from its own table of per-target figures;
:meth:`GpuPreset.vendor_occupancy` applies the rule of the preset's target.

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
* NVIDIA ``cuda_occupancy.h`` (CUDA 8 to 12): ``cudaOccMaxBlocksPerMultiprocessor`` (32 on
  5.x and 6.x), ``cudaOccSMemAllocationGranularity`` (256 B on 3.x-7.x),
  ``cudaOccRegAllocationGranularity`` (256), ``cudaOccSubPartitionsPerMultiprocessor`` (2 on
  6.0, else 4), ``cudaOccMaxBlocksPerSMRegsLimit`` and the per-block "hardware check".
* LLVM ``AMDGPUBaseInfo.cpp`` ``getMaxWorkGroupsPerCU``: single-wave workgroups take no
  barrier; otherwise at most ``min(max waves / waves per WG, 16)`` per CU, 32 in WGP mode.
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

__all__ = ["AMD_TARGETS", "CUDA_CAPABILITIES", "GPU_PRESETS", "AmdTarget", "CudaCapability",
           "GpuPreset", "LaunchError", "WorkgroupShape", "amd_occupancy", "cuda_occupancy",
           "gpu_preset"]


class LaunchError(ValueError):
    """A kernel shape that the GPU cannot launch (the vendor's occupancy APIs return 0)."""


@dataclass(frozen=True)
class WorkgroupShape:
    """One workgroup in the model's units: waves, VGPR and SGPR blocks per wave, LDS blocks.

    ``reserved`` of the ``lds`` blocks are not the kernel's LDS but its resident-workgroup slot
    (module docstring).
    """

    waves: int
    vgpr: int
    sgpr: int
    lds: int
    reserved: int = 0


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
        Resident workgroups per AP (NVIDIA: blocks per SM; AMD: workgroup barriers) and
        whether single-wave workgroups are exempt (AMD: they use no barrier). Carried as an
        LDS reservation where it binds (module docstring); ``0``: no limit.
    clock_mhz
        The clock that turns a trace's nanoseconds into cycles.
    target
        The vendor's name of the part whose occupancy rule applies: a CUDA compute
        capability (``"6.1"``) or an AMD target with its mode (``"gfx942"``,
        ``"gfx1201:wgp"``); see :meth:`vendor_occupancy`.
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
    target: str = ""

    def __post_init__(self):
        blocks = {total // granule for _, total, granule in self.register_files}
        if len(blocks) != 1 or any(total % granule for _, total, granule in self.register_files):
            raise ValueError(f"GPU preset {self.name!r}: every register file must split into "
                             f"the same whole number of blocks, not {self.register_files!r}")
        if self.lds_per_ap % self.lds_granule:
            raise ValueError(f"GPU preset {self.name!r}: LDS granule {self.lds_granule} must "
                             f"divide the LDS size {self.lds_per_ap}")
        if self.workgroups_per_ap and self.lds_blocks % self.workgroups_per_ap:
            raise ValueError(f"GPU preset {self.name!r}: {self.workgroups_per_ap} resident "
                             f"workgroups per AP must divide its {self.lds_blocks} LDS blocks "
                             f"(the slot is carried as an equal share of the LDS)")

    @property
    def slot_lds(self) -> int:
        """LDS blocks that stand for one resident-workgroup slot (0 without a limit)."""
        return self.lds_blocks // self.workgroups_per_ap if self.workgroups_per_ap else 0

    def _slot_can_bind(self, waves: int, vgpr: int, sgpr: int, lds: int) -> bool:
        """Whether the other resources could let an empty AP hold more than
        ``workgroups_per_ap`` WGs of this shape (an upper bound of the model's placement:
        all wave slots, every PEU's VGPR / SGPR blocks, the AP's LDS)."""
        if not self.workgroups_per_ap or (self.single_wave_exempt and waves == 1):
            return False
        waves_per_ap = self.peus * self.wave_slots
        if vgpr:
            waves_per_ap = min(waves_per_ap, self.peus * (self.vgpr_blocks // vgpr))
        if sgpr and self.sgprs_per_peu:
            waves_per_ap = min(waves_per_ap, self.peus * (self.sgpr_blocks // sgpr))
        bound = waves_per_ap // waves
        if lds:
            bound = min(bound, self.lds_blocks // lds)
        return bound > self.workgroups_per_ap

    def vendor_occupancy(self, threads: int, registers: int, lds_bytes: int, *,
                         sgprs: int = 0, accum_registers: int = 0,
                         wave_size: int | None = None) -> int:
        """Workgroups of this shape resident on one compute unit / SM by the vendor's own
        rule for :attr:`target` (:func:`cuda_occupancy` or :func:`amd_occupancy`), which
        does not read the preset's fields."""
        if self.vendor == "NVIDIA":
            return cuda_occupancy(self.target, threads, registers, lds_bytes)
        name, _, mode = self.target.partition(":")
        return amd_occupancy(name, threads, registers, lds_bytes, sgprs=sgprs,
                             accum_vgprs=accum_registers, wave_size=wave_size,
                             wgp_mode=mode == "wgp")

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
        lds = _ceil_div(lds_bytes, self.lds_granule)
        reserved = 0
        if self._slot_can_bind(waves, vgpr, sgpr, lds):
            reserved = max(0, self.slot_lds - lds)
        return WorkgroupShape(waves=waves, vgpr=vgpr, sgpr=sgpr, lds=lds + reserved,
                              reserved=reserved)


#: The presets by name.
GPU_PRESETS = {preset.name: preset for preset in (
    GpuPreset(
        name="cdna3-cu", vendor="AMD",
        description="AMD Instinct MI300X (CDNA3, gfx942): 304 CUs of 4 SIMDs, wave64",
        aps=304, peus=4, register_files=((64, 512, 8),), max_registers=512,
        unified_accumulation=True, sgprs_per_peu=800, sgpr_granule=16, max_sgprs=112,
        lds_per_ap=64 * 1024, lds_granule=512, max_lds_per_workgroup=64 * 1024,
        wave_slots=8, max_threads=1024, max_registers_per_workgroup=0,
        workgroups_per_ap=16, single_wave_exempt=True, clock_mhz=2100, target="gfx942"),
    GpuPreset(
        name="rdna4-wgp", vendor="AMD",
        description="AMD Radeon RX 9070 XT (RDNA4, gfx1201): 32 WGPs of 4 SIMD32s, WGP mode, "
                    "wave32",
        aps=32, peus=4, register_files=((32, 1536, 24), (64, 768, 12)), max_registers=256,
        unified_accumulation=False, sgprs_per_peu=0, sgpr_granule=1, max_sgprs=0,
        lds_per_ap=128 * 1024, lds_granule=512, max_lds_per_workgroup=64 * 1024,
        wave_slots=16, max_threads=1024, max_registers_per_workgroup=0,
        workgroups_per_ap=32, single_wave_exempt=True, clock_mhz=2970, target="gfx1201:wgp"),
    GpuPreset(
        name="pascal-sm", vendor="NVIDIA",
        description="NVIDIA GeForce GTX 1080 Ti (Pascal GP102, compute capability 6.1): 28 SMs "
                    "of 4 sub-partitions, warp 32",
        aps=28, peus=4, register_files=((32, 512, 8),), max_registers=255,
        unified_accumulation=False, sgprs_per_peu=0, sgpr_granule=1, max_sgprs=0,
        lds_per_ap=96 * 1024, lds_granule=256, max_lds_per_workgroup=48 * 1024,
        wave_slots=16, max_threads=1024, max_registers_per_workgroup=64 * 1024,
        workgroups_per_ap=32, single_wave_exempt=False, clock_mhz=1582, target="6.1"),
)}


def gpu_preset(name) -> GpuPreset:
    """The preset called ``name`` (a :class:`GpuPreset` is returned as it is)."""
    if isinstance(name, GpuPreset):
        return name
    if name not in GPU_PRESETS:
        raise ValueError(f"unknown GPU preset {name!r}; known: {', '.join(GPU_PRESETS)}")
    return GPU_PRESETS[name]


# -- the vendors' occupancy rules, from their own figures (not from the presets) -------------

@dataclass(frozen=True)
class CudaCapability:
    """The figures of one CUDA compute capability that decide occupancy.

    From the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
    (threads, blocks, registers and shared memory per SM and per block) and the occupancy
    calculator ``cuda_occupancy.h`` (allocation granularities, sub-partitions).
    """

    threads_per_sm: int            # maxThreadsPerMultiProcessor
    blocks_per_sm: int             # cudaOccMaxBlocksPerMultiprocessor
    registers_per_sm: int          # regsPerMultiprocessor
    registers_per_block: int       # regsPerBlock
    registers_per_thread: int      # cudaOccRegAllocationMaxPerThread
    register_granule: int          # cudaOccRegAllocationGranularity (registers of a warp)
    sub_partitions: int            # cudaOccSubPartitionsPerMultiprocessor
    smem_per_sm: int               # sharedMemPerMultiprocessor (fixed on 5.x / 6.x)
    smem_per_block: int            # sharedMemPerBlock
    smem_granule: int              # cudaOccSMemAllocationGranularity
    threads_per_block: int = 1024
    warp_size: int = 32


def _cuda(smem_per_sm_kib: int, registers_per_block: int = 65536,
          sub_partitions: int = 4) -> CudaCapability:
    return CudaCapability(threads_per_sm=2048, blocks_per_sm=32, registers_per_sm=65536,
                          registers_per_block=registers_per_block, registers_per_thread=255,
                          register_granule=256, sub_partitions=sub_partitions,
                          smem_per_sm=smem_per_sm_kib * 1024, smem_per_block=48 * 1024,
                          smem_granule=256)


#: Compute capabilities whose shared memory per SM is fixed (Maxwell, Pascal); from 7.0 the
#: L1 / shared-memory carveout makes it a launch setting, which this rule does not model.
#: 5.3 and 6.2 (Tegra) have 32K registers per block; 6.0 (GP100) has 2 sub-partitions.
CUDA_CAPABILITIES = {
    "5.0": _cuda(64), "5.2": _cuda(96), "5.3": _cuda(64, registers_per_block=32768),
    "6.0": _cuda(64, sub_partitions=2), "6.1": _cuda(96),
    "6.2": _cuda(64, registers_per_block=32768),
}


def _up(value: int, granule: int) -> int:
    return _ceil_div(value, granule) * granule


def _regs_limit(cap: CudaCapability, warps: int, registers: int) -> int:
    """``cudaOccMaxBlocksPerSMRegsLimit`` with partitioned global caching off."""
    per_warp = _up(registers * cap.warp_size, cap.register_granule)
    if (per_warp * _up(warps, cap.sub_partitions) > cap.registers_per_block   # hardware check
            or per_warp * warps > cap.registers_per_block                    # software check
            or registers > cap.registers_per_thread):
        return 0
    if not per_warp:
        return 1 << 30
    warps_per_partition = cap.registers_per_sm // cap.sub_partitions // per_warp
    return warps_per_partition * cap.sub_partitions // warps


def cuda_occupancy(cc: str, threads_per_block: int, regs_per_thread: int,
                   smem_per_block: int) -> int:
    """Resident blocks per SM by the CUDA occupancy calculator (``cuda_occupancy.h``,
    ``cudaOccMaxActiveBlocksPerMultiprocessor``) for compute capability ``cc`` ("6.1"):
    the least of the warp limit ``(threads per SM / 32) // warps``, the register limit
    (registers of a warp rounded up to 256, counted per sub-partition), the shared-memory
    limit ``smem per SM // roundup(smem, 256)`` and the blocks per SM; 0 when the block
    breaks a per-block limit (threads, registers per thread or per block, shared memory).
    ``smem_per_block`` is static plus dynamic shared memory in bytes."""
    if cc not in CUDA_CAPABILITIES:
        raise ValueError(f"no occupancy figures for compute capability {cc!r}; known: "
                         f"{', '.join(CUDA_CAPABILITIES)}")
    cap = CUDA_CAPABILITIES[cc]
    if threads_per_block < 1 or regs_per_thread < 0 or smem_per_block < 0:
        raise ValueError(f"threads must be positive and registers and shared memory not "
                         f"negative, not {threads_per_block}, {regs_per_thread}, "
                         f"{smem_per_block}")
    if threads_per_block > cap.threads_per_block:
        return 0
    warps = _ceil_div(threads_per_block, cap.warp_size)
    by_warps = cap.threads_per_sm // cap.warp_size // warps
    if cc == "6.0" and _regs_limit(CUDA_CAPABILITIES["6.1"], warps, regs_per_thread) == 0:
        return 0                   # what cannot run on GP10x runs on no Pascal (the calculator)
    by_registers = _regs_limit(cap, warps, regs_per_thread)
    smem = _up(smem_per_block, cap.smem_granule)
    if smem > cap.smem_per_block:
        return 0
    by_smem = cap.smem_per_sm // smem if smem else 1 << 30
    return min(by_warps, by_registers, by_smem, cap.blocks_per_sm)


@dataclass(frozen=True)
class AmdTarget:
    """The figures of one AMD GPU target that decide occupancy (per CU, or per WGP in WGP
    mode, where the workgroup processor's two CUs share the LDS and barriers).

    From LLVM's AMDGPU backend (``AMDGPUBaseInfo.cpp``: ``getMaxWavesPerEU``,
    ``getVGPRAllocGranule``, ``getTotalNumVGPRs``, ``getTotalNumSGPRs``,
    ``getMaxWorkGroupsPerCU``; ``AMDGPUUsage.rst``: LDS granule), the HIP runtime
    (``ihipOccupancyMaxActiveBlocksPerMultiprocessor``: waves pooled over the CU's SIMDs,
    LDS per CU) and AMD's "GPU hardware specifications" (LDS per CU).
    """

    simds: int                                  # SIMDs (EUs) per CU, per WGP in WGP mode
    waves_per_simd: int                         # getMaxWavesPerEU
    vgprs: dict                                 # wave size -> (VGPRs per lane, granule)
    max_vgprs: int                              # registers per lane one wave may address
    unified_accumulation: bool                  # GFX90A / GFX942: align(arch, 4) + acc
    sgprs: int                                  # SGPRs per SIMD, 0 when not pooled
    max_sgprs: int
    lds: int                                    # bytes per CU (per WGP in WGP mode)
    max_lds_per_workgroup: int
    barriers: int                               # multi-wave workgroups per CU / WGP
    lds_granule: int = 512
    max_threads: int = 1024


#: Targets of the presets (and their CDNA2 sibling). gfx1201 is given in WGP mode (the HIP
#: default on RDNA); its CU mode would have 2 SIMDs, 64 KiB and 16 barriers.
AMD_TARGETS = {
    "gfx90a": AmdTarget(simds=4, waves_per_simd=8, vgprs={64: (512, 8)}, max_vgprs=512,
                        unified_accumulation=True, sgprs=800, max_sgprs=112, lds=64 * 1024,
                        max_lds_per_workgroup=64 * 1024, barriers=16),
    "gfx942": AmdTarget(simds=4, waves_per_simd=8, vgprs={64: (512, 8)}, max_vgprs=512,
                        unified_accumulation=True, sgprs=800, max_sgprs=112, lds=64 * 1024,
                        max_lds_per_workgroup=64 * 1024, barriers=16),
    "gfx1201:wgp": AmdTarget(simds=4, waves_per_simd=16, vgprs={32: (1536, 24), 64: (768, 12)},
                             max_vgprs=256, unified_accumulation=False, sgprs=0, max_sgprs=0,
                             lds=128 * 1024, max_lds_per_workgroup=64 * 1024, barriers=32),
}


def amd_occupancy(target: str, threads: int, vgprs: int, lds_bytes: int, *, sgprs: int = 0,
                  accum_vgprs: int = 0, wave_size: int | None = None,
                  wgp_mode: bool = False) -> int:
    """Resident workgroups per CU (per WGP with ``wgp_mode``) of an AMD ``target``
    ("gfx942", "gfx1201") by AMD's documented rule: waves per SIMD = the least of the wave
    limit, ``VGPRs per SIMD // align(VGPRs, granule)`` (on GFX90A/GFX942 the wave holds
    ``align(arch, 4) + acc``) and ``SGPRs per SIMD // align(SGPRs, 16)`` where SGPRs are
    pooled; workgroups = ``SIMDs x waves per SIMD // waves per workgroup``, at most
    ``LDS // align(LDS bytes, 512)`` and, for workgroups of more than one wave, the barrier
    limit (LLVM ``getMaxWorkGroupsPerCU``: 16 per CU, 32 per WGP); 0 when the workgroup
    cannot launch (threads, registers, SGPRs or LDS above the target's maximum)."""
    key = f"{target}:wgp" if wgp_mode else target
    if key not in AMD_TARGETS:
        raise ValueError(f"no occupancy figures for AMD target {key!r}; known: "
                         f"{', '.join(AMD_TARGETS)}")
    t = AMD_TARGETS[key]
    size = wave_size or min(t.vgprs)
    if size not in t.vgprs:
        return 0
    per_simd, granule = t.vgprs[size]
    if t.unified_accumulation:
        used = _up(vgprs, 4) + accum_vgprs if accum_vgprs else vgprs
    elif accum_vgprs:
        return 0
    else:
        used = vgprs
    if (threads < 1 or threads > t.max_threads or used > t.max_vgprs
            or lds_bytes > t.max_lds_per_workgroup or (t.sgprs and sgprs > t.max_sgprs)):
        return 0
    waves_per_simd = t.waves_per_simd
    if used:
        waves_per_simd = min(waves_per_simd, per_simd // _up(used, granule))
    if t.sgprs and sgprs:
        waves_per_simd = min(waves_per_simd, t.sgprs // _up(sgprs, 16))
    waves = _ceil_div(threads, size)
    workgroups = t.simds * waves_per_simd // waves
    if lds_bytes:
        workgroups = min(workgroups, t.lds // _up(lds_bytes, t.lds_granule))
    if waves > 1:
        workgroups = min(workgroups, t.barriers)
    return workgroups
