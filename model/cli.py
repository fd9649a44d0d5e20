"""``gpusched``: one console command for every system model.

Each subcommand lives in its model's module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; this file names them, and imports only the module of the subcommand
being run, so ``gpusched --help`` stays fast while ``gpusched <command> --help`` lists every
option, the module's own included. ``gpusched --version`` prints the version every JSON
records. Options every subcommand has:

``--config FILE`` (repeatable; default: every ``configs/<subcommand>/*.toml``),
``--policy NAME`` (repeatable; default: every policy a scenario lists), ``--seed S``,
``--json OUT``, ``--plots DIR`` (default ``build/sim``), ``--quick`` (shorter runs, as the
tests use, and quick PNGs: :func:`model.report.quick_figures`) and ``--quiet`` (no progress
bar).

What every subcommand shares, so that each model's ``run`` only runs its model:

* **Bad input** — a bad option, a configuration error (:class:`~model.config.ConfigError`,
  whose message names the file and field), an unreadable or unwritable path — prints one line
  on stderr and exits with status 2, never a traceback.
* **The JSON** — ``args.record`` is a :class:`~model.report.RunRecord` the module fills in
  (``record.add`` after every simulation, ``record.scenario`` with a scenario's summary);
  this file writes it to ``--json`` with the envelope (version, git commit, command line,
  seed, inputs with their SHA-256, times).
* **Ctrl-C** — stops the simulation in progress at once, writes the JSON of every scenario
  and policy that finished, marked ``"interrupted": true``, prints one line and exits 130.
* **--policy** — :func:`select_policies` checks the names against every scenario's policies.

Besides the system models, :data:`TOOLS` are commands over them that take their own inputs
(``gpusched sweep SWEEP.toml``, :mod:`model.sweep`): they get ``--json`` and ``--quiet`` here
and every other option from their module; bad input, the JSON and Ctrl-C work as above (a
``KeyboardInterrupt`` raised with a message adds it to the one line printed).
"""

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from model.config import ConfigError
from model.report import RunRecord, quick_figures, tool_version

__all__ = ["ALIASES", "CLAIMS_SKIPPED", "CONFIG_ROOT", "SUBCOMMANDS", "TOOLS",
           "add_claims_options", "default_configs", "main", "positive_int", "select_policies",
           "wants_claims"]

#: subcommand -> (module, one-line help)
SUBCOMMANDS = {
    "dispatch": ("model.dispatch.cli", "the seed-002 workgroup dispatcher against its "
                                       "baselines (alias: sim)"),
    "procsched": ("model.procsched.cli", "the seed-000 GPU process scheduler against "
                                         "time sharing and CFS"),
    "tasksched": ("model.tasksched.cli", "the seed-001 hardware task scheduler against FIFO "
                                      "round-robin and smooth WRR"),
    "hostsched": ("model.hostsched.cli", "the seed-003 host-side dispatcher against static "
                                         "binding and a plain work queue"),
    "cluster": ("model.cluster.cli", "the seed-004 power-aware placement against spread, "
                                     "bin-packing and random"),
}

#: Commands over the system models, with inputs of their own: name -> (module, one-line help).
TOOLS = {
    "sweep": ("model.sweep.cli", "design-space sweeps of any model over config fields, "
                                 "policies and seeds, on a local pool or a Dask cluster, "
                                 "resumable; 'sweep report STORE' for tables and plots"),
}

#: Other names of a subcommand (``gpusched sim`` was the dispatcher's first name).
ALIASES = {"dispatch": ["sim"]}

#: Where the shipped scenario files are, relative to the repository root.
CONFIG_ROOT = Path(__file__).resolve().parent.parent / "configs"

#: The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130

#: The exit status of a command stopped by SIGTERM (what a batch system or ``kill`` sends):
#: 128 + SIGTERM. It saves what finished exactly as Ctrl-C does.
TERMINATED = 143

