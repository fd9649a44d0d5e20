"""The dispatcher's co-simulation against the model and its protocol checker, simulator-free.

Pure Python, clock by clock: :class:`CosimDriver` drives a :class:`hw.dispatch.Dispatcher` with
the arrivals and releases of a model run (:func:`model_run`) and compares, in every clock,
whether a WG was dispatched, which one, to which AP, its waves per PEU and every start address,
the stale aborts and the splits. :class:`ProtocolChecker` (``tb/dispatch_protocol.py``, with
the port names and payload packing) checks the ports against rules that
do not use the model: stream rules, a dispatch only of a WG that arrived (in its channel's
order) and whose blocks are free in a shadow of the status registers, at most one WG a clock,
a release of a tag not in flight or of another WG raises ``error`` and changes nothing
(``error`` is low until one). With ``configure=False`` the driver writes only ``START``, so
the run compares every register's reset value with the model; ``bad_releases`` sends that
many such releases during the run; a run with back-pressure (``ModelRun.not_ready``) holds
``dispatch.ready`` low where the model held its decision too. ``tb/test_dispatch.py`` runs
them under cocotb (Verilator, Icarus); ``tests/test_dispatch_rtl_sim.py`` under Amaranth's
simulator (``tb/dispatch_amaranth.py``).

One clock of a bench: read the registered outputs (``dispatch.valid``, ``dispatch.payload``:
they hold the decision of the previous clock and do not depend on this clock's inputs),
``inputs = driver.inputs(registered)`` (port name to value), apply, let the logic settle, read
every output into a dict, ``driver.outputs(values)``, then the clock edge. A WG that runs for
one cycle is released in the clock its dispatch appears, so the driver learns its record tag
from the registered output before it drives the release. Port
names are the component's, dotted: ``wg_in.0.payload``, ``dispatch.valid``, ``split``; a
payload is an integer packed as its layout.

Timing of the stimulus (docs/dispatch_rtl.md): the model's cycle ``t`` is the clock ``t + 1``
after the one in which ``START`` was accepted. A WG arriving in cycle ``a`` is offered from
clock ``a - 1`` (it is then in the FIFO in clock ``a``); a release of cycle ``r`` is sent in
clock ``r - 1``; the decisions of cycle ``t`` appear on the outputs in clock ``t + 1``. WGs
the model refuses are sent, and must be refused, before ``START``: they never reach a FIFO, so
their place in the stream does not matter, and the admitted WGs then keep their clocks.
"""

import random
from collections import defaultdict, deque
from dataclasses import dataclass, field

from amaranth.hdl import Shape

from hw.dispatch.params import ConfigAddress, DispatcherParams, config_writes, history_note
from model.dispatch import DispatchSimulator
from model.dispatch.config import (
    GpuConfig,
    PolicyConfig,
    WorkGroup,
    with_policy,
)
from tb.dispatch_coverage import behaviours, instrument
from tb.dispatch_protocol import (
    ProtocolChecker,
    RandomDriver,
    input_ports,
    output_ports,
    pack,
    unpack,
)

__all__ = ["CosimDriver", "ModelRun", "ProtocolChecker", "RandomDriver", "back_pressure",
           "input_ports", "model_run", "output_ports", "pack", "unpack"]


@dataclass
class ModelRun:
    """One model run prepared for co-simulation: what it was run with, and its event log."""

    label: str
    gpu: GpuConfig
    policy: PolicyConfig
    channels: tuple
    workload: list
    cycles: int
    events: list
    result: dict
    wave_powers: list
    notes: list = field(default_factory=list)
    #: The cycles in which the bench holds ``dispatch.ready`` low, and the cycles the model
    #: held for it (a decision presented and not taken: nothing decided).
    not_ready: frozenset = frozenset()
    held: frozenset = frozenset()
    #: The behaviours the run exercised and how often (``tb/dispatch_coverage.py``).
    coverage: dict = field(default_factory=dict)


def back_pressure(cycles: int, rate: float, seed) -> frozenset:
    """The cycles (of ``0 .. cycles``) in which ``dispatch.ready`` is low: each with
    probability ``rate``, in bursts of 1 to 4 cycles, drawn from ``seed``."""
    rng, low, cycle = random.Random(f"back-pressure/{seed}"), set(), 0
    while cycle <= cycles and rate > 0:
        if rng.random() < rate:
            burst = rng.randint(1, 4)
            low.update(range(cycle, cycle + burst))
            cycle += burst
        cycle += 1
    return frozenset(low)


