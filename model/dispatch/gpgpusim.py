"""GPGPU-Sim's CTA issue, rule by rule from its source (``selection = "gpgpusim"``, preset
``gpgpusim``; ``selection = "gpgpusim_concurrent"`` for ``-gpgpu_concurrent_kernel_sm 1``).
Source: accel-sim/gpgpu-sim_distribution at ``667834c``, ``src/gpgpu-sim/gpu-sim.cc`` and
``src/gpgpu-sim/shader.cc`` (docs/baselines.md, rows G1-G10, has the line numbers). Not a
stage of seed 002; no RTL twin (``make cosim`` refuses it). An AP is an SM, one SM per
cluster (the tested Volta/Pascal/Ampere configurations); a PEU is a warp scheduler.

Rules, each with its source:

- **G1, kernels in stream order** (``gpgpu_sim::launch``, ``can_start_kernel``;
  ``stream_manager.cc``): a kernel is a run of a channel's WGs (see
  :mod:`model.dispatch.ownclock`); a channel's next kernel starts when its previous one is
  done. The kernel slots' order is the channels' order (ours: a kernel takes the first free
  slot at launch, which for one kernel per channel at a time is its channel's).
- **G2, sticky kernel** (``gpgpu_sim::select_kernel``): the last selected kernel while it has
  WGs left; otherwise the next kernel slot after it, in slot order, that has WGs left (the
  selection moves the pointer).
- **G3, one kernel per SM, drain to switch** (default ``-gpgpu_concurrent_kernel_sm 0``;
  ``simt_core_cluster::issue_block2core``, the ``get_not_completed() == 0`` test): each AP
  keeps its kernel; when that kernel has no WG left, the AP asks ``select_kernel`` for a new
  one only once it runs nothing.
- **G4, concurrent mode** (``gpgpusim_concurrent``; ``issue_block2core``,
  ``can_issue_1block``): every AP asks ``select_kernel`` at each issue, so the sticky kernel
  is the only candidate: when its next WG fits no AP, no WG of any kernel is issued.
- **G5, rate** (``gpgpu_sim::issue_block2core``, once per core clock;
  ``m_cta_issue_next_core``): every cycle each AP may take one WG, the APs tried in round
  robin from one past the last AP that issued (up to one WG per AP per cycle).
- **G6, max_cta** (``shader_core_config::max_cta``, ``-gpgpu_shader_cta`` = 32;
  ``can_issue_1block``): at most ``MAX_CTA`` WGs on an AP, and the resources by the fit
  test. A kernel too small to fill every SM (``num_blocks() < result * num_shader()``) is
  capped at ``ceil(grid / SMs)`` WGs per SM, so its WGs spread over the SMs instead of
  piling on those free first; the grid is the WG's ``grid`` (its launch's WGs, which a
  trace gives). We test ``grid < MAX_CTA * APs`` where GPGPU-Sim tests its occupancy
  ``result`` (at most ``MAX_CTA``): for ``result * APs <= grid < MAX_CTA * APs`` our cap
  ``ceil(grid / APs)`` is at least ``result``, which the fit test enforces on an AP running
  that kernel alone, so the WGs placed are the same (in concurrent mode, where an SM may
  hold other kernels' CTAs, GPGPU-Sim's cap counts them and ours may admit more).
- **G8, CTA slot and warp binding** (``shader_core_ctx::issue_block2core``; ``shader.cc``,
  the scheduler binding): the WG takes the AP's lowest free WG slot ``k``; its wave ``i`` is
  hardware warp ``k w + i`` (``w`` its waves), served by PEU ``(k w + i) mod Q``. Not a
  rotating pointer: a freed low slot is reused first.

- **G7, G9, counted pools** (``gpu-sim.cc``, ``occupy_shader_resource_1block``;
  ``units = "counted"``, the preset's, :class:`model.dispatch.units.CountedUnits`):
  registers and shared memory are counted per SM with no addresses: a WG fits when the AP's
  free VGPR, SGPR and LDS blocks cover it, wherever they lie. ``units = "blocks"`` gives the
  seed's contiguous blocks instead, for comparison.

Not modelled, and what the policy sees instead:

- **G6** on a generated workload: its kernels' sizes are not known (``grid`` is ``None``),
  so only ``MAX_CTA`` caps them.
- **G10**: kernel launch latency 0 (GPGPU-Sim's default; the tested configs' 5,000 cycles
  would dominate short scenarios).
"""

