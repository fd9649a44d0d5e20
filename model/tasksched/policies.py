"""The baselines behind the delay-factor arbiter's ports -- FIFO per class with round-robin
across classes, and smooth weighted round-robin -- and :func:`make_arbiter`, which builds the
arbiter of a policy (the seed's is :class:`model.arbiter.DelayFactorArbiterModel`)."""

import numpy as np

from model.arbiter import (
    ArbiterInputs,
    ArbiterOutputs,
    ArbiterParams,
    DelayFactorArbiterModel,
    WriteOp,
)
from model.fairness import SmoothWeightedRoundRobin
from model.tasksched.config import POLICIES

__all__ = ["FifoRoundRobinArbiter", "SmoothWrrArbiter", "make_arbiter"]

_NO_INPUTS = ArbiterInputs()


def _check_params(params) -> None:
    if not isinstance(params, ArbiterParams):
        raise TypeError(f"params must be an ArbiterParams (a scenario's arbiter), "
                        f"not {params!r}")


class _SlotArbiter:
    """What the baselines share: the port contract of :class:`DelayFactorArbiterModel`.

    The requests of a clock decide the grant seen in the next clock; a grant is held until
    ``grant_ready``; a write accepted in clock ``t`` changes its slot from clock ``t + 1``.
    The baselines need no divider, so ``write_ready`` is always high.
    """

    busy = False

    def __init__(self, params: ArbiterParams):
        _check_params(params)
        self.params = params
        self.valid = [False] * params.tasks
        self.job_class = [0] * params.tasks
        self.weight = [0] * params.tasks
        self._grant = (0, 0, 0)

    def outputs(self) -> ArbiterOutputs:
        """The outputs during the current clock."""
        return ArbiterOutputs(1, *self._grant)

    def step(self, inputs: ArbiterInputs = _NO_INPUTS) -> ArbiterOutputs:
        """Advance one clock with ``inputs``; return this clock's outputs."""
        outputs = self.outputs()
        if not self._grant[0] or inputs.grant_ready:
            request = [bool(inputs.request >> slot & 1) and self.valid[slot]
                       for slot in range(self.params.tasks)]
            winner = self._select(request) if any(request) else None
            self._grant = (0, 0, 0) if winner is None else (1, winner, self.job_class[winner])
        if inputs.write_valid and inputs.write_slot < self.params.tasks:
            slot = inputs.write_slot
            load = inputs.write_op == WriteOp.LOAD and inputs.write_weight > 0
            self.valid[slot] = load
            self.job_class[slot] = inputs.write_job_class if load else 0
            self.weight[slot] = inputs.write_weight if load else 0
            self._written(slot, load)
        return outputs

    def _select(self, request: list[bool]) -> int:
        raise NotImplementedError

    def _written(self, slot: int, load: bool) -> None:
        pass


class FifoRoundRobinArbiter(_SlotArbiter):
    """Baseline: FIFO per class, round-robin across classes, weights ignored.

    Within a class the requesting slot loaded earliest wins (a job whose processor is busy
    does not block the next task of its class: the FIFO is work-conserving); the classes
    take turns, starting after the class granted last.
    """

    def __init__(self, params: ArbiterParams):
        super().__init__(params)
        self._loaded_at = [0] * params.tasks
        self._loads = 0
        self._last_class = params.classes - 1

    def _written(self, slot, load):
        self._loads += 1
        self._loaded_at[slot] = self._loads

    def _select(self, request):
        classes = self.params.classes
        for offset in range(1, classes + 1):
            job_class = (self._last_class + offset) % classes
            slots = [slot for slot, wanted in enumerate(request)
                     if wanted and self.job_class[slot] == job_class]
            if slots:
                self._last_class = job_class
                return min(slots, key=self._loaded_at.__getitem__)
        raise AssertionError("a request without a class")


class SmoothWrrArbiter(_SlotArbiter):
    """Baseline: smooth weighted round-robin over the configured weights of all slots.

    The arithmetic is :class:`model.fairness.SmoothWeightedRoundRobin` (nginx's), run on a
    batch of one set whose tasks are the slots; loading a slot sets its weight and clears its
    current weight, clearing it sets both to 0. Classes play no part: shares follow the
    configured weights across every class.
    """

    def __init__(self, params: ArbiterParams):
        super().__init__(params)
        self._policy = SmoothWeightedRoundRobin()
        tasks = params.tasks
        self._policy.reset(np.zeros((1, tasks), dtype=np.int64), np.zeros((1, tasks), bool))

    def _written(self, slot, load):
        self._policy.weights[0, slot] = self.weight[slot]
        self._policy.current[0, slot] = 0

    def _select(self, request):
        return int(self._policy.pick(np.array([request]))[0])


def make_arbiter(policy: str, params: ArbiterParams):
    """The arbiter of ``policy`` (one of :data:`POLICIES`) with ``params``' slots and classes."""
    _check_params(params)
    if policy == "delay-factor":
        return DelayFactorArbiterModel(params)
    if policy == "fifo-rr":
        return FifoRoundRobinArbiter(params)
    if policy == "smooth-wrr":
        return SmoothWrrArbiter(params)
    raise ValueError(f"Policy must be one of {', '.join(POLICIES)}, not {policy!r}")