def model_run(label: str, gpu: GpuConfig, policy: PolicyConfig, workload, channels=(),
              cycles: int = 2000, execution: str = "fixed", not_ready=frozenset()) -> ModelRun:
    """Run the model as the RTL runs: one release per clock (``release_limit = 1``) and
    embodiment 10's exponential average where the policy reads a history (the RTL keeps
    no sliding window); ``notes`` says what was changed. ``not_ready``: the cycles in which
    the consumer holds ``dispatch.ready`` low (:func:`back_pressure`); the model holds its
    decision in the same cycles as the RTL (``DispatchSimulator(dispatch_ready=...)``)."""
    notes, changes = [], {}
    if policy.release_limit != 1:
        changes["release_limit"] = 1
        notes.append("release_limit = 1 (the RTL takes one release per clock)")
    if history_note(policy):
        changes["history"] = "ema"
        notes.append(history_note(policy))
    policy = with_policy(policy, **changes) if changes else policy
    events: list = []
    ready = None
    if not_ready:
        notes.append(f"dispatch.ready low in {len(not_ready)} cycles")

        def ready(cycle):
            return cycle not in not_ready
    simulator = DispatchSimulator(gpu, policy, workload, channels=tuple(channels),
                                  cycles=cycles, events=events, execution=execution,
                                  dispatch_ready=ready)
    hits = instrument(simulator)
    result = simulator.run()
    coverage = behaviours(hits, events, policy, simulator.counters.flushed)
    return ModelRun(label, gpu, policy, tuple(channels), simulator.workload, cycles, events,
                    result, list(simulator.wave_power), notes, frozenset(not_ready),
                    frozenset(simulator.held_cycles), dict(coverage))


class _Expected:
    """The model's event log by cycle."""

    def __init__(self, run: ModelRun):
        self.dispatch: dict[int, tuple] = {}
        self.abort: dict[int, int] = {}
        self.split: dict[int, set] = defaultdict(set)
        self.release: dict[int, int] = {}
        self.rejected: set[int] = set()
        self.part: dict[int, tuple[int, int]] = {}      # sub-WG id -> (parent id, index)
        parts_seen: dict[int, int] = defaultdict(int)
        for cycle, kind, wg, ap, waves, starts, _ in run.events:
            if kind == "reject":
                self.rejected.add(wg.id)
            elif kind == "split":
                self.part[wg.id] = (wg.parent, parts_seen[wg.parent])
                parts_seen[wg.parent] += 1
                self.split[cycle].add(wg.channel)
            elif kind == "dispatch":
                self.dispatch[cycle] = (wg, ap, tuple(waves), starts)
            elif kind == "stale-abort":
                self.abort[cycle] = ap
            elif kind == "release":
                if cycle in self.release:
                    raise ValueError(f"two releases in cycle {cycle}: the model must run with "
                                     f"release_limit = 1")
                self.release[cycle] = wg.id
        self.admitted: dict[int, deque] = defaultdict(deque)
        self.refused: dict[int, deque] = defaultdict(deque)
        for wg in run.workload:
            (self.refused if wg.id in self.rejected else self.admitted)[wg.channel].append(wg)


def _descriptor(params: DispatcherParams, wg: WorkGroup) -> int:
    """A WG as the workgroup-in payload; needs beyond a field's range are clamped to its
    largest value, which the dispatcher refuses just as it would the true value."""
    layout = params.workgroup_layout
    fields = {}
    for name, value in (("wg", wg.id % (1 << params.id_bits)), ("priority", wg.priority),
                        ("waves", wg.waves), ("vgpr", wg.vgpr), ("sgpr", wg.sgpr),
                        ("lds", wg.lds), ("independent", int(wg.independent))):
        width = layout[name].width
        fields[name] = min(value, (1 << width) - 1)
    if params.barriers:
        fields["barrier"] = int(wg.barrier)
    return pack(layout, fields)


#: Clocks a phase before the run (configuration writes, refused WGs, START) may wait on one
#: signal before the run fails (the longest legitimate wait, START behind the free-block and
#: score pipelines, is a few tens of clocks).
STALL_CLOCKS = 1000


