"""Validated TOML configuration for the system models: every error names the field.

The system models (:mod:`model.dispatch`, :mod:`model.procsched`, :mod:`model.tasksched`,
:mod:`model.hostsched`, :mod:`model.cluster`) keep their configuration in frozen
dataclasses and build them from TOML tables through :class:`Fields`, a read-once view of one
table that knows its own path (``channels[2].priority``). Reading a key checks its type and
range; :meth:`Fields.done` rejects keys nobody read, so a misspelt knob is an error rather
than a silently ignored default::

    fields = Fields(load_toml(path), source=path)
    gpu = fields.table("gpu")
    aps = gpu.int("aps", default=16, minimum=1)
    gpu.done()
    fields.done()

Errors are :class:`ConfigError` (a ``ValueError``) with messages such as
``"configs/hol.toml: channels[1].priority must be an integer in 0..3, not 7"``; an unknown
key's message lists the keys its table accepts. :class:`Budget` caps how big a scenario may
make a run (tasks, jobs, slices), charged field by field, so an input that would run for hours
is refused at load time naming the field that crossed the cap.

:func:`in_memory` lets a scenario that exists only as data (a sweep's point: the base file with
some fields changed, :mod:`model.sweep`) go through a subcommand's own loader unchanged: inside
the block, :func:`load_toml` of that path returns the data instead of reading the file, so
relative paths, the file's stem and every error message stay those of the file.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import difflib
import math
import os
import tomllib
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Budget", "ConfigError", "Fields", "check_choice", "check_claim_run", "check_flag",
           "check_hooks", "check_int", "check_items", "check_names", "check_number", "check_pair",
           "check_sequence", "in_memory", "load_toml", "toml_path"]


class ConfigError(ValueError):
    """A configuration value is missing, of the wrong type, out of range or unknown."""


_MISSING = object()


#: (resolved path, document) that :func:`load_toml` returns instead of reading the file.
_IN_MEMORY: contextvars.ContextVar[tuple[Path, dict] | None] = contextvars.ContextVar(
    "in_memory", default=None)


@contextmanager
def in_memory(path, document: dict):
    """Within this block, :func:`load_toml` of ``path`` returns a copy of ``document`` (the
    parsed TOML a file at ``path`` would hold) instead of reading the file. Other paths are
    read as usual. The setting is per thread and per task (a context variable)."""
    token = _IN_MEMORY.set((Path(path).resolve(), document))
    try:
        yield
    finally:
        _IN_MEMORY.reset(token)


def toml_path(path) -> Path:
    """``path`` (a ``str`` or ``os.PathLike``) as a :class:`~pathlib.Path`; a ``TypeError``
    naming the argument otherwise (``Path(None)`` names nothing)."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or pathlib.Path naming a TOML file, not {path!r}")
    return Path(path)


def load_toml(path) -> dict:
    """Parse a TOML file; a syntax error becomes a :class:`ConfigError` naming the file.
    Inside :func:`in_memory` for ``path``, the document given there instead."""
    path = toml_path(path)
    override = _IN_MEMORY.get()
    if override is not None and path.resolve() == override[0]:
        return copy.deepcopy(override[1])
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except UnicodeDecodeError as error:
        # tomllib decodes the whole file first: a binary or non-UTF-8 file is not TOML.
        data = error.object
        what = ("UTF-16 text, not UTF-8" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else
                "a binary file" if b"\0" in data else "not UTF-8 text")
        raise ConfigError(f"{path}: {what} (byte {error.start}: {error.reason}); TOML files "
                          f"are UTF-8 text") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None