from model.dispatch.ownclock import OwnClockSelector, RecordingMatcher

__all__ = ["MAX_CTA", "GpgpuSimConcurrentSelector", "GpgpuSimMatcher", "GpgpuSimSelector"]

MAX_CTA = 32


class GpgpuSimMatcher(RecordingMatcher):
    """G6, G8: the WGs an AP may hold of a kernel, the lowest free WG slot of the AP and
    the warp-to-scheduler rule."""

    def cta_limit(self, wg) -> int:
        """G6: ``MAX_CTA``, or ``ceil(grid / APs)`` for a kernel of ``grid < MAX_CTA x
        APs`` WGs."""
        grid = wg.grid
        if grid is None or grid >= MAX_CTA * self.P:
            return MAX_CTA
        return -(-grid // self.P)

    def slot(self, ap: int) -> int | None:
        """The lowest free WG slot of ``ap`` (``None``: ``MAX_CTA`` WGs there)."""
        used = set(self.records.live(ap).values())
        return next((k for k in range(MAX_CTA) if k not in used), None)

    def placement(self, wg, ap: int):
        k = self.slot(ap)
        if k is None:
            return None
        w, Q = wg.waves, self.Q
        if (k + 1) * w > Q * self.wave_slots:
            return None                      # the slot's hardware warps do not exist
        row = [0] * Q
        for i in range(w):
            row[(k * w + i) % Q] += 1
        return tuple(row)

    def fits(self, wg, ap: int) -> bool:
        if wg.waves > self.ap_slots[ap] or len(self.records.live(ap)) >= self.cta_limit(wg):
            return False
        row = self.placement(wg, ap)
        return row is not None and self.peu_fits(wg, ap, row)


class GpgpuSimSelector(OwnClockSelector):
    """GPGPU-Sim's kernel selection and CTA issue (see the module docstring).

    State: ``last_kernel`` (``m_last_issued_kernel``, a ``(channel, epoch)`` kernel),
    ``ap_kernel`` (each SM's kernel), ``last_ap`` (the last AP that issued).
    """

    concurrent = False

    def __init__(self, gpu, policy, queues, matcher, resources, view):
        super().__init__(gpu, policy, queues, matcher, resources, view)
        self.last_kernel = None
        self.ap_kernel = [None] * self.P
        self.last_ap = self.P - 1

    def select_kernel(self):
        """G2: the sticky kernel while it has WGs, else the next one in slot order."""
        if self.has_wgs(self.last_kernel):
            return self.last_kernel
        start = self.last_kernel[0] + 1 if self.last_kernel else 0
        count = self.channel_count
        for n in range(count):
            kernel = self.kernel((start + n) % count)
            if self.has_wgs(kernel):
                self.last_kernel = kernel
                return kernel
        return None

    def step(self, cycle: int):
        matcher = self.matcher
        waiting = any(self.channels)
        issued = 0
        P = self.P
        first = self.last_ap + 1
        for k in range(P):
            ap = (first + k) % P
            if self.concurrent:
                kernel = self.select_kernel()
            else:
                kernel = self.ap_kernel[ap]
                if not self.has_wgs(kernel) and not matcher.records.live(ap):
                    chosen = self.select_kernel()
                    if chosen is not None:
                        self.ap_kernel[ap] = chosen
                    kernel = chosen
            if not self.has_wgs(kernel):
                continue
            wg = self.channels[kernel[0]][0]
            if matcher.fits(wg, ap):
                slot = matcher.slot(ap)
                if self.dispatch(wg, ap, cycle) is not None:
                    matcher.records.live(ap)[wg.id] = slot
                    issued += 1
                    self.last_ap = ap
        return issued > 0, False, issued > 0, waiting


class GpgpuSimConcurrentSelector(GpgpuSimSelector):
    """G4: ``-gpgpu_concurrent_kernel_sm 1`` (``selection = "gpgpusim_concurrent"``)."""

    concurrent = True
