"""The dispatcher model's compiled core (issue 32): C++ twins of the Python model's
stages, built by ``make venv`` (:mod:`model.dispatch.core.build`), each held bit for bit to
its Python twin by the tests. The Python model stays the golden reference.

``core`` is the module, or ``None`` when it was not built; ``reason`` then says why.
"""

try:
    from model.dispatch.core import _core as core
    reason = ""
except ImportError as error:          # not built (no compiler), or built for another Python
    core = None
    reason = (f"the compiled core is not built ({error}); run "
              f"`python -m model.dispatch.core.build`")

__all__ = ["CIRCUITS", "config", "core", "reason", "table"]


CIRCUITS = ("exact", "full", "grouped", "sampled", "shared")


def config(gpu, policy, power_window: int = 1024):
    """The compiled core's :class:`Config` of a GpuConfig and a PolicyConfig (what the
    Python stages read of them)."""
    from model.dispatch.config import shared_schedule
    from model.maxblock import default_samples

    c = core.Config()
    c.aps, c.peus, c.wave_slots, c.priorities = gpu.aps, gpu.peus, gpu.wave_slots, \
        gpu.priorities
    c.circuit = CIRCUITS.index(policy.circuit)
    c.group_size, c.circuit_latency = policy.group_size, policy.circuit_latency
    c.ema_history = policy.history == "ema"
    c.history_cycles, c.power_window = policy.history_cycles, power_window
    periods = {"vgpr": [0] * gpu.peus, "sgpr": [0] * gpu.peus, "lds": [0]}
    if policy.circuit == "shared":
        schedule = shared_schedule(gpu, policy.shared_width)
        at = {name: index for index, types in enumerate(schedule.periods)
              for name, _ in types}
        periods = {"vgpr": [at[f"vgpr{q}"] for q in range(gpu.peus)],
                   "sgpr": [at[f"sgpr{q}"] for q in range(gpu.peus)], "lds": [at["lds"]]}
        c.shared_periods = len(schedule.periods)
    for index, (name, n) in enumerate((("vgpr", gpu.vgpr), ("sgpr", gpu.sgpr),
                                       ("lds", gpu.lds))):
        samples = sorted(k + 1 for k in default_samples(n)) if policy.circuit == "sampled" \
            else []
        c.set_resource(index, n, samples, periods[name])
    return c


def table(gpu, policy, power_window: int = 1024):
    """The compiled view and resource table of ``gpu`` under ``policy`` (for the tests that
    hold them to :class:`~model.dispatch.views.View` and
    :class:`~model.dispatch.resources.Resources`)."""
    words = core.words_for(max(gpu.vgpr, gpu.sgpr, gpu.lds))
    return getattr(core, f"Table{words}")(config(gpu, policy, power_window))