def _range_text(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f" in {minimum}..{maximum}"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


class Fields:
    """One TOML table being read: typed getters with defaults and ranges, path-named errors.

    Parameters
    ----------
    data : dict
        The table.
    path : str
        Its dotted path inside the document ('' for the root).
    source : str or Path, optional
        The file it came from, prefixed to every message.
    """

    def __init__(self, data, path: str = "", *, source=None):
        where = f"{source}: " if source is not None else ""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}{path or 'the document'} must be a table, "
                              f"not {type(data).__name__}")
        self._data = data
        self._path = path
        self._source = source
        self._read: set[str] = set()
        self._asked: set[str] = set()

    @property
    def path(self) -> str:
        return self._path

    def name(self, key: str) -> str:
        """The full path of ``key`` in this table, as messages show it."""
        return f"{self._path}.{key}" if self._path else key

    def error(self, key: str, message: str) -> ConfigError:
        """A :class:`ConfigError` about ``key``: ``"<file>: <path.key> <message>"``."""
        where = f"{self._source}: " if self._source is not None else ""
        return ConfigError(f"{where}{self.name(key)} {message}")

    def __contains__(self, key: str) -> bool:
        # A key the reader asks about is one the table knows, even when absent (it is then
        # listed among the accepted keys of an error).
        self._asked.add(key)
        return key in self._data

    def keys(self) -> list[str]:
        return list(self._data)

    def peek(self, key: str, default=None):
        """The raw value of ``key`` (``default`` when absent) without marking it read: for a
        field whose type decides how it is read."""
        return self._data.get(key, default)

    def _get(self, key: str, default):
        self._read.add(key)
        if key in self._data:
            return self._data[key]
        if default is _MISSING:
            raise self.error(key, "is required")
        return default

    def int(self, key: str, default=_MISSING, *, minimum=None, maximum=None) -> int:
        value = self._get(key, default)
        if (not isinstance(value, int) or isinstance(value, bool)
                or (minimum is not None and value < minimum)
                or (maximum is not None and value > maximum)):
            raise self.error(key, f"must be an integer{_range_text(minimum, maximum)}, "
                                  f"not {value!r}")
        return value

    def float(self, key: str, default=_MISSING, *, minimum=None, maximum=None) -> float:
        value = self._get(key, default)
        if (not isinstance(value, int | float) or isinstance(value, bool)
                or not math.isfinite(value)
                or (minimum is not None and value < minimum)
                or (maximum is not None and value > maximum)):
            raise self.error(key, f"must be a number{_range_text(minimum, maximum)}, "
                                  f"not {value!r}")
        return float(value)

    def bool(self, key: str, default=_MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, not {value!r}")
        return value

    def str(self, key: str, default=_MISSING, *, choices: Sequence[str] | None = None) -> str:
        value = self._get(key, default)
        if not isinstance(value, str) or (choices is not None and value not in choices):
            allowed = f" (one of {', '.join(map(repr, choices))})" if choices else ""
            raise self.error(key, f"must be a string{allowed}, not {value!r}")
        return value

    def list(self, key: str, default=_MISSING, *, length: int | None = None) -> list:
        value = self._get(key, default)
        if isinstance(value, tuple) and key not in self._data:
            value = list(value)          # a tuple default reads like a TOML array
        if not isinstance(value, list) or (length is not None and len(value) != length):
            size = f" of {length} items" if length is not None else ""
            raise self.error(key, f"must be a list{size}, not {value!r}")
        return value

    def int_list(self, key: str, default=_MISSING, *, length: int | None = None,
                 minimum=None, maximum=None) -> tuple[int, ...]:
        values = self.list(key, default, length=length)
        for index, value in enumerate(values):
            if (not isinstance(value, int) or isinstance(value, bool)
                    or (minimum is not None and value < minimum)
                    or (maximum is not None and value > maximum)):
                raise self.error(f"{key}[{index}]", f"must be an integer"
                                 f"{_range_text(minimum, maximum)}, not {value!r}")
        return tuple(values)

    def int_range(self, key: str, default=_MISSING, *, minimum=None, maximum=None
                  ) -> tuple[int, int]:
        """An inclusive ``(min, max)`` range written ``[min, max]``, or one integer for
        ``(value, value)``."""
        if not isinstance(self.peek(key, default), list | tuple):
            value = self.int(key, default, minimum=minimum, maximum=maximum)
            return value, value
        low, high = self.int_list(key, default, length=2, minimum=minimum, maximum=maximum)
        if low > high:
            raise self.error(key, f"must be [min, max] with min <= max, not {[low, high]!r}")
        return low, high

    def float_list(self, key: str, default=_MISSING, *, length: int | None = None,
                   minimum=None) -> tuple[float, ...]:
        values = self.list(key, default, length=length)
        for index, value in enumerate(values):
            if (not isinstance(value, int | float) or isinstance(value, bool)
                    or not math.isfinite(value) or (minimum is not None and value < minimum)):
                raise self.error(f"{key}[{index}]", f"must be a number"
                                 f"{_range_text(minimum, None)}, not {value!r}")
        return tuple(float(value) for value in values)

    def table(self, key: str, default=_MISSING) -> Fields:
        """A sub-table as :class:`Fields` (``default`` — usually ``{}`` — when absent)."""
        value = self._get(key, default)
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, not {value!r}")
        return Fields(value, self.name(key), source=self._source)

    def tables(self, key: str, default=_MISSING) -> list[Fields]:
        """An array of tables (``[[key]]``), each as :class:`Fields` named ``key[i]``."""
        values = self.list(key, default)
        result = []
        for index, value in enumerate(values):
            if not isinstance(value, dict):
                raise self.error(f"{key}[{index}]", f"must be a table, not {value!r}")
            result.append(Fields(value, self.name(f"{key}[{index}]"), source=self._source))
        return result

    def done(self) -> None:
        """Reject any key of this table that no getter read; the message lists the keys the
        table knows (those read or asked about), with the nearest one when the key looks
        misspelt."""
        unknown = sorted(set(self._data) - self._read)
        if unknown:
            known = sorted(self._read | self._asked)
            table = self._path or "the top level"
            near = difflib.get_close_matches(unknown[0], known, n=1)
            raise self.error(unknown[0], "is not a known field"
                             + (f" (did you mean {near[0]!r}?)" if near else "")
                             + f"; {table} accepts: "
                             + (", ".join(known) if known else "no fields")
                             + (f" (also unknown: {', '.join(unknown[1:])})" if unknown[1:]
                                else ""))


class Budget:
    """A cap on how big a scenario may make a simulation, charged field by field, so that an
    input that would run for hours (``count = 10**9``) is refused at load time by a message
    naming the field that crossed the cap.

    ::

        tasks = Budget(100_000, "tasks", "a run would take hours")
        for group in root.tables("tasks"):
            tasks.charge(group, "count", group.int("count", minimum=1))
    """

    def __init__(self, limit: int, what: str, why: str = ""):
        self.limit = limit
        self.what = what
        self.why = why
        self.total = 0

    def charge(self, fields: Fields, key: str, amount) -> None:
        """Add ``amount``; a :class:`ConfigError` about ``key`` when the total exceeds the cap."""
        self.total += amount
        if self.total > self.limit:
            why = f": {self.why}" if self.why else ""
            raise fields.error(key, f"brings the scenario to {self.total:,.0f} {self.what}; "
                                    f"at most {self.limit:,} are accepted{why}")


# -- the same checks for objects built in Python (the models' APIs) --------------------------

def _label(owner: str, name: str) -> str:
    return f"{owner}.{name}" if owner else name


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(owner: str, name: str, value, minimum: int | None,
              maximum: int | None = None) -> None:
    """Raise ``TypeError``/``ValueError`` naming ``owner.name`` unless ``value`` is an integer
    in ``minimum..maximum`` (the Python API's twin of the TOML reader's check; ``None``: no
    bound on that side)."""
    accepted = "an integer" + _range_text(minimum, maximum)
    if not _is_int(value):
        raise TypeError(f"{_label(owner, name)} must be {accepted}, not {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{_label(owner, name)} must be {accepted}, not {value!r}")


def check_number(owner: str, name: str, value, minimum: float, *, strict: bool = False,
                 maximum: float | None = None) -> None:
    """``value`` is a real number ``> minimum`` (``strict``) or ``>= minimum``, and at most
    ``maximum`` when given."""
    accepted = (f"a number in {minimum:g}..{maximum}" if maximum is not None and not strict
                else f"a number {'>' if strict else '>='} {minimum:g}"
                + (f" and <= {maximum}" if maximum is not None else ""))
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{_label(owner, name)} must be {accepted}, not {value!r}")
    if (not math.isfinite(value) or value < minimum or (strict and value == minimum)
            or (maximum is not None and value > maximum)):
        raise ValueError(f"{_label(owner, name)} must be {accepted}, not {value!r}")


def check_flag(owner: str, name: str, value) -> None:
    """``value`` is ``True`` or ``False`` (not ``1``, not ``"yes"``)."""
    if not isinstance(value, bool):
        raise TypeError(f"{_label(owner, name)} must be True or False, not {value!r}")


def check_pair(owner: str, name: str, value, minimum: int) -> None:
    """``value`` is a ``(least, most)`` pair of integers with ``minimum <= least <= most``."""
    accepted = f"a (least, most) pair of integers with {minimum} <= least <= most"
    if (not isinstance(value, tuple | list) or len(value) != 2
            or not all(_is_int(item) for item in value)):
        raise TypeError(f"{_label(owner, name)} must be {accepted}, not {value!r}")
    if not minimum <= value[0] <= value[1]:
        raise ValueError(f"{_label(owner, name)} must be {accepted}, not {value!r}")


def check_choice(owner: str, name: str, value, choices) -> None:
    """``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{_label(owner, name)} must be one of "
                         f"{', '.join(map(repr, choices))}, not {value!r}")


def check_sequence(owner: str, name: str, value, *, nonempty: bool = False) -> None:
    """``value`` is a tuple or list (not a string, not ``None``), with an item when
    ``nonempty``."""
    if not isinstance(value, tuple | list):
        raise TypeError(f"{_label(owner, name)} must be a list or tuple, not {value!r}")
    if nonempty and not value:
        raise ValueError(f"{_label(owner, name)} must list at least one item, not {value!r}")


def check_names(owner: str, name: str, value, choices) -> None:
    """``value`` is a non-empty tuple or list of distinct names, each one of ``choices``."""
    accepted = f"a non-empty list of distinct names from {', '.join(map(repr, choices))}"
    if not isinstance(value, tuple | list):
        raise TypeError(f"{_label(owner, name)} must be {accepted}, not {value!r}")
    if (not value or len(set(map(repr, value))) != len(value)
            or not all(isinstance(item, str) and item in choices for item in value)):
        raise ValueError(f"{_label(owner, name)} must be {accepted}, not {value!r}")


def check_hooks(events, progress) -> None:
    """A simulation's optional hooks: ``events`` ``None`` or a list (the events are appended
    to it), ``progress`` ``None`` or a callable (called with the simulated time)."""
    if events is not None and not isinstance(events, list):
        raise TypeError(f"events must be None or a list (the events are appended to it), "
                        f"not {events!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be None or a callable taking the simulated time, "
                        f"not {progress!r}")


def check_claim_run(scenarios, kind: type, package: str, *, first_seed, seeds, claims,
                    scale=1.0) -> None:
    """The arguments every model's ``evaluate_claims`` shares: ``scenarios`` a list of
    ``kind`` (the package's ``Scenario``), ``first_seed`` an integer, ``seeds`` at least 2,
    ``scale`` a positive number and ``claims`` a list or tuple of claims."""
    if not isinstance(scenarios, tuple | list) or not all(isinstance(item, kind)
                                                          for item in scenarios):
        raise TypeError(f"scenarios must be a list of {package} Scenario, not {scenarios!r}")
    check_int("", "first_seed", first_seed, None)
    if not _is_int(seeds) or seeds < 2:
        raise (TypeError if not _is_int(seeds) else ValueError)(
            f"seeds must be an integer >= 2 (a claim over seeds needs at least 2 seeds), "
            f"not {seeds!r}")
    check_number("", "scale", scale, 0, strict=True)
    check_sequence("", "claims", claims)


def check_items(owner: str, name: str, value, kind: type) -> None:
    """``value`` is a tuple or list whose every item is a ``kind``."""
    if not isinstance(value, tuple | list):
        raise TypeError(f"{_label(owner, name)} must be a tuple of {kind.__name__}, "
                        f"not {value!r}")
    for index, item in enumerate(value):
        if not isinstance(item, kind):
            raise TypeError(f"{_label(owner, name)}[{index}] must be a {kind.__name__}, "
                            f"not {item!r}")


def run_settings(scenario, *, seed, quick: bool, claims: bool, seeds: int, overrides: dict,
                 fields: Sequence[str], nested: str, nested_fields: Sequence[str]):
    """The checks and overrides every system model's ``run()`` shares: ``(scenario, seed)``
    with ``seed`` defaulting to 1 and ``overrides`` applied — a key of ``fields`` to the
    scenario, one of ``nested_fields`` to its ``nested`` table (a dataclass field); one
    ``TypeError``/``ValueError`` naming the argument otherwise."""
    seed = 1 if seed is None else seed
    if not _is_int(seed):
        raise TypeError(f"seed must be an integer or None, not {seed!r}")
    for name, value in (("quick", quick), ("claims", claims)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, not {value!r}")
    check_int("", "seeds", seeds, 2)
    accepted = tuple(fields) + tuple(nested_fields)
    unknown = sorted(set(overrides) - set(accepted))
    if unknown:
        raise TypeError(f"run() got unknown setting(s) {', '.join(map(repr, unknown))}; "
                        f"accepted: {', '.join(accepted)}")
    inner = {key: value for key, value in overrides.items() if key in nested_fields}
    top = {key: value for key, value in overrides.items() if key in fields}
    if inner:
        top[nested] = dataclasses.replace(getattr(scenario, nested), **inner)
    if top:
        scenario = dataclasses.replace(scenario, **top)
    return scenario, seed
