"""Formal harnesses: the arbiter's and the free-block pipeline's properties, for SymbiYosys.

Each harness is an Amaranth component whose input ports are the *free* inputs of a proof (a
solver may drive them with any value in any clock) and whose ``elaborate`` instantiates the
block under proof, the environment the block's contract asks for (written as logic or as
``Assume``), and the property as ``Assert`` or ``Cover`` -- all in one style, Amaranth 0.5's
``amaranth.hdl.Assert/Assume/Cover``, which the RTLIL back end writes as ``$check`` cells
that SymbiYosys reads. ``hw.flow.formal_sby`` turns each (harness, property) pair into a
``.sby`` job; only the property named by ``prop`` is asserted in a job, so that each line of
its summary table is one property with its own time.

The environment is the reset state followed by any input sequence: the sync domain's reset is
assumed low (every register starts at its reset value; the free-block circuits' data
registers, which have none, start at any value).

Properties (``ARBITER_PROPERTIES``, ``MAXBLOCK_PROPERTIES``, ``COVERS``) are documented where
they are built; docs/verification.md ("Formal proofs") lists them with their times.
"""

from amaranth.hdl import Assert, Assume, Cat, Cover, Module, Mux, ResetSignal, Shape, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from hw.arbiter import DelayFactorArbiter, WriteOp, _minus_target
from hw.maxblock import ExactMaxFreeBlock
from model.arbiter import expected_weight

__all__ = ["ARBITER_PROPERTIES", "ArbiterHarness", "COVERS", "MAXBLOCK_PROPERTIES",
           "MaxBlockPipelineHarness"]

#: The arbiter's properties (each one job of ``mode prove``; ``response`` is not run, see
#: :class:`ArbiterHarness`).
ARBITER_PROPERTIES = ("grant_payload", "one_grant_per_job", "no_empty_grant", "grant_stable",
                      "response", "deficit_response")
#: The pipelined free-block circuit's property.
MAXBLOCK_PROPERTIES = ("pipeline_answer",)
#: Covers, by harness kind (4 slots for the arbiter): each must be reached.
COVERS = {
    "arbiter": ("grant_slot_0", "grant_slot_1", "grant_slot_2", "grant_slot_3",
                "write_during_turn", "held_grant", "second_job_granted"),
    "maxblock": ("stalled_answer",),
}


def _covers(m: Module, covers: dict, prop: str) -> None:
    """``prop == "cover"``: a ``Cover`` per entry (for ``mode cover``). ``prop ==
    "reach:<name>"``: ``Assert(~condition)`` of that cover alone, which a proof must refute
    -- its counterexample is the cover's trace (how ``make formal`` checks covers with ABC,
    much faster here than smtbmc's cover mode)."""
    if prop == "cover":
        for name, condition in covers.items():
            m.d.comb += Cover(condition, name)
        return
    name = prop.split(":", 1)[1]
    if name not in covers:
        raise ValueError(f"Unknown cover {name!r}; known: {', '.join(covers)}")
    m.d.comb += Assert(~covers[name], f"cover {name} is never reached")


