"""``gpusched``: one console command for every system model.

Each subcommand lives in its model's module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; this file only names them, so ``gpusched --help`` stays fast (a module
is imported when its subcommand runs). Options every subcommand has:

``--config FILE`` (repeatable; default: every ``configs/<subcommand>/*.toml``),
``--seed S``, ``--json OUT``, ``--plots DIR`` (default ``build/sim``), ``--quick`` (shorter
runs, as the tests use) and ``--quiet`` (no progress bar).

A configuration error prints its message (which names the file and field) and exits with
status 2.
"""

import argparse
import importlib
import sys
from pathlib import Path

from model.config import ConfigError

__all__ = ["ALIASES", "CONFIG_ROOT", "SUBCOMMANDS", "default_configs", "main"]

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
    "cluster": ("model.cluster", "the seed-004 power-aware placement against spread, "
                                 "bin-packing and random"),
}

#: Other names of a subcommand (``gpusched sim`` was the dispatcher's first name).
ALIASES = {"dispatch": ["sim"]}

#: Where the shipped scenario files are, relative to the repository root.
CONFIG_ROOT = Path(__file__).resolve().parent.parent / "configs"


def default_configs(subcommand: str) -> list[Path]:
    """The shipped scenario files of ``subcommand``, sorted by name."""
    return sorted((CONFIG_ROOT / subcommand).glob("*.toml"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpusched", description="One console command for every system model of the project.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text,
                                  aliases=ALIASES.get(name, []))
        sub.add_argument("--config", action="append", type=Path, metavar="FILE",
                         help=f"scenario file (repeatable; default: configs/{name}/*.toml)")
        sub.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
        sub.add_argument("--json", type=Path, metavar="OUT", help="write the results as JSON")
        sub.add_argument("--plots", type=Path, default=Path("build/sim"), metavar="DIR",
                         help="where PNG plots go (default build/sim)")
        sub.add_argument("--quick", action="store_true", help="shorter runs")
        sub.add_argument("--quiet", action="store_true", help="no progress bar")
        sub.set_defaults(module=module, command=name)
    return parser


def main(argv=None) -> int:
    parser = _parser()
    # Subcommand-specific options are parsed by the module itself.
    args, rest = parser.parse_known_args(argv)
    module = importlib.import_module(args.module)
    extra = argparse.ArgumentParser(prog=f"gpusched {args.command}", add_help=False)
    module.add_arguments(extra)
    extra.parse_args(rest, namespace=args)
    if args.config is None:
        args.config = default_configs(args.command)
    try:
        return module.run(args)
    except ConfigError as error:
        print(f"gpusched {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
