"""Helpers shared by the parameter checks of the models (and so of the RTL constructors)."""

__all__ = ["is_integer"]


def is_integer(value) -> bool:
    """True for an ``int`` that is not a ``bool``: ``True`` is no block count or weight."""
    return isinstance(value, int) and not isinstance(value, bool)


class InvariantError(AssertionError):
    """A system model broke one of its own invariants: a bug in the model or a policy (or a
    deliberately broken one in a test), never a property of the workload."""