#: Output options of every command: the path is checked before anything runs (a file, or a
#: folder for ``plots``), so a run never ends in "cannot write" after hours.
OUTPUTS = {"json": "a file", "events": "a file", "write_trace": "a file", "csv": "a file",
           "store": "a file", "plots": "a folder"}

_CANONICAL = {name: name for name in (*SUBCOMMANDS, *TOOLS)} | {
    alias: name for name, aliases in ALIASES.items() for alias in aliases}


def default_configs(subcommand: str) -> list[Path]:
    """The shipped scenario files of ``subcommand``, sorted by name."""
    return sorted((CONFIG_ROOT / subcommand).glob("*.toml"))


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer >= 1 (``--cycles 0`` is an error, not an empty run)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, not {value}")
    return value


def select_policies(args, available: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The policies to run per scenario: every one it lists, or those ``--policy`` chose.

    ``available`` maps each scenario (a name or file, as messages should show it) to its
    policies in order. A chosen name that no scenario has is a :class:`ConfigError` listing
    the known ones; a scenario that has none of the chosen policies gets an empty list and is
    recorded in ``args.record`` as skipped, with why (the caller leaves it out).
    """
    chosen = getattr(args, "policy", None)
    if not chosen:
        return {scenario: list(names) for scenario, names in available.items()}
    known = list(dict.fromkeys(name for names in available.values() for name in names))
    for name in chosen:
        if name not in known:
            raise ConfigError(f"--policy {name!r} is not a policy of the scenarios given "
                              f"(known: {', '.join(known)})")
    selection = {}
    for scenario, names in available.items():
        selection[scenario] = [name for name in names if name in chosen]
        if not selection[scenario] and getattr(args, "record", None) is not None:
            args.record.skip(str(scenario), f"none of --policy {', '.join(chosen)} is among "
                                            f"its policies ({', '.join(names)})")
    return selection


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block), status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def add_claims_options(parser: argparse.ArgumentParser) -> None:
    """``--claims`` / ``--no-claims`` of a command that judges its seed's claims over seeds.
    Both default to absent (``argparse.SUPPRESS``), so the JSON's ``options`` of a command line
    that gives neither stay as they were."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--claims", action="store_true", default=argparse.SUPPRESS,
                       help="judge the claims over seeds also with --policy (without --policy "
                            "they are judged unless --no-claims)")
    group.add_argument("--no-claims", action="store_true", default=argparse.SUPPRESS,
                       help="do not judge the claims over seeds")


def wants_claims(args) -> bool:
    """The claims over seeds run by default, but not for ``--policy`` alone (that policy's
    table only, in seconds): ``--claims`` asks for them, ``--no-claims`` never."""
    if getattr(args, "no_claims", False):
        return False
    return bool(getattr(args, "claims", False) or not getattr(args, "policy", None))


CLAIMS_SKIPPED = ("  note: the scenarios' claims were not measured (--policy alone); --claims "
                  "measures them")


def _command_of(argv: Sequence[str]) -> str | None:
    # The subcommand is the first word that is not an option (gpusched has no other options
    # than --help and --version before it).
    for token in argv:
        if not token.startswith("-"):
            return _CANONICAL.get(token)
    return None


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; the options of ``command``'s module are added when it is given."""
    parser = _Parser(
        prog="gpusched", description="One console command for every system model of the project.")
    parser.add_argument("--version", action="version",
                        version=f"gpusched {tool_version() or '(version unknown: not installed)'}",
                        help="print the version (the one every JSON records) and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text,
                                  aliases=ALIASES.get(name, []))
        sub.add_argument("--config", action="append", type=Path, metavar="FILE",
                         help=f"scenario file (repeatable; default: configs/{name}/*.toml)")
        sub.add_argument("--policy", action="append", metavar="NAME",
                         help="run only this policy (repeatable; default: every policy each "
                              "scenario lists)")
        sub.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
        sub.add_argument("--json", type=Path, metavar="OUT",
                         help="write the results as JSON (also on Ctrl-C: what finished)")
        sub.add_argument("--plots", type=Path, default=Path("build/sim"), metavar="DIR",
                         help="where PNG plots go (default build/sim)")
        sub.add_argument("--quick", action="store_true", help="shorter runs and quick plots")
        sub.add_argument("--quiet", action="store_true", help="no progress bar")
        if name == command:
            importlib.import_module(module).add_arguments(sub)
        sub.set_defaults(module=module, command=name)
    for name, (module, help_text) in TOOLS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--json", type=Path, metavar="OUT",
                         help="write the results as JSON (also on Ctrl-C: what finished)")
        sub.add_argument("--quiet", action="store_true", help="no progress bar")
        if name == command:
            importlib.import_module(module).add_arguments(sub)
        sub.set_defaults(module=module, command=name)
    return parser


