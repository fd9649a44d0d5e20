"""A point that does (almost) nothing: to measure what the sweep machinery costs per point, and
for failure drills (a worker that dies mid-point, a point that raises).

``command = "noop"`` in a sweep file, with or without a base scenario; its fields (every one
optional, checked like any scenario's)::

    value = 0.0          # a number, echoed in the metrics
    sleep_ms = 0         # wall time a point takes (0 .. 600000)
    policies = ["a"]     # the names a sweep can select
    fail = false         # raise an error in the point (a model bug, recorded as failed)
    [crash]              # kill the worker process in the middle of matching points, once each
    value = 3.0          # ...the points whose value is this
    markers = "/tmp/x"   # a directory: a point leaves a file here before killing its worker,
                         # so that it runs normally when it is retried

Metrics: ``value``, ``seed``, ``policy_index`` and ``product`` (value x seed + policy index),
so a test can tell every point's result from every other's.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from model.config import Fields, load_toml

__all__ = ["HEADLINE", "Drill", "load_scenario", "policy_names", "run_point"]

#: The metrics a sweep's report shows by default, each with whether higher is better.
HEADLINE = {"product": True}


@dataclass(frozen=True)
class Drill:
    """A loaded ``noop`` scenario."""

    value: float
    sleep_ms: int
    policies: tuple[str, ...]
    fail: bool
    crash_value: float | None
    crash_markers: Path | None


def load_scenario(path) -> Drill:
    """Read and check a ``noop`` scenario (see the module docstring)."""
    path = Path(path)
    root = Fields(load_toml(path), source=path)
    value = root.float("value", 0.0)
    sleep_ms = root.int("sleep_ms", 0, minimum=0, maximum=600_000)
    policies = tuple(root.list("policies", ["a"]))
    for index, name in enumerate(policies):
        if not isinstance(name, str) or not name:
            raise root.error(f"policies[{index}]", f"must be a name, not {name!r}")
    if not policies or len(set(policies)) != len(policies):
        raise root.error("policies", f"must name one or more distinct policies, not "
                                     f"{list(policies)!r}")
    fail = root.bool("fail", False)
    crash_value = crash_markers = None
    if "crash" in root:
        crash = root.table("crash")
        crash_value = crash.float("value")
        crash_markers = Path(crash.str("markers"))
        crash.done()
    root.done()
    return Drill(value, sleep_ms, policies, fail, crash_value, crash_markers)


def policy_names(scenario: Drill) -> list[str]:
    return list(scenario.policies)


def run_point(scenario: Drill, policy: str, seed: int, *, quick: bool = False
              ) -> dict[str, float]:
    """Sleep ``sleep_ms`` (half of it with ``quick``), then return the metrics; a matching
    crash drill kills this process half-way, the first time only."""
    if policy not in scenario.policies:
        raise ValueError(f"noop has no policy {policy!r}")
    sleep = scenario.sleep_ms / 1000 / (2 if quick else 1)
    if scenario.crash_value is not None and scenario.value == scenario.crash_value:
        marker = scenario.crash_markers / hashlib.sha256(
            f"{scenario.value}/{policy}/{seed}".encode()).hexdigest()[:16]
        if not marker.exists():
            time.sleep(sleep / 2)
            scenario.crash_markers.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"value {scenario.value}, policy {policy}, seed {seed}, "
                              f"pid {os.getpid()}\n")
            os._exit(70)              # as a crash or the OOM killer would: no clean-up at all
    if sleep:
        time.sleep(sleep)
    if scenario.fail:
        raise RuntimeError(f"noop point failed on purpose (value {scenario.value}, policy "
                           f"{policy}, seed {seed})")
    index = scenario.policies.index(policy)
    return {"value": scenario.value, "seed": seed, "policy_index": index,
            "product": scenario.value * seed + index}