class ArbiterHarness(wiring.Component):
    """:class:`~hw.arbiter.DelayFactorArbiter` with a requester model and one property.

    The requester model is the one docs/arbiter.md describes: slot ``i`` keeps a job count
    ``jobs[i]`` (0..3), which ``arrive[i]`` (a free input) raises by one and a taken grant
    (``grant.valid & grant.ready`` naming slot ``i``) lowers by one, both in the same clock
    if they come together; ``request[i] = jobs[i] >= 1``, ``backlogged[i] = jobs[i] >= 2``.
    An arrival at a full count is assumed away. Writes are free except that their weight is
    at most ``max_weight`` (narrow weights keep the state small). ``grant.ready`` is free,
    except in the ``response`` job, where it is held high.

    Properties (``prop``):

    * ``grant_payload`` -- at most one grant per clock: the grant names one slot that
      exists (``slot < tasks``, ``job_class < classes``), and a clock without a grant shows
      slot and class 0 as the contract says.
    * ``one_grant_per_job`` -- a grant always names a slot with a job not yet granted:
      ``grant.valid -> jobs[grant.slot] >= 1``. Since a job leaves the count only when its
      grant is taken, a second grant for one job would show a count of 0.
    * ``no_empty_grant`` -- a new grant (the grant register loaded at the last edge) names a
      slot that was loaded in the clock of the decision, with the class it was loaded with.
    * ``grant_stable`` -- the grant stream: while ``valid`` and not ``ready``, ``valid`` stays
      high and the payload does not change in the next clock.
    * ``response`` -- bounded response: with ``grant.ready`` high and no write for
      ``settle`` clocks, a loaded slot with a job waiting is granted within
      ``response_clocks`` clocks. Not in ``make formal``: it does not hold for the seed's
      decaying history (a light task starves while heavier ones are backlogged;
      docs/verification.md, "Formal proofs").
    * ``deficit_response`` -- the same for the deficit variant (``decay=False``) on 2 slots
      in 1 class without fraction bits, with the lemmas that make it provable by
      k-induction asserted beside it (:meth:`_deficit_lemmas`, :meth:`_divider_lemmas`,
      and reachable-state facts): ``make formal`` proves it with a bound of 13 clocks.
    * covers (``cover``): a grant to every slot; a write to another slot during a newly
      loaded slot's divider turn, and that slot granted afterwards; a grant held by
      back-pressure; a backlogged slot granted in the clock its previous grant is taken.
    """

    def __init__(self, prop: str, *, tasks=4, classes=2, frac_bits=2, max_weight=3,
                 decay=True, response_clocks=None):
        if prop not in ARBITER_PROPERTIES + ("cover",) and not prop.startswith("reach:"):
            raise ValueError(f"Unknown arbiter property {prop!r}; "
                             f"known: {', '.join(ARBITER_PROPERTIES + ('cover',))}")
        if prop == "deficit_response" and (decay or tasks != 2 or classes != 1 or frac_bits):
            self._MustUse__silence = True       # refused, so never elaborated
            raise ValueError("deficit_response is for the deficit arbiter (decay=False) with "
                             "2 slots, 1 class and no fraction bits")
        self.prop = prop
        self.arbiter = DelayFactorArbiter(tasks, classes, frac_bits=frac_bits, decay=decay)
        self.max_weight = max_weight
        self.tie_backlogged = False     # True: backlogged = request (tests' broken requester)
        # Clocks after the last write by which every loaded slot has had its divider turn
        # and sat out: the turn under way at the write (a write to another slot leaves that
        # slot pending for a second turn), tasks turns, a clock to sit out, one for the
        # registered decision (tests/test_formal_sby.py keeps the bound tight).
        self.settle = (tasks + 1) * self.arbiter.params.divider_clocks + 2
        if prop in ("response", "deficit_response") and response_clocks is None:
            raise ValueError("The response property needs response_clocks (its bound)")
        self.bound = response_clocks
        write = self.arbiter.write.payload
        super().__init__({
            "write_valid": In(1), "write_slot": In(len(write.slot)), "write_op": In(1),
            "write_class": In(len(write.job_class)), "write_weight": In(8),
            "arrive": In(tasks), "grant_ready": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        dut = self.arbiter
        tasks, classes = dut.tasks, dut.classes
        prop = self.prop
        if prop == "deficit_response":
            dut._MustUse__silence = True        # elaborated here, to reach its registers
            m.submodules.dut = dut.elaborate(platform)
        else:
            m.submodules.dut = dut
        m.d.comb += Assume(~ResetSignal())

        # -- writes: free, weights narrow
        m.d.comb += [
            dut.write.valid.eq(self.write_valid),
            dut.write.payload.slot.eq(self.write_slot),
            dut.write.payload.op.eq(self.write_op),
            dut.write.payload.job_class.eq(self.write_class),
            dut.write.payload.weight.eq(self.write_weight),
        ]
        m.d.comb += Assume(self.write_weight <= self.max_weight)
        # What the docstring calls a load: op LOAD, weight > 0, class < classes; else a clear.
        is_load = ((self.write_op == WriteOp.LOAD.value) & (self.write_weight != 0)
                   & (self.write_class < classes))
        loaded = Signal(tasks)
        loaded_class = [Signal(len(dut.grant.payload.job_class), name=f"loaded_class_{i}")
                        for i in range(tasks)]
        for i in range(tasks):
            with m.If(self.write_valid & (self.write_slot == i)):
                m.d.sync += [loaded[i].eq(is_load), loaded_class[i].eq(self.write_class)]

        # -- the grant stream's consumer
        grant = dut.grant
        if prop in ("response", "deficit_response"):
            m.d.comb += Assume(self.grant_ready)
        m.d.comb += grant.ready.eq(self.grant_ready)
        taken = grant.valid & grant.ready

        # -- the requesters: a job count per slot
        jobs = [Signal(2, name=f"jobs_{i}") for i in range(tasks)]
        for i in range(tasks):
            took = taken & (grant.payload.slot == i)
            m.d.comb += Assume(~(self.arrive[i] & (jobs[i] == 3)))
            m.d.sync += jobs[i].eq(jobs[i] + self.arrive[i] - took)
        request = Cat(job != 0 for job in jobs)
        m.d.comb += [dut.request.eq(request),
                     dut.backlogged.eq(request if self.tie_backlogged
                                       else Cat(job[1] for job in jobs))]

        granted_slot = [grant.valid & (grant.payload.slot == i) for i in range(tasks)]
        jobs_of_granted = Mux(grant.payload.slot < tasks,
                              Cat(jobs).word_select(grant.payload.slot[:max(1, (tasks - 1)
                                                                            .bit_length())], 2),
                              0)

        # -- one clock of history
        advanced = Signal()                         # the grant register took a decision
        loaded_then = Signal(tasks)
        class_then = [Signal(len(c), name=f"class_then_{i}") for i, c in enumerate(loaded_class)]
        held = Signal()                             # valid and not ready in the last clock
        held_payload = Signal(len(grant.payload.as_value()))
        m.d.sync += [
            advanced.eq(~grant.valid | grant.ready),
            loaded_then.eq(loaded),
            held.eq(grant.valid & ~grant.ready),
            held_payload.eq(grant.payload.as_value()),
        ]
        m.d.sync += [then.eq(now) for then, now in zip(class_then, loaded_class, strict=True)]

        if prop == "grant_payload":
            m.d.comb += Assert(~grant.valid | ((grant.payload.slot < tasks)
                                               & (grant.payload.job_class < classes)),
                               "a grant names one existing slot and class")
            m.d.comb += Assert(grant.valid | (grant.payload.as_value() == 0),
                               "no grant shows slot 0, class 0")
        elif prop == "one_grant_per_job":
            m.d.comb += Assert(~grant.valid | (jobs_of_granted != 0),
                               "a grant names a slot with a job not yet granted")
        elif prop == "no_empty_grant":
            for i in range(tasks):
                m.d.comb += Assert(~(advanced & granted_slot[i])
                                   | (loaded_then[i]
                                      & (grant.payload.job_class == class_then[i])),
                                   f"a new grant to slot {i} finds it loaded, same class")
        elif prop == "grant_stable":
            m.d.comb += Assert(~held | (grant.valid
                                        & (grant.payload.as_value() == held_payload)),
                               "a held grant keeps valid and payload")
        elif prop in ("response", "deficit_response"):
            quiet = Signal(range(self.settle + 1))
            m.d.sync += quiet.eq(Mux(self.write_valid, 0,
                                     Mux(quiet == self.settle, quiet, quiet + 1)))
            limit = self.bound + 1
            waits = []
            for i in range(tasks):
                waiting = loaded[i] & (jobs[i] != 0) & (quiet == self.settle)
                wait = Signal(range(limit + 1), name=f"wait_{i}")
                m.d.sync += wait.eq(Mux(waiting & ~granted_slot[i],
                                        Mux(wait == limit, wait, wait + 1), 0))
                m.d.comb += Assert(wait < self.bound,
                                   f"slot {i} waits fewer than {self.bound} clocks")
                waits.append(wait)
            if prop == "deficit_response":
                settled = quiet == self.settle
                self._deficit_lemmas(m, dut, settled, waits, granted_slot)
                regs = dut.registers
                # Reachable-state facts the induction needs beside the lemmas.
                m.d.comb += [
                    Assert(quiet <= self.settle, "quiet counts to settle"),
                    Assert(grant.payload.job_class == 0, "one class"),
                    Assert(regs["last_granted"] == Mux(grant.valid,
                                                       Mux(grant.payload.slot, 0b10, 0b01), 0),
                           "last_granted names the grant"),
                    Assert(~grant.valid | (jobs_of_granted != 0), "a grant has its job"),
                    Assert(regs["step"].any() & ((regs["step"] & (regs["step"] - 1)) == 0),
                           "the divider's step is one-hot"),
                    Assert(~regs["running"] | ((regs["turn"] == 1) | (regs["turn"] == 2)),
                           "a turn names one slot"),
                    Assert((regs["pending"] & ~Cat(*regs["valid"])) == 0,
                           "pending slots are loaded"),
                    Assert(~regs["running"] | (regs["turn"] & Cat(*regs["valid"])).any(),
                           "the turn's slot is loaded"),
                    Assert(~regs["running"] | regs["dirty"]
                           | (regs["divisor"] == regs["class_total"][0]),
                           "a clean turn divides by its class total"),
                    Assert((regs["refreshing"] & Cat(*regs["weighted"])) == 0,
                           "a slot sitting out has no W in force"),
                ]
                for i in range(tasks):
                    m.d.comb += Assert(regs["job_class"][i] == 0, f"slot {i}: class 0")
                self._divider_lemmas(m, dut)
                for i in range(tasks):
                    m.d.comb += [
                        Assert(loaded[i] == dut.registers["valid"][i],
                               f"slot {i}: loaded as the writes say"),
                        Assert(~((waits[i] != 0) & settled) | (loaded[i] & (jobs[i] != 0)),
                               f"slot {i}: a wait under way keeps its job"),
                    ]
        else:                                       # covers
            covers = {f"grant_slot_{i}": granted_slot[i] for i in range(tasks)}
            # A load of slot 0; a write to another slot within its divider turn (the
            # C clocks after the load); slot 0 granted afterwards.
            clocks = dut.params.divider_clocks
            age = Signal(range(clocks + 2))
            interleaved = Signal()
            load_0 = self.write_valid & (self.write_slot == 0) & is_load
            with m.If(load_0):
                m.d.sync += [age.eq(1), interleaved.eq(0)]
            with m.Elif(self.write_valid & (self.write_slot == 0)):
                m.d.sync += [age.eq(0), interleaved.eq(0)]
            with m.Elif((age != 0) & (age <= clocks)):
                m.d.sync += age.eq(age + 1)
                with m.If(self.write_valid & (age >= 2)):
                    m.d.sync += interleaved.eq(1)
            covers["write_during_turn"] = interleaved & granted_slot[0]
            covers["held_grant"] = held & grant.valid
            # A slot granted in the clock its previous grant is taken (backlogged path).
            was_taken = Signal(tasks)
            m.d.sync += was_taken.eq(Cat(granted_slot[i] & grant.ready for i in range(tasks)))
            covers["second_job_granted"] = Cat(was_taken[i] & granted_slot[i] & advanced
                                               for i in range(tasks)).any()
            _covers(m, covers, prop)
        return m


    #: The bound on every ``H`` of the deficit arbiter with two slots in one class (see
    #: :meth:`_deficit_lemmas`).
    DEFICIT_BOUND = 515

    def _divider_lemmas(self, m: Module, dut) -> None:
        """The restoring divider (two slots, one class): in the clock that makes quotient pair
        ``k`` of a turn, the registers hold the first ``k`` pairs ``Q`` and the remainder
        ``R`` of the turn's weight ``w`` by its divisor ``d`` (the class total when the turn
        started): ``Q * d + R = w << (2k - 1)``, ``R < d`` (``R = w`` for ``k = 0``), so the
        turn commits ``floor(256 w / d)``. A slot not pending has the exact ``W`` of its
        weight and its class's total in force (or sits out with it)."""
        regs = dut.registers
        weight, valid = regs["weight"], regs["valid"]
        running, step, turn = regs["running"], regs["step"], regs["turn"]
        divisor, remainder, quotient = regs["divisor"], regs["remainder"], regs["quotient"]
        total = regs["class_total"][0]
        mine = Mux(turn[0], weight[0], weight[1])
        m.d.comb += Assert(~running | ((divisor >= mine) & (mine >= 1)),
                           "a turn's divisor is at least its weight")
        for k in range(len(step)):
            if k == 0:
                fact = remainder == mine
            else:
                fact = ((remainder < divisor)
                        & (quotient[:2 * k] * divisor + remainder == mine << (2 * k - 1)))
            m.d.comb += Assert(~(running & step[k]) | fact, f"divider, pair {k}")
        for i in range(2):
            exact = ((regs["expected"][i] * total <= weight[i] * 256)
                     & (weight[i] * 256 < (regs["expected"][i] + 1) * total))
            m.d.comb += Assert(~valid[i] | regs["pending"][i]
                               | (exact & ~(running & turn[i])
                                  & (regs["weighted"][i] | regs["refreshing"][i])),
                               f"slot {i}: not pending, its exact W is in force")

    def _deficit_lemmas(self, m: Module, dut, settled, waits, granted_slot) -> None:
        """The invariants that make the deficit arbiter's response bound provable (two slots,
        one class, no fraction bits), each asserted, so that the proof proves them too.

        * Registers: an empty slot has ``H = 0``, weight 0 and no ``W`` in force; a slot
          with ``W`` in force is loaded and its ``W`` is 1..256; the comparator keys equal
          their definitions (``-T`` in offset binary, the complements of ``W`` and class);
          the class total is the sum of the loaded weights.
        * ``H`` is bounded: ``|H| <= K`` for each loaded slot and, with both loaded,
          ``1 - K <= H_0 + H_1 <= K + max_weight``. A grant round conserves ``H_0 + H_1``
          (the winner gets back what the loser is charged); a load starts at ``H = cfg``
          beside the other's ``|H| <= K``; and since the winner has the larger ``T = W - H``,
          ``H_0 - H_1`` lies within the two ``W``, so each new ``H`` is within half the sum
          plus 256 of zero: ``K = 515`` closes the induction.
        * Settled (no write for ``tasks * C + 2`` clocks): the divider is idle, nothing is
          pending and every loaded slot has its exact ``W = floor(256 * cfg / total)`` in
          force, at least 64 with weights 1..3.
        """
        regs = dut.registers
        params = dut.params
        bound = self.DEFICIT_BOUND
        target_low, target_high = params.target_range
        minus_shape = Shape.cast(range(-target_high, -target_low + 1))
        top_bit = 1 << (minus_shape.width - 1)
        valid, weight, weighted = regs["valid"], regs["weight"], regs["weighted"]
        expected, history = regs["expected"], regs["history"]
        total = regs["class_total"][0]
        for i in range(2):
            m.d.comb += [
                Assert(valid[i] | ((history[i] == 0) & (weight[i] == 0) & ~weighted[i]),
                       f"empty slot {i}: H = 0, weight 0, no W"),
                Assert(~valid[i] | ((weight[i] >= 1) & (weight[i] <= self.max_weight)),
                       f"loaded slot {i}: weight 1..max"),
                Assert(~weighted[i] | (valid[i] & (expected[i] >= 1)),
                       f"slot {i} with W in force is loaded, W >= 1"),
                Assert(expected[i] <= 256, f"slot {i}: W <= 256"),
                Assert(~valid[i] | ((history[i] >= -bound) & (history[i] <= bound)),
                       f"slot {i}: |H| <= {bound}"),
            ]
            minus = _minus_target(history[i], expected[i], 0, minus_shape).as_unsigned() ^ top_bit
            if i in regs["minus_target_key"]:
                m.d.comb += Assert(~weighted[i] | (regs["minus_target_key"][i] == minus),
                                   f"slot {i}: minus key = -T")
                m.d.comb += Assert(regs["not_expected"][i] == ~expected[i],
                                   f"slot {i}: ~W key")
            if i in regs["target_key"]:
                m.d.comb += Assert(~weighted[i] | (regs["target_key"][i] == ~minus),
                                   f"slot {i}: plus key = T")
                m.d.comb += Assert(regs["class_complement"][i] == ~regs["job_class"][i],
                                   f"slot {i}: ~class key")
        m.d.comb += Assert(total == Mux(valid[0], weight[0], 0) + Mux(valid[1], weight[1], 0),
                           "class total = loaded weights")
        both = valid[0] & valid[1]
        both_sum = history[0] + history[1]
        m.d.comb += Assert(~both | ((both_sum >= 1 - bound)
                                    & (both_sum <= bound + self.max_weight)),
                           "H_0 + H_1 bounded")
        exact = []
        for i in range(2):
            table = [(weight[i] == w) & (total == t)
                     & (expected[i] == expected_weight(w, t))
                     for w in range(1, self.max_weight + 1)
                     for t in range(w, w + self.max_weight + 1)]
            exact.append(~valid[i] | (weighted[i] & Cat(*table).any()))
        m.d.comb += Assert(~settled | (~regs["running"] & ~regs["pending"].any()
                                       & exact[0] & exact[1]),
                           "settled: divider idle, exact W in force")
        # Progress: while slot i waits and the grant register does not name it, the other
        # slot won every decision since the wait began, each closing the gap T_o - T_i by
        # 2 W_i >= 128; the gap starts at most 192 + 2K (W within 64..256, |H| <= K).
        widest = 192 + 2 * bound
        targets = [expected[i] - history[i] for i in range(2)]
        for i in range(2):
            gap = targets[1 - i] - targets[i]
            m.d.comb += Assert(~(settled & (waits[i] >= 2) & ~granted_slot[i])
                               | (gap <= widest - 128 * (waits[i] - 2)),
                               f"slot {i}: the gap closes while it waits")


class MaxBlockPipelineHarness(wiring.Component):
    """:class:`~hw.maxblock.ExactMaxFreeBlock` with ``latency`` > 0 against its own
    combinational answer ``latency`` enabled clocks earlier (``hw/maxblock/contract.py``).

    Free inputs: ``status``, ``request``, ``valid``, ``enable``. The harness keeps a shadow
    of the inputs: a shift register of ``latency`` words (``status``, ``request``,
    ``valid``) that moves only on ``enable``, as the contract says the pipeline does; a
    combinational :class:`ExactMaxFreeBlock` (latency 0) answers the oldest word.

    Property ``pipeline_answer``: ``result_valid`` equals the shadow's oldest ``valid``, and
    while it is high the four outputs equal the combinational answer of that word. The data
    registers of the pipeline start at any value (they have no reset), so this also shows
    that nothing unspecified leaks into an answer. Cover ``stalled_answer``: an answer that
    came through a stall (``enable`` low for a clock while the word was in flight).
    """

    def __init__(self, prop: str, *, n=8, latency=3):
        if prop not in MAXBLOCK_PROPERTIES + ("cover",) and not prop.startswith("reach:"):
            raise ValueError(f"Unknown free-block property {prop!r}")
        if latency < 1:
            raise ValueError("The pipeline property needs latency >= 1")
        self.prop = prop
        self.block = ExactMaxFreeBlock(n, latency=latency)
        self.reference = ExactMaxFreeBlock(n, latency=0)
        self.shadow_depth = latency     # differs only in the tests' broken harness
        super().__init__({"status": In(n), "request": In(range(n + 1)), "valid": In(1),
                          "enable": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.block
        m.submodules.reference = ref = self.reference
        m.d.comb += Assume(~ResetSignal())
        m.d.comb += Assume(self.request <= dut.n)
        m.d.comb += [dut.status.eq(self.status), dut.request.eq(self.request),
                     dut.valid.eq(self.valid), dut.enable.eq(self.enable)]
        word = Cat(self.status, self.request, self.valid)
        stages = []
        previous = word
        depth = self.shadow_depth
        for index in range(depth):
            # Data without reset (like the pipeline's); the valid bit is reset below.
            stage = Signal(len(word), name=f"shadow_{index}", reset_less=True)
            with m.If(self.enable):
                m.d.sync += stage.eq(previous)
            stages.append(stage)
            previous = stage
        shadow_valid = Signal(depth, name="shadow_valid")
        with m.If(self.enable):
            m.d.sync += shadow_valid.eq(Cat(self.valid, shadow_valid[:-1]) if depth > 1
                                        else self.valid)
        oldest = stages[-1]
        n = dut.n
        m.d.comb += [ref.status.eq(oldest[:n]), ref.request.eq(oldest[n:n + len(dut.request)])]
        if self.prop == "pipeline_answer":
            m.d.comb += Assert(dut.result_valid == shadow_valid[-1],
                               "result_valid is valid delayed by latency enabled clocks")
            m.d.comb += Assert(~dut.result_valid
                               | ((dut.length == ref.length) & (dut.start == ref.start)
                                  & (dut.fit == ref.fit) & (dut.fit_start == ref.fit_start)),
                               "the answer is the word's from latency enabled clocks before")
        else:
            # A stall (enable low) while a valid word was in flight, then its answer.
            stalled = Signal()
            with m.If(~self.enable & shadow_valid.any()):
                m.d.sync += stalled.eq(1)
            _covers(m, {"stalled_answer": dut.result_valid & stalled & (ref.length > 2)
                        & (ref.length < n) & ref.fit & (ref.fit_start != 0)}, self.prop)
        return m


class SequentialEquivalenceHarness(wiring.Component):
    """Two components with the same flat signature, driven by the same free inputs; one
    property: every output is equal in every clock (sequential equivalence from reset).

    Used to show a surviving mutant equivalent (docs/verification.md, "Mutation"): the
    original block as ``gold``, the mutated one as ``gate``.
    """

    def __init__(self, gold: wiring.Component, gate: wiring.Component):
        self.gold, self.gate = gold, gate
        flat = gold.signature.flatten(gold)
        self._inputs = [(path, value) for path, member, value in flat
                        if member.flow == wiring.In]
        super().__init__({"_".join(map(str, path)): In(len(Value.cast(value)))
                          for path, value in self._inputs})

    def elaborate(self, platform):
        m = Module()
        m.submodules.gold, m.submodules.gate = self.gold, self.gate
        m.d.comb += Assume(~ResetSignal())
        for side in (self.gold, self.gate):
            for path, member, value in side.signature.flatten(side):
                if member.flow == wiring.In:
                    m.d.comb += Value.cast(value).eq(getattr(self, "_".join(map(str, path))))
        gold_out = [value for _, member, value in self.gold.signature.flatten(self.gold)
                    if member.flow == wiring.Out]
        gate_out = [value for _, member, value in self.gate.signature.flatten(self.gate)
                    if member.flow == wiring.Out]
        assert self._inputs and gold_out, "nothing to compare"
        m.d.comb += Assert(Cat(*(Value.cast(v) for v in gold_out))
                           == Cat(*(Value.cast(v) for v in gate_out)), "the outputs are equal")
        return m
