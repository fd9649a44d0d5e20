"""Helpers shared by the parameter checks of the models (and so of the RTL constructors)."""

__all__ = ["is_integer"]


def is_integer(value) -> bool:
    """True for an ``int`` that is not a ``bool``: ``True`` is no block count or weight."""
    return isinstance(value, int) and not isinstance(value, bool)