class CosimDriver:
    """Drives one model run into the dispatcher and compares every clock (see the module).

    After the run, :attr:`summary` has ``cycles``, ``dispatches`` (model dispatches
    compared), ``mismatches`` (clocks that differ), ``first`` (the first difference, as text)
    and the counts of stale aborts, splits, rejects and releases compared.
    """

    def __init__(self, params: DispatcherParams, run: ModelRun, *, check_protocol=True,
                 configure=True, bad_releases: int = 0):
        self.params, self.run = params, run
        if not params.barriers and any(wg.barrier for wg in run.workload):
            raise ValueError(f"{run.label}: the workload has in-order barriers, but the "
                             f"dispatcher was built without them (barriers = True builds "
                             f"them)")
        self.expected = _Expected(run)
        self.checker = ProtocolChecker(params) if check_protocol else None
        self.writes = deque(config_writes(params, run.policy, run.wave_powers, run.gpu)
                            if configure else ())
        self.refused = {c: deque(q) for c, q in self.expected.refused.items()}
        self.pending = {c: deque(q) for c, q in self.expected.admitted.items()}
        self.phase = "config" if self.writes else "rejects"
        self.bad_left = bad_releases        # bad releases still to send
        self.bad_now = False                # one is driven in this clock
        self.error_due = 0                  # error must be high: a bad release was sent
        self.clock = 0
        self.cycle = None                   # the model's cycle of this clock, once running
        self.accepted_at: dict[int, int] = {}       # WG id -> cycle its beat was accepted
        self.tags: dict[int, int] = {}              # model WG id -> RTL record tag
        self.released: dict[int, int] = {}          # tag -> RTL WG id of its last release
        self.offered: dict = {}
        self.expect_reject = 0
        self.summary = {"label": run.label, "cycles": 0, "clocks": 0, "dispatches": 0,
                        "mismatches": 0, "first": None, "stale_aborts": 0, "splits": 0,
                        "rejects": 0, "releases": 0, "held": 0, "bad_releases": 0,
                        "coverage": dict(run.coverage),
                        "notes": list(run.notes), "stall": None}
        self.done = False
        self.waited = 0                     # clocks since the last step of this phase
        self.waiting_for = ""               # the signal the phase waits on (for the bound)

    # -- one clock ---------------------------------------------------------------------------

    def inputs(self, registered: dict[str, int]) -> dict[str, int]:
        p = self.params
        values = dict.fromkeys(input_ports(p), 0)
        values["dispatch.ready"] = int(self.phase != "run" or self.cycle not in
                                       self.run.not_ready)
        if self.checker is not None:
            self.checker.ready(values["dispatch.ready"])
        if self.phase == "run" and self.cycle >= 1 and registered["dispatch.valid"]:
            expected = self.expected.dispatch.get(self.cycle - 1)
            if expected is not None:
                self.tags[expected[0].id] = unpack(p.dispatch_layout,
                                                   registered["dispatch.payload"]).tag
        self.offered = {}
        self.bad_now = False
        if self.phase == "config":
            address, index, value = self.writes[0]
            values["config.valid"] = 1
            values["config.payload"] = pack(p.config_layout, {"address": address,
                                                              "index": index, "data": value})
        elif self.phase == "rejects":
            for c, queue in self.refused.items():
                if queue:
                    values[f"wg_in.{c}.valid"] = 1
                    values[f"wg_in.{c}.payload"] = _descriptor(p, queue[0])
                    self.offered[c] = queue[0]
        elif self.phase in ("start", "run"):
            if self.phase == "start":
                values["config.valid"] = 1
                values["config.payload"] = pack(p.config_layout, {
                    "address": ConfigAddress.START, "index": 0, "data": 0})
            now = -1 if self.cycle is None else self.cycle
            for c, queue in self.pending.items():
                if queue and queue[0].arrival <= now + 1:
                    values[f"wg_in.{c}.valid"] = 1
                    values[f"wg_in.{c}.payload"] = _descriptor(p, queue[0])
                    self.offered[c] = queue[0]
            wg_id = self.expected.release.get(now + 1)
            if wg_id is not None and wg_id in self.tags:
                tag = self.tags.pop(wg_id)
                self.released[tag] = self._rtl_id(wg_id)
                values["release.valid"] = 1
                values["release.payload"] = pack(p.release_layout, {
                    "tag": tag, "wg": self._rtl_id(wg_id)})
                self.summary["releases"] += 1
            elif wg_id is not None:
                self.summary["notes"].append(f"cycle {now + 1}: WG {wg_id}'s release not sent "
                                             f"(the RTL never dispatched it)")
            if self.bad_left and not values["release.valid"] and now % 7 == 3 and self.tags:
                values["release.valid"] = 1
                values["release.payload"] = self._bad_release()
        self.driven = values
        return values

    def outputs(self, values: dict[str, int]) -> None:
        if self.checker is not None:
            self.checker.step(self.driven, values)
        rejected_now = values["reject"]
        if self.phase == "rejects" or self.expect_reject:
            if rejected_now != self.expect_reject:
                self._mismatch(f"reject strobes {rejected_now:#x}, expected "
                               f"{self.expect_reject:#x} (the model refuses exactly the WGs "
                               f"sent before START)")
            self.summary["rejects"] += bin(rejected_now & self.expect_reject).count("1")
        elif rejected_now:
            self._mismatch(f"reject strobes {rejected_now:#x} for WGs the model admitted")
        self.expect_reject = 0
        for c, wg in self.offered.items():
            if values[f"wg_in.{c}.ready"]:
                if self.phase == "rejects":
                    self.refused[c].popleft()
                    self.expect_reject |= 1 << c
                else:
                    self.pending[c].popleft()
                    self.accepted_at[wg.id] = -1 if self.cycle is None else self.cycle
        if values["error"] != self.error_due:
            self._mismatch("the dispatcher flagged a release error" if values["error"] else
                           "error is low after a release of a tag not in flight or of "
                           "another WG")
        self.error_due |= self.bad_now
        if self.driven["release.valid"] and not values["release.ready"]:
            self._mismatch("release.ready is low")
        before = (self.phase, len(self.writes), sum(map(len, self.refused.values())))
        if self.phase == "config":
            self.waiting_for = f"config.ready (the write of {self.writes[0][0].name})"
            if values["config.ready"]:
                self.writes.popleft()
                if not self.writes:
                    self.phase = "rejects"
        elif self.phase == "rejects":
            waiting = [c for c in self.offered if not values[f"wg_in.{c}.ready"]]
            self.waiting_for = (", ".join(f"wg_in[{c}].ready (to take refused WG "
                                          f"{self.offered[c].id})" for c in waiting)
                                or "reject")
            if not any(self.refused.values()) and not self.expect_reject:
                self.phase = "start"
        elif self.phase == "start":
            self.waiting_for = "config.ready (START)"
            if values["config.ready"]:
                self.phase, self.cycle = "run", -1
        else:
            self._compare(values)
        # No run can hang: a phase before cycle 0 that makes no step for STALL_CLOCKS clocks
        # fails the run, naming the clock, the phase and the signal it waited on (the run
        # itself ends after its cycles whatever the RTL does).
        after = (self.phase, len(self.writes), sum(map(len, self.refused.values())))
        self.waited = 0 if after != before or self.phase == "run" else self.waited + 1
        if self.waited >= STALL_CLOCKS:
            text = (f"clock {self.clock}, phase '{self.phase}': no progress in {STALL_CLOCKS} "
                    f"clocks, waiting for {self.waiting_for}")
            self.summary["stall"] = f"{self.run.label}: {text}"
            self._mismatch(text)
            self.done = True
        self.clock += 1
        self.summary["clocks"] = self.clock
        if self.cycle is not None:
            self.cycle += 1
            if self.cycle > self.run.cycles:
                self.done = True
                self.summary["cycles"] = self.run.cycles

    def _bad_release(self) -> int:
        """A release the dispatcher must refuse (raise ``error``, change nothing), in turn: an
        in-flight tag with another WG id, and a tag not in flight (see below when every
        record is in flight)."""
        p, in_flight = self.params, sorted(self.tags.items(), key=lambda item: item[1])
        self.bad_left -= 1
        self.bad_now = True
        self.summary["bad_releases"] += 1
        if not self.bad_left % 2:
            # A tag not in flight, named with the WG its record held last (a second release
            # of a WG; a tag never used: WG 0, the record memory's reset): only the in-flight
            # check can refuse it. With every record in flight, a tag beyond the records
            # where the tag field has one; else (a power-of-two record count: tag N would wrap
            # onto tag 0, a good release) the in-flight form below.
            busy = {tag for _, tag in in_flight}
            free = [tag for tag in range(p.records) if tag not in busy]
            if free:
                tag = free[self.bad_left % len(free)]
                return pack(p.release_layout, {"tag": tag, "wg": self.released.get(tag, 0)})
            if p.records < 1 << Shape.cast(p.release_layout.members["tag"]).width:
                return pack(p.release_layout, {"tag": p.records, "wg": 0})
        wg_id, tag = in_flight[self.bad_left % len(in_flight)]
        wrong = (self._rtl_id(wg_id) + 1) % (1 << p.id_bits)
        return pack(p.release_layout, {"tag": tag, "wg": wrong})

    # -- comparison ---------------------------------------------------------------------------

    def _rtl_id(self, wg_id: int) -> int:
        parent = self.expected.part.get(wg_id)
        return (parent[0] if parent else wg_id) % (1 << self.params.id_bits)

    def _mismatch(self, text: str) -> None:
        self.summary["mismatches"] += 1
        if self.summary["first"] is None:
            where = (f"cycle {self.cycle - 1} (clock {self.clock})" if self.cycle is not None
                     and self.cycle >= 0 else f"clock {self.clock} ({self.phase})")
            self.summary["first"] = f"{self.run.label}: {where}: {text}"

    def _compare(self, values: dict[str, int]) -> None:
        """The outputs of this clock are the decisions of cycle ``self.cycle - 1``."""
        p, Q = self.params, self.params.peus
        cycle = self.cycle - 1
        if cycle < 0:
            if values["dispatch.valid"] or values["stale_abort"] or values["split"]:
                self._mismatch("a decision before cycle 0")
            return
        wrong = []
        if cycle in self.run.held:
            # The model held this cycle's decision, as the RTL must: the beat presented
            # before is still presented (the checker checks that it is the same), and
            # nothing else is decided.
            self.summary["held"] += 1
            if not values["dispatch.valid"] or values["stale_abort"] or values["split"]:
                self._mismatch(f"a held cycle: dispatch.valid {values['dispatch.valid']}, "
                               f"stale_abort {values['stale_abort']}, split "
                               f"{values['split']:#x} (the model decided nothing)")
            return
        expected = self.expected.dispatch.get(cycle)
        actual = unpack(p.dispatch_layout, values["dispatch.payload"]) \
            if values["dispatch.valid"] else None
        if expected is not None:
            self.summary["dispatches"] += 1
            wg, ap, waves, (vgpr, sgpr, lds) = expected
            arrived = self.accepted_at.get(wg.parent if wg.parent is not None else wg.id)
            if arrived is None or arrived > cycle - 1:
                wrong.append(f"the bench could not deliver WG {wg.id} in time (accepted in "
                             f"cycle {arrived})")
        if (expected is None) != (actual is None):
            wrong.append(f"dispatch: RTL {'none' if actual is None else self._text(actual)}, "
                         f"model {'none' if expected is None else self._model_text(expected)}")
        elif expected is not None:
            wg, ap, waves, (vgpr, sgpr, lds) = expected
            parent = self.expected.part.get(wg.id)
            fields = {"wg": self._rtl_id(wg.id), "split": int(parent is not None),
                      "part": parent[1] if parent else 0, "channel": wg.channel, "ap": ap,
                      "waves": list(waves)}
            seen = {"wg": actual.wg, "split": actual.split,
                    "part": actual.part if actual.split else 0, "channel": actual.channel,
                    "ap": actual.ap, "waves": list(actual.waves)}
            for q in range(Q):
                for name, starts in (("vgpr", vgpr), ("sgpr", sgpr)):
                    if starts[q] is not None:
                        fields[f"{name}_start_{q}"] = starts[q]
                        seen[f"{name}_start_{q}"] = actual[f"{name}_start"][q]
            if lds is not None:
                fields["lds_start"] = lds
                seen["lds_start"] = actual.lds_start
            differing = {k: (seen[k], v) for k, v in fields.items() if seen[k] != v}
            if differing:
                wrong.append("dispatch differs (RTL, model): " + ", ".join(
                    f"{k} {a} vs {b}" for k, (a, b) in differing.items()))
        abort = self.expected.abort.get(cycle)
        if values["stale_abort"] != (abort is not None) or (
                abort is not None and values["abort_ap"] != abort):
            wrong.append(f"stale abort: RTL {values['stale_abort']} (AP {values['abort_ap']}),"
                         f" model {'none' if abort is None else f'AP {abort}'}")
        elif abort is not None:
            self.summary["stale_aborts"] += 1
        split = sum(1 << c for c in self.expected.split.get(cycle, ()))
        if values["split"] != split:
            wrong.append(f"split channels: RTL {values['split']:#x}, model {split:#x}")
        elif split:
            self.summary["splits"] += 1
        if wrong:
            self._mismatch("; ".join(wrong))

    def _text(self, payload) -> str:
        return (f"WG {payload.wg}{f' part {payload.part}' if payload.split else ''} channel "
                f"{payload.channel} AP {payload.ap} waves {list(payload.waves)}")

    def _model_text(self, expected) -> str:
        wg, ap, waves, _ = expected
        return f"WG {wg.id} channel {wg.channel} AP {ap} waves {list(waves)}"
