"""The dispatcher's ports as a bench sees them, and its protocol checker (no model).

:func:`input_ports` and :func:`output_ports` name every port (dotted: ``wg_in.0.payload``,
``dispatch.valid``), :func:`pack` and :func:`unpack` convert a payload to and from the integer
a port carries; :class:`ProtocolChecker` checks the rules every dispatcher must keep, from the
ports alone, and :class:`RandomDriver` drives random stimulus with back-pressure for it.
Used by the model comparison of ``tb/dispatch_bench.py`` (which re-exports these names) under
cocotb (``tb/test_dispatch.py``) and Amaranth's simulator (``tb/dispatch_amaranth.py``).
"""

import random
from collections import defaultdict, deque
from enum import Enum

from amaranth.hdl import Shape, ShapeCastable
from amaranth.lib import data

from hw.dispatch.params import ConfigAddress, DispatcherParams, ceil_div

__all__ = ["ProtocolChecker", "RandomDriver", "input_ports", "output_ports", "pack", "unpack"]


class Fields(dict):
    """A payload's fields, read as attributes or items (``beat.tag``, ``beat["waves"][q]``):
    what :class:`amaranth.lib.data.Const` gives for the same bits, as plain Python values."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _Codec:
    """Packs and unpacks one layout with shifts and masks computed once.

    ``layout.const(value)`` and ``data.Const(layout, bits)`` re-derive every field's shape and
    offset on each call; in the benches that was most of the Python time per clock (about two
    thirds of a cocotb run's profiled Python). Same values, checked against them for every port of
    several shapes by tests/test_dispatch_payloads.py.
    """

    def __init__(self, layout: data.Layout):
        self.fields = []                    # (key, offset, width, mask, signed, decode)
        for key, field in layout:
            shape = field.shape
            if isinstance(shape, data.Layout):
                decode = _codec(shape)
            elif isinstance(shape, ShapeCastable):
                decode = shape.from_bits
            else:
                decode = None
            cast = Shape.cast(shape)
            self.fields.append((key, field.offset, cast.width, (1 << cast.width) - 1,
                                cast.signed, decode))
        self.array = isinstance(layout, data.ArrayLayout)

    def pack(self, value) -> int:
        bits = 0
        for key, offset, _, mask, _, decode in self.fields:
            if (key >= len(value)) if self.array else (key not in value):
                continue
            item = value[key]
            if isinstance(decode, _Codec):
                item = decode.pack(item)
            elif isinstance(item, Enum):
                item = item.value
            bits |= (int(item) & mask) << offset
        return bits

    def unpack(self, bits: int):
        values = [] if self.array else Fields()
        for key, offset, width, mask, signed, decode in self.fields:
            item = (bits >> offset) & mask
            if isinstance(decode, _Codec):
                item = decode.unpack(item)
            elif decode is not None:
                item = decode(item)             # from the raw bits, as data.Const does
            elif signed and item >> (width - 1):
                item -= 1 << width
            if self.array:
                values.append(item)
            else:
                values[key] = item
        return values


def _codec(layout: data.Layout) -> _Codec:
    # Kept on the layout itself (the DispatcherParams layouts are built once per params).
    codec = layout.__dict__.get("_bench_codec")
    if codec is None:
        codec = layout.__dict__["_bench_codec"] = _Codec(layout)
    return codec


def pack(layout: data.Layout, value: dict) -> int:
    """The integer a port of ``layout`` carries for the field values ``value`` (missing fields
    0, each value truncated to its field as ``layout.const`` does)."""
    return _codec(layout).pack(value)


def unpack(layout: data.Layout, value: int) -> Fields:
    """The fields of an integer read from a port of ``layout``: a :class:`Fields` (arrays as
    lists, enumerations as their members), as ``data.Const(layout, value)`` reads them."""
    return _codec(layout).unpack(value)


def input_ports(params: DispatcherParams) -> list[str]:
    names = [f"wg_in.{c}.{f}" for c in range(params.channels) for f in ("valid", "payload")]
    return names + ["release.valid", "release.payload", "config.valid", "config.payload",
                    "dispatch.ready"]


def output_ports(params: DispatcherParams) -> list[str]:
    names = [f"wg_in.{c}.ready" for c in range(params.channels)]
    return names + ["release.ready", "config.ready", "dispatch.valid", "dispatch.payload",
                    "running", "stale_abort", "abort_ap", "split", "reject", "error"]


class ProtocolChecker:
    """Rules every dispatcher must keep, checked without the model.

    It follows the ports of every clock (the inputs driven and the outputs read) and keeps
    its own shadow of the GPU: which WGs were accepted on each channel and not refused, the
    free blocks of every status register, the free wave slots, the tags in flight. Violations
    are collected in :attr:`violations` (the first few with their clock).

    Checked: the dispatch-out stream holds ``valid`` and its payload until taken; a
    dispatched WG (checked in the clock its beat first appears) is its channel's oldest
    admitted WG not yet dispatched (a part: the next
    part of a head that was split, one wave); its waves per PEU add up to its waves and fit
    the free slots; every block it gets is free and within the resource; its tag is not in
    flight; at most one WG a clock (one beat); a release that names a tag not in flight or
    another WG is ignored (the shadow keeps the record) and ``error`` is high from the next
    clock on (low before any); a refused WG cannot fit an idle AP or has no waves, an admitted
    one has waves and fits (as a whole, or as single waves when splitting is on). With
    in-order barriers built: a WG whose descriptor had ``barrier`` set is dispatched (whole;
    a split WG's parts carry no barrier, as in the model) only when no WG of its channel was
    running in the clock that decided it (every WG of the channel dispatched before has been
    released, the release taken in an earlier clock).

    Progress (computed from the ports alone, not from the model): when every channel's head
    (a split head's next part) fits as a whole an AP that has held nothing for
    :attr:`settle` clocks (so every circuit's view of it has caught up: what a circuit sees
    of a free resource, ``seen_when_free``), a record tag is free and ``dispatch`` is not
    held, the dispatcher owes a dispatch: a new beat (or a stale abort or a split) must
    appear within :attr:`slack` + 1 clocks (one clock for the one-clock decision on an exact
    view, the pipeline's depth and the view's latency more otherwise). Every head, not only
    one: strict priority and the MIAOW-like buffer may wait for a head that does not fit. A
    barrier head is not owed while its channel runs a WG or released one in this clock or the
    last.
    :attr:`violation_count` counts every violation (:attr:`violations` keeps the first 20);
    :attr:`longest_wait` is the longest run of owed clocks seen.
    """

    def __init__(self, params: DispatcherParams):
        self.params = params
        p = params
        self.clock = 0
        self.violations: list[str] = []
        self.queues = defaultdict(deque)       # channel -> admitted WG descriptors
        self.unresolved: dict[int, dict] = {}  # channel -> the beat accepted last clock
        self.split: dict[int, int] = {}        # channel -> parts dispatched of its split head
        self.free = {name: [(1 << n) - 1] * p.instances[name] for name, n in p.sizes.items()}
        self.slots = [[p.gpu.wave_slots] * p.peus for _ in range(p.aps)]
        self.flight: dict[int, tuple] = {}     # tag -> (wg, ap, waves, blocks)
        self.held = None
        self.config = {"threshold": p.policy.split_threshold,
                       "selection": p.policy.selection}
        self.dispatched = 0
        self.violation_count = 0
        policy = p.policy
        # Owed from the clock after the state that owes it; the pipelined decision matches,
        # chooses and then takes k clocks of flight. A view sees an AP as it is after its
        # latency (and, for embodiment 7's shared unit, a refresh period) and the match.
        self.slack = policy.decision_pipeline + 1 if policy.decision_pipeline else 0
        refresh = len(p.schedule.periods) if p.shared else 0
        self.settle = policy.circuit_latency + refresh + policy.decision_pipeline + 2
        self.idle_since = [0] * p.aps           # the clock each AP last held nothing
        self.owed = 0                           # clocks a dispatch has been owed
        self.started = None                     # the clock START was accepted
        self.touched: set[int] = set()          # APs dispatched to or released this clock
        self.longest_wait = 0
        self.error_due = 0                     # a bad release was sent: error is sticky
        self.bad_releases = 0
        # In-order barriers: each tag's channel, each channel's running WGs, its releases
        # taken in the last clock (until this clock's are: the dispatcher sees a release a
        # clock later) and the clock of its last release.
        self.channel_of: dict[int, int] = {}
        self.running = [0] * p.channels
        self.released = [0] * p.channels
        self.last_release = [-2] * p.channels

    def _violation(self, text: str) -> None:
        self.violation_count += 1
        if len(self.violations) < 20:
            self.violations.append(f"clock {self.clock}: {text}")

    def _fits_idle(self, wg: dict) -> bool:
        p = self.params
        Q, slots = p.peus, p.gpu.wave_slots
        seen = {name: p.seen_when_free(name) for name in p.sizes}
        busiest = ceil_div(wg["waves"], Q)
        whole = (busiest <= slots and busiest * wg["vgpr"] <= seen["vgpr"]
                 and busiest * wg["sgpr"] <= seen["sgpr"] and wg["lds"] <= seen["lds"])
        splitting = self.config["threshold"] > 0 and self.config["selection"] == "multi"
        # (A WG with an in-order barrier is never split: its parts would carry no barrier.)
        parts = (splitting and wg["independent"] and not wg["barrier"] and wg["waves"] >= 2
                 and busiest <= slots
                 and wg["vgpr"] <= seen["vgpr"] and wg["sgpr"] <= seen["sgpr"]
                 and ceil_div(wg["lds"], wg["waves"]) <= seen["lds"])
        return wg["waves"] >= 1 and (whole or parts)     # no waves: refused

    def step(self, driven: dict[str, int], values: dict[str, int]) -> None:
        p = self.params
        if values["error"] != self.error_due:
            self._violation("error is high, but no release was refused" if values["error"]
                            else "error is low after a release of a tag not in flight or of "
                                 "another WG")
        self._configure(driven, values)
        dispatched_before = self.dispatched
        # The beats of the last clock are admitted or refused now.
        for c, wg in self.unresolved.items():
            refused = values["reject"] >> c & 1
            if refused == self._fits_idle(wg):
                self._violation(f"channel {c}: WG {wg['wg']} was "
                                f"{'refused' if refused else 'admitted'} but "
                                f"{'fits' if refused else 'cannot fit'} an idle AP")
            if not refused:
                self.queues[c].append(wg)
        self.unresolved = {}
        # A beat is checked when it first appears (its blocks were taken in the clock that
        # decided it); a split announced now split the head left after that dispatch (the
        # pipelined decision can dispatch a channel's head and split the next one at once).
        self._dispatch_out(values)
        for c in range(p.channels):
            if values["split"] >> c & 1:
                queue = self.queues[c]
                if not queue or c in self.split or not queue[0]["independent"] or \
                        queue[0]["barrier"] or queue[0]["waves"] < 2:
                    self._violation(f"channel {c}: split of a head that cannot be split")
                else:
                    self.split[c] = 0
        for c in range(p.channels):
            if driven[f"wg_in.{c}.valid"] and values[f"wg_in.{c}.ready"]:
                self.unresolved[c] = unpack(p.workgroup_layout, driven[f"wg_in.{c}.payload"])
                self.unresolved[c] = {name: self.unresolved[c].get(name, 0)
                                      for name in ("wg", "priority", "waves", "vgpr", "sgpr",
                                                   "lds", "independent", "barrier")}
        self.released = [0] * p.channels
        if driven["release.valid"] and values["release.ready"]:
            self._release(unpack(p.release_layout, driven["release.payload"]))
        self._progress(values, dispatched_before)
        self.clock += 1

    def _fits_whole(self, waves: int, vgpr: int, sgpr: int, lds: int) -> bool:
        p = self.params
        busiest = ceil_div(waves, p.peus)
        return (busiest <= p.gpu.wave_slots and busiest * vgpr <= p.seen_when_free("vgpr")
                and busiest * sgpr <= p.seen_when_free("sgpr")
                and lds <= p.seen_when_free("lds"))

    def _owes_dispatch(self) -> bool:
        """Every head fits an AP idle for :attr:`settle` clocks, and a tag is free."""
        p = self.params
        heads = [(c, queue[0]) for c, queue in self.queues.items() if queue]
        if not heads or len(self.flight) >= p.records:
            return False
        busy = {ap for _, ap, _, _ in self.flight.values()}
        if all(ap in busy or self.clock - self.idle_since[ap] < self.settle
               for ap in range(p.aps)):
            return False
        for c, wg in heads:
            if wg["barrier"] and c not in self.split and (
                    self.running[c] or self.clock - self.last_release[c] <= 1):
                return False                    # held by its barrier
            if c in self.split:
                fits = self._fits_whole(1, wg["vgpr"], wg["sgpr"],
                                        ceil_div(wg["lds"], wg["waves"]))
            else:
                fits = self._fits_whole(wg["waves"], wg["vgpr"], wg["sgpr"], wg["lds"])
            if not fits:
                return False
        return True

    def _progress(self, values, dispatched_before: int) -> None:
        """The progress rule (see the class): ``owed`` counts the clocks since the state of
        a clock owed a dispatch, reset by a new beat, a stale abort or a split."""
        decided = (self.dispatched != dispatched_before or values["stale_abort"]
                   or values["split"])
        if decided:
            self.owed = 0
        elif self.owed:
            missed = self.owed                  # clocks without a dispatch since it was owed
            self.longest_wait = max(self.longest_wait, missed)
            if missed == self.slack + 1:
                self._violation(f"no dispatch for {missed} clocks while every head fits an "
                                f"idle AP and dispatch is not held (allowed: {self.slack})")
            self.owed += 1
        # An AP dispatched to or released in this clock (the RTL sees a release from the
        # next clock on) is idle from the next clock at the earliest.
        for ap in self.touched | {ap for _, ap, _, _ in self.flight.values()}:
            self.idle_since[ap] = self.clock + 1
        self.touched = set()
        if self.started is None or self.clock - self.started < self.settle or \
                self.held is not None or not self._owes_dispatch():
            self.owed = 0
        elif not self.owed:
            self.owed = 1

    def _configure(self, driven, values) -> None:
        if not (driven["config.valid"] and values["config.ready"]):
            return
        write = unpack(self.params.config_layout, driven["config.payload"])
        address = ConfigAddress(write.address)
        if address == ConfigAddress.START and self.started is None:
            self.started = self.clock
        elif address == ConfigAddress.SPLIT_THRESHOLD:
            self.config["threshold"] = write.data
        elif address == ConfigAddress.SELECTION:
            self.config["selection"] = ("multi", "strict", "blocking_buffer",
                                      "rr_first_fit")[write.data]

    def _dispatch_out(self, values) -> None:
        p = self.params
        valid, ready = values["dispatch.valid"], self._ready
        payload = values["dispatch.payload"]
        new = self.held is None
        if not new and (not valid or payload != self.held):
            self._violation("dispatch-out dropped or changed a beat that was not taken")
        self.held = payload if valid and not ready else None
        if not (valid and new):
            return
        beat = unpack(p.dispatch_layout, payload)
        c = beat.channel
        queue = self.queues[c]
        if c >= p.channels or not queue:
            self._violation(f"dispatch of a WG on channel {c}, which has none waiting")
            return
        wg = queue[0]
        part = c in self.split
        if beat.wg != wg["wg"] or bool(beat.split) != part:
            self._violation(f"channel {c}: dispatched WG {beat.wg} (split {beat.split}), but "
                            f"its oldest waiting WG is {wg['wg']} (split {int(part)})")
            return
        waves = wg["waves"] if not part else 1
        lds = wg["lds"] if not part else ceil_div(wg["lds"], wg["waves"])
        if wg["barrier"] and not part and self.running[c] + self.released[c]:
            # (The beat was decided in the last clock: the releases taken then were not seen.)
            self._violation(f"channel {c}: barrier WG {wg['wg']} dispatched while "
                            f"{self.running[c] + self.released[c]} WG(s) of its channel "
                            f"ran")
        if part and beat.part != self.split[c]:
            self._violation(f"channel {c}: part {beat.part} of WG {wg['wg']}, expected part "
                            f"{self.split[c]}")
        per_peu = list(beat.waves)
        if sum(per_peu) != waves:
            self._violation(f"WG {wg['wg']}: waves per PEU {per_peu} do not add up to {waves}")
        if beat.tag in self.flight or beat.tag >= p.records:
            self._violation(f"tag {beat.tag} is already in flight")
        ap = beat.ap
        blocks = []
        for q in range(p.peus):
            if per_peu[q] > self.slots[ap][q]:
                self._violation(f"AP {ap} PEU {q}: {per_peu[q]} waves, {self.slots[ap][q]} "
                                f"slots free")
            for name, per in (("vgpr", wg["vgpr"]), ("sgpr", wg["sgpr"])):
                blocks.append((name, ap * p.peus + q, beat[f"{name}_start"][q],
                               per_peu[q] * per))
        blocks.append(("lds", ap, beat.lds_start, lds))
        for name, index, start, length in blocks:
            mask = ((1 << length) - 1) << start
            if start + length > p.sizes[name] and length:
                self._violation(f"{name}[{index}]: blocks {start}..{start + length - 1} beyond "
                                f"{p.sizes[name]}")
            elif self.free[name][index] & mask != mask:
                self._violation(f"{name}[{index}]: blocks {start}..{start + length - 1} "
                                f"allocated while some are in use")
            self.free[name][index] &= ~mask
        for q in range(p.peus):
            self.slots[ap][q] -= per_peu[q]
        self.flight[beat.tag] = (wg["wg"], ap, per_peu, blocks)
        self.channel_of[beat.tag] = c
        self.running[c] += 1
        self.touched.add(ap)
        self.dispatched += 1
        if part:
            self.split[c] += 1
            if self.split[c] == wg["waves"]:
                del self.split[c]
                queue.popleft()
        else:
            queue.popleft()

    def _release(self, beat) -> None:
        held = self.flight.get(beat.tag)
        if held is None or held[0] != beat.wg:
            # Not in flight, or another WG's tag: the dispatcher must raise error from the
            # next clock on and change nothing (the shadow keeps the record).
            self.error_due = 1
            self.bad_releases += 1
            return
        del self.flight[beat.tag]
        c = self.channel_of.pop(beat.tag)
        self.running[c] -= 1
        self.released[c] += 1
        self.last_release[c] = self.clock
        _, ap, per_peu, blocks = held
        self.touched.add(ap)
        for name, index, start, length in blocks:
            mask = ((1 << length) - 1) << start
            if self.free[name][index] & mask:
                self._violation(f"{name}[{index}]: released blocks that were free")
            self.free[name][index] |= mask
        for q, count in enumerate(per_peu):
            self.slots[ap][q] += count

    _ready = 1

    def ready(self, value: int) -> None:
        """The dispatch-out ``ready`` driven in this clock (before :meth:`step`)."""
        self._ready = value


class RandomDriver:
    """Random stimulus with back-pressure for the protocol checker alone: random WGs on every
    channel (some too large, some independent), ``dispatch.ready`` low at random, releases
    of random in-flight WGs after random delays, one per clock. Runs for ``clocks`` clocks
    after ``START`` with the dispatcher's reset configuration (or ``writes``)."""

    def __init__(self, params: DispatcherParams, seed: int, clocks: int, *, writes=()):
        self.params = params
        self.rng = random.Random(seed)
        self.clocks = clocks
        self.checker = ProtocolChecker(params)
        self.writes = deque(writes)
        self.started = False
        self.clock = 0
        self.flight: dict[int, tuple[int, int]] = {}    # tag -> (wg, release clock)
        self.next_id = 0
        self.offer: dict[int, int] = {}
        self.done = False
        self.dispatches = 0

    def _wg(self) -> int:
        p, rng = self.params, self.rng
        gpu = p.gpu
        waves = rng.randint(1, p.max_waves + (1 if rng.random() < 0.05 else 0))
        busiest = ceil_div(waves, p.peus)
        fields = {"wg": self.next_id % (1 << p.id_bits),
                  "priority": rng.randrange(gpu.priorities), "waves": waves,
                  "vgpr": rng.randint(0, max(1, gpu.vgpr // busiest) + 1),
                  "sgpr": rng.randint(0, max(1, gpu.sgpr // busiest)),
                  "lds": rng.randint(0, gpu.lds + 1), "independent": int(rng.random() < 0.3)}
        if p.barriers:
            fields["barrier"] = int(rng.random() < 0.15)
        self.next_id += 1
        return pack(p.workgroup_layout, fields)

    def inputs(self, registered: dict[str, int]) -> dict[str, int]:
        p, rng = self.params, self.rng
        values = dict.fromkeys(input_ports(p), 0)
        if self.writes:
            address, index, value = self.writes[0]
            values["config.valid"] = 1
            values["config.payload"] = pack(p.config_layout, {"address": address,
                                                              "index": index, "data": value})
        elif not self.started:
            values["config.valid"] = 1
            values["config.payload"] = pack(p.config_layout, {
                "address": ConfigAddress.START, "index": 0, "data": 0})
        for c in range(p.channels):
            if c not in self.offer and rng.random() < 0.5:
                self.offer[c] = self._wg()
            if c in self.offer:
                values[f"wg_in.{c}.valid"] = 1
                values[f"wg_in.{c}.payload"] = self.offer[c]
        due = [tag for tag, (_, at) in self.flight.items() if at <= self.clock]
        if due:
            tag = rng.choice(due)
            values["release.valid"] = 1
            values["release.payload"] = pack(p.release_layout, {"tag": tag,
                                                                "wg": self.flight[tag][0]})
        values["dispatch.ready"] = int(rng.random() < 0.7)
        self.checker.ready(values["dispatch.ready"])
        self.driven = values
        return values

    def outputs(self, values: dict[str, int]) -> None:
        p = self.params
        self.checker.step(self.driven, values)
        if self.driven["config.valid"] and values["config.ready"]:
            if self.writes:
                self.writes.popleft()
            else:
                self.started = True
        for c in list(self.offer):
            if values[f"wg_in.{c}.ready"]:
                del self.offer[c]
        if self.driven["release.valid"]:
            del self.flight[unpack(p.release_layout, self.driven["release.payload"]).tag]
        if values["dispatch.valid"] and self.driven["dispatch.ready"]:
            beat = unpack(p.dispatch_layout, values["dispatch.payload"])
            self.flight[beat.tag] = (beat.wg, self.clock + self.rng.randint(1, 40))
            self.dispatches += 1
        if values["error"]:
            # This driver releases only WGs in flight: error is a dispatcher's fault here.
            self.checker._violation("the dispatcher flagged a release error")
        self.clock += 1
        self.done = self.clock >= self.clocks