def _options(args) -> dict:
    return {key: value for key, value in vars(args).items()
            if key not in ("module", "command", "record", "seed")}


class _Terminated:
    """SIGTERM raises ``KeyboardInterrupt`` in the main thread, so every command, sweeps
    included, stops and saves what finished exactly as on Ctrl-C; ``seen`` tells the two apart
    for the exit status and the message."""

    seen = False

    @classmethod
    def handler(cls, signum, frame):
        cls.seen = True
        raise KeyboardInterrupt


def output_problem(path: Path, kind: str) -> str | None:
    """Why ``path`` (``kind``: "a file" or "a folder") cannot be written, or ``None``."""
    path = Path(path)
    if path.exists():
        if kind == "a folder" and not path.is_dir():
            return "is not a folder"
        if kind == "a file" and path.is_dir():
            return "is a folder, not a file"
        if not os.access(path, os.W_OK):
            return "is not writable"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot be created: {parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: {parent} is not writable"
    return None


def _check_outputs(args) -> None:
    for name, kind in OUTPUTS.items():
        path = getattr(args, name, None)
        if isinstance(path, (str, Path)):
            problem = output_problem(Path(path), kind)
            if problem:
                option = "--" + name.replace("_", "-")
                raise ConfigError(f"{option} {path}: {problem} (checked before the run; "
                                  f"{option} names {kind})")


def _interrupted(args, record: RunRecord, detail: str = "") -> int:
    if args.json is not None:
        record.write(args.json, interrupted=True)
        where = f"wrote the {record.runs_finished} finished runs to {args.json}"
    else:
        where = f"{record.runs_finished} runs had finished (no --json given)"
    detail = f"{detail}; " if detail else ""
    how = "terminated (SIGTERM)" if _Terminated.seen else "interrupted"
    print(f"gpusched {args.command}: {how}; {detail}{where}", file=sys.stderr)
    return TERMINATED if _Terminated.seen else INTERRUPTED


def main(argv=None) -> int:
    """Run one command; its exit status (0, 2 for bad input, 130 on Ctrl-C, 143 on SIGTERM)."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    _Terminated.seen = False
    previous = signal.signal(signal.SIGTERM, _Terminated.handler)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = _parser(_command_of(argv)).parse_args(argv)
    except KeyboardInterrupt:
        return INTERRUPTED
    module = importlib.import_module(args.module)
    given = getattr(args, "config", None) is not None
    if args.command in SUBCOMMANDS and args.config is None:
        args.config = default_configs(args.command)
    record = args.record = RunRecord(args.command, argv=argv, seed=getattr(args, "seed", None),
                                     options=_options(args))
    args.config_given = given         # after the record: not one of the recorded options
    for path in getattr(args, "config", None) or ():
        record.input_file(path)
    try:
        _check_outputs(args)
        with quick_figures(getattr(args, "quick", False)):
            status = module.run(args)
        if args.json is not None:
            record.write(args.json)
    except KeyboardInterrupt as stop:
        return _interrupted(args, record, " ".join(map(str, stop.args)))
    except ConfigError as error:
        print(f"gpusched {args.command}: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        # A path given on the command line (or named in a scenario) that cannot be read or
        # written: a directory where a file is expected, no permission, a full disk.
        where = f"{error.filename}: " if error.filename else ""
        print(f"gpusched {args.command}: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
