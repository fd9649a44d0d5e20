"""Rotating scores (``score_refresh = "rotating"``): at most two APs' refreshed a cycle.

With ``score_refresh = "every"`` the pipeline orders the APs in every cycle by every AP's
embodiment 9 score ``R`` and embodiment 10 history ``B`` of that cycle
(:meth:`model.dispatch.pipeline.DecisionPipeline.match_stage`), which an RTL builds as one
score datapath per AP and a comparator per pair of APs. ``rotating`` keeps the scores
instead and refreshes at most two APs' in a cycle ``t``: AP ``t mod P`` in turn, and the AP
of the WG dispatched in cycle ``t - 1 - circuit_latency`` (the first cycle whose view shows
that dispatch), when there is one and it is another AP:

1. ``R[a]`` and ``B[a]`` of each refreshed AP ``a`` take its scores of cycle ``t``;
2. ``top_r = max(max R, 1)`` and ``top_b = max(max B, 1)`` over the kept scores (the
   refreshed APs' new ones among them);
3. each refreshed AP's key: ``R[a]`` (``ap_choice = "resource"``: the largest first),
   ``-B[a]`` (``instruction``: the smallest history first) or ``w_r R[a] top_b - w_i B[a]
   top_r`` (``combined``, every AP's maxima), kept until the AP's next refresh;
4. the AP choice takes the candidate with the largest kept key, the lowest index among
   equals (as with every AP's scores).

So an AP's key is up to ``P - 1`` cycles older than the other scores' ``score_latency``, and
two APs' keys may be scaled by maxima of different cycles; the AP just given a WG is
refreshed as soon as its view shows it, so that its stale lead does not draw the WGs after
it (with the turn alone, the AP imbalance the scores are for grew by a quarter at 32 APs;
docs/dispatch.md). Before cycle 0 the kept scores are those of the idle GPU in cycle 0 with
keys of its maxima: what a rotation left running on the idle GPU holds (the RTL's START
waits for it). The keys are integers; the RTL keeps them in the order-preserving unsigned
form of :class:`hw.dispatch.pipeline.ScorePipeline`.

RTL twin: :class:`hw.dispatch.scores.RotatingScores`.
"""

from model.dispatch.config import PolicyConfig

__all__ = ["RotatingScores"]


class RotatingScores:
    """The kept scores and keys of every AP (``resource``, ``instruction``, ``keys``).

    Built from the first cycle's scores of every AP (the idle GPU's). :meth:`refresh` is one
    cycle: it takes the refreshed APs' scores and returns the keys after it."""

    def __init__(self, policy: PolicyConfig, resource: list, instruction: list):
        self.policy = policy
        self.P = len(resource)
        self.resource, self.instruction = list(resource), list(instruction)
        self.keys = [self._key(ap) for ap in range(self.P)]

    def _key(self, ap: int) -> int:
        choice = self.policy.ap_choice
        if choice == "resource":
            return self.resource[ap]
        if choice == "instruction":
            return -self.instruction[ap]
        if choice != "combined":
            raise ValueError(f"ap_choice {choice!r} reads no score")
        top_r, top_b = max(max(self.resource), 1), max(max(self.instruction), 1)
        policy = self.policy
        return (policy.resource_weight * self.resource[ap] * top_b
                - policy.instruction_weight * self.instruction[ap] * top_r)

    @staticmethod
    def refreshed(cycle: int, P: int, dispatched: int | None = None) -> tuple:
        """The APs whose scores cycle ``cycle`` refreshes: AP ``cycle mod P`` and
        ``dispatched`` (the AP of the WG dispatched in cycle ``cycle - 1 -
        circuit_latency``, or ``None``) when another."""
        turn = cycle % P
        return (turn,) if dispatched is None or dispatched == turn else (turn, dispatched)

    def refresh(self, scores) -> tuple:
        """``scores``: ``(AP, R, B)`` of each AP refreshed in this cycle. Their scores are
        kept, then their keys worked out (with the maxima of the kept scores after all of
        them): the keys after the cycle (a tuple, every AP's)."""
        for ap, resource, instruction in scores:
            self.resource[ap], self.instruction[ap] = resource, instruction
        for ap, _, _ in scores:
            self.keys[ap] = self._key(ap)
        return tuple(self.keys)

    @staticmethod
    def best(mask: int, keys) -> int:
        """The AP of ``mask`` (a bit mask, not 0) with the largest key, the lowest index
        among equals."""
        best = None
        ap = 0
        while mask:
            if mask & 1 and (best is None or keys[ap] > keys[best]):
                best = ap
            mask >>= 1
            ap += 1
        return best
