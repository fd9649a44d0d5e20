"""The compiled core's view and resource table (model/dispatch/core/src/resources.hpp)
against their Python twins, model.dispatch.views.View, model.dispatch.resources.Resources
and model.dispatch.allocator.Allocator's first fit: the same seeded random sequence of
first fits, takes, gives (some of them wrong, which both report alike), view steps and power
changes on both, every value compared after every step. A failure names the seed."""

import random
from types import SimpleNamespace

import pytest

from model.dispatch.allocator import Allocator
from model.dispatch.config import GpuConfig, PolicyConfig
from model.dispatch.core import core, reason, table
from model.dispatch.resources import Allocation, Resources
from model.dispatch.views import View

pytestmark = pytest.mark.skipif(core is None, reason=reason or "compiled core not built")

NAMES = ("vgpr", "sgpr", "lds")


def _configuration(rng: random.Random):
    """A random GPU (word sizes on both sides of 64 and 128 blocks) and circuit."""
    circuit = rng.choice(["exact", "full", "grouped", "sampled", "shared"])
    group = rng.choice([2, 4, 8]) if circuit == "grouped" else 4
    sizes = [group * rng.randint(1, 300 // group) if circuit == "grouped"
             else rng.choice([1, 7, 48, 64, 65, 128, 129, 300]) for _ in NAMES]
    gpu = GpuConfig(aps=rng.randint(1, 5), peus=rng.randint(1, 4), vgpr=sizes[0],
                    sgpr=sizes[1], lds=sizes[2], wave_slots=rng.randint(1, 16), priorities=2)
    policy = PolicyConfig(circuit=circuit, group_size=group,
                          circuit_latency=rng.randint(0, 3),
                          history=rng.choice(["window", "ema"]),
                          history_cycles=rng.choice([1, 3, 16, 1024]),
                          shared_width=rng.choice([0, max(sizes) * 2]))
    return gpu, policy


def _state(view: View, resources: Resources) -> dict:
    """The Python twins' state, as the compiled table's ``state()`` lists it."""
    return {"bits": resources.bits, "largest": resources.largest, "free": resources.free,
            "held": resources.held, "held_total": resources.held_total, "view": view.view,
            "view_sum": view.view_sum,
            "slots": [s for per_ap in resources.slots for s in per_ap],
            "ap_slots": resources.ap_slots, "slots_free": resources.slots_free,
            "pending": len(view.pending), "power": resources.power, "ema": resources.ema,
            "last_power_change": resources.last_power_change, "dirty": sorted(resources.dirty)}


def _placed(plan):
    return None if plan is None else [list(plan[0]), list(plan[1]), plan[2]]


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_match_the_python_stages(seed):
    rng = random.Random(seed)
    gpu, policy = _configuration(rng)
    violations = []
    view = View(gpu, policy)
    resources = Resources(gpu, policy, view, violations.append, 256)
    allocator = Allocator(gpu, policy, resources, None, [0])
    compiled = table(gpu, policy, 256)
    running = []
    cycle = 0
    for step in range(300):
        where = f"seed {seed}, step {step}, cycle {cycle}, {gpu}, {policy}"
        action = rng.random()
        if action < 0.45:                                   # a first fit, taken if it fits
            ap = rng.randrange(gpu.aps)
            waves = [rng.randint(0, min(2, gpu.wave_slots)) for _ in range(gpu.peus)]
            wg = SimpleNamespace(vgpr=rng.randint(0, 1 + gpu.vgpr // 3),
                                 sgpr=rng.randint(0, 1 + gpu.sgpr // 3),
                                 lds=rng.randint(0, 1 + gpu.lds // 3), waves=sum(waves))
            plan = allocator.plan(wg, ap, waves)
            assert _placed(compiled.plan(ap, waves, wg.vgpr, wg.sgpr, wg.lds)) == \
                _placed(plan), where
            if plan is not None:
                assert compiled.still_free(ap, waves, *plan) == \
                    allocator.still_free(ap, waves, plan), where
                if allocator.still_free(ap, waves, plan) or rng.random() < 0.1:
                    allocation = Allocation(wg, ap, tuple(waves), *plan, 0)
                    visible = cycle + 1 + policy.circuit_latency
                    resources.take(allocation, cycle, visible)
                    compiled.apply(ap, waves, *plan, wg.waves, cycle, visible, True)
                    running.append(allocation)
        elif action < 0.75 and running:                     # a release (sometimes twice)
            allocation = running.pop(rng.randrange(len(running)))
            if rng.random() < 0.05:
                running.append(allocation)
            visible = cycle + policy.circuit_latency
            resources.give_back(allocation, cycle, visible)
            compiled.apply(allocation.ap, list(allocation.waves), allocation.vgpr,
                           allocation.sgpr, allocation.lds, allocation.wg.waves, cycle,
                           visible, False)
        elif action < 0.9:                                  # an AP's power changes
            ap, delta = rng.randrange(gpu.aps), rng.randint(-50, 400)
            resources.change_power(ap, cycle, delta)
            compiled.change_power(ap, cycle, delta)
        else:
            cycle += rng.choice([1, 1, 2, 7, 300])
        assert compiled.show(cycle) == view.show(cycle), where
        state = compiled.state()
        assert state.pop("violations") == violations, where
        assert state == _state(view, resources), where
        if rng.random() < 0.3:
            resources.dirty.clear()
            compiled.clear_dirty()
        assert compiled.history_scores(cycle) == resources.history_scores(cycle), where
        length = rng.choice([1, 5, 64, 1000])
        assert [compiled.history_window(ap, cycle, length) for ap in range(gpu.aps)] == \
            resources.history_windows(range(gpu.aps), cycle, length), where
        for index, name in enumerate(NAMES):
            assert compiled.idle_length(index) == view.idle_length(name), where
