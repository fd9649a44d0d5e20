"""Verilog, SystemVerilog wrappers and port maps of the blocks: ``python -m hw.flow.generate``.

For each block this writes, into ``--out`` (default ``build/verilog``):

``<name>.v``
    The block as Amaranth writes it, with no ``top`` attribute (read together with a user's
    own design, Yosys keeps the user's top).
``<name>.vlt``
    Its Verilator waivers, which waive only what Amaranth's Verilog style gives every design:
    registers declared with their power-on value (``PROCASSINIT``), the modules of submodules
    named ``<name>.<path>`` in the same file (``DECLFILENAME``), the back end's unnamed
    temporaries (``$123``) that it left unread or reads in part, and, by exact name, the field
    names Amaranth declares for each structured port for waveforms (``status.vgpr``), which
    nothing reads. No named signal of a block is waived: ``verilator --lint-only -Wall
    <name>.vlt <name>.v`` passes on every block.
``<name>.sv``
    A packed struct (or enum) type per structured port, ``<name>_<port>_t``, and a wrapper
    module ``<name>_wrapper`` with the same ports, typed: ``status.vgpr`` instead of
    ``status[127:0]``. The types are declared in the compilation unit, named after the block
    and guarded against a second inclusion, rather than in a package: Icarus 11 (Debian's, the
    one CI runs) fails an internal assertion on any struct in a package.
``<name>.json``
    The port map: every port (direction, width, SystemVerilog type) and every field in it
    (name, bit offset, width; enum values), for tools that cannot read the package.

The types, the wrapper and the port map are generated from the same ``amaranth.lib.data``
layouts as the block's ports.

Without ``--block`` it writes every block of :data:`hw.flow.catalog.VERILOG_DEFAULTS`; with
``--block`` one block, with the parameters given::

    python -m hw.flow.generate --block exact -n 64 --latency 1 --lint
    python -m hw.flow.generate --block grouped -n 128 --groups 32 --latency 3
    python -m hw.flow.generate --block sampled -n 128 --samples noprimes
    python -m hw.flow.generate --block shared --exact --schedule "vgpr:128/sgpr:64,lds:48"
    python -m hw.flow.generate --block arbiter --tasks 8 --classes 3
    python -m hw.flow.generate --block dispatcher --config configs/dispatch/default.toml

(``make verilog BLOCK=exact N=64 LATENCY=1`` runs the first.) The RTL dispatcher is built from a
dispatch scenario's GPU, channels and one of its policies (``--policy NAME``, default the
first): ``<name>.v`` holds the dispatcher's modules and, once each, the free-block circuits it
instantiates; its port map also gives every field's meaning, the reset values, the handshake
rules and the configuration port's addresses (:func:`dispatcher_port_map`). With ``--lint``
every file is checked with ``verilator --lint-only -Wall`` and its waivers; any warning fails
the run.
"""

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from hw.dispatch.params import VIEW_REFRESHES
from hw.flow.catalog import KINDS, VERILOG_DEFAULTS, ArbiterConfig, BlockConfig, SharedConfig
from hw.flow.generate_dispatcher import (  # re-exported: the dispatcher's part of make verilog
    CONFIG_REGISTERS,
    DISPATCHER_RESET,
    DISPATCHER_SIGNALS,
    DISPATCHER_STREAMS,
    _main_dispatcher,
    dispatcher_port_map,
    dispatcher_shape,
    dispatcher_systemverilog,
    dispatcher_waivers,
    write_dispatcher,
)
from hw.flow.verilog_files import (  # re-exported: the files of every block
    BlockFiles,
    Port,
    lint,
    port_map,
    ports,
    systemverilog,
    unwritable,
    use_packaged_verilator,
    verilog_text,
    waivers,
    write_verilog,
)
from model.maxblock import SharedSchedule, default_samples

__all__ = ["CONFIG_REGISTERS", "DISPATCHER_RESET", "DISPATCHER_SIGNALS", "DISPATCHER_STREAMS",
           "BlockFiles", "Port", "block_kind", "dispatcher_port_map", "dispatcher_shape",
           "dispatcher_systemverilog", "dispatcher_waivers", "lint", "main", "ports",
           "write_dispatcher", "port_map", "systemverilog", "use_packaged_verilator",
           "verilog_text", "waivers", "write_block", "write_verilog"]


def block_kind(config) -> str:
    """``full``, ``grouped``, ``sampled``, ``exact``, ``shared`` or ``arbiter``."""
    if isinstance(config, BlockConfig):
        return config.kind
    return "shared" if isinstance(config, SharedConfig) else "arbiter"


def write_block(config, directory: Path) -> BlockFiles:
    """Write the Verilog, waivers, SystemVerilog wrapper and port map of ``config``."""
    directory.mkdir(parents=True, exist_ok=True)
    component = config.component()
    text = verilog_text(component, config.name)
    port_list = ports(component.signature, text, config.name)
    files = BlockFiles(*(directory / f"{config.name}{suffix}"
                         for suffix in (".v", ".vlt", ".sv", ".json")))
    files.verilog.write_text(text)
    files.waivers.write_text(waivers(config, text, port_list))
    files.systemverilog.write_text(systemverilog(config, port_list))
    files.port_map.write_text(json.dumps(port_map(config, port_list), indent=1) + "\n")
    return files


# -- the command line ------------------------------------------------------------------------------

def _schedule(text: str, width: int | None) -> SharedSchedule:
    """``vgpr:128/sgpr:64,lds:48``: periods split by ``/``, types by ``,``."""
    try:
        periods = tuple(tuple((name.strip(), int(size)) for name, size in
                              (entry.split(":") for entry in period.split(",")))
                        for period in text.split("/"))
    except ValueError:
        raise ValueError(f"Schedule must read like vgpr:128/sgpr:64,lds:48 (periods split by "
                         f"'/', types by ',', each name:size), not {text!r}") from None
    return SharedSchedule(periods, width if width is not None else
                          max(sum(size for _, size in period) for period in periods))


def _samples(text: str, n: int) -> tuple[int, ...]:
    if text == "default":
        return tuple(default_samples(n))
    if text == "noprimes":
        return tuple(default_samples(n, exclude_primes=True))
    try:
        return tuple(int(item) for item in text.split(","))
    except ValueError:
        raise ValueError(f"Samples must be 'default', 'noprimes' or a comma-separated list of "
                         f"k values, not {text!r}") from None


#: The blocks each block option applies to (option: (argument name, blocks)); any other
#: block, and no ``--block`` (every block at its defaults), refuses it rather than ignore it.
OPTION_BLOCKS = {
    "-n": ("n", tuple(KINDS)),
    "--latency": ("latency", tuple(KINDS)),
    "--free-level": ("free_level", (*KINDS, "shared")),
    "--groups": ("groups", ("grouped",)),
    "--samples": ("samples", ("sampled",)),
    "--exact": ("exact", ("shared",)),
    "--schedule": ("schedule", ("shared",)),
    "--width": ("width", ("shared",)),
    **{option: (option[2:].replace("-", "_"), ("arbiter",))
       for option in ("--tasks", "--classes", "--frac-bits", "--tie-break", "--decay",
                      "--weight-bits")},
}


def misplaced_option(args) -> str | None:
    """The first option given that ``args.block`` does not read, as an error message."""
    for option, (name, blocks) in OPTION_BLOCKS.items():
        if getattr(args, name) not in (None, False) and args.block not in blocks:
            where = (f", not with --block {args.block}" if args.block is not None else
                     " (without --block every block is written with its defaults)")
            return f"{option} goes with --block {' or '.join(blocks)}{where}"
    return None


def _flag(text: str) -> bool:
    """``--decay``: 1, true or yes; 0, false or no."""
    value = text.lower()
    if value not in ("1", "true", "yes", "0", "false", "no"):
        raise argparse.ArgumentTypeError(f"must be 1, true, yes, 0, false or no, not {text!r}")
    return value in ("1", "true", "yes")


def _config_path(text: str) -> Path:
    """``--config``: a path; an empty one (``make verilog CONFIG=``) is not the current
    directory, which ``Path("")`` would be."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty (make verilog CONFIG=): give a dispatch "
                                         "scenario's TOML file "
                                         "(configs/dispatch/*.toml)")
    return Path(text)


def config_from_arguments(args) -> object:
    """The block that the command-line arguments describe (``--block`` and its options)."""
    free_level = 1 if args.free_level is None else args.free_level
    if args.block in KINDS:
        n = 128 if args.n is None else args.n
        extra = {}
        if args.block == "grouped":
            extra["groups"] = args.groups if args.groups is not None else max(n // 4, 1)
        if args.block == "sampled":
            extra["samples"] = _samples("default" if args.samples is None else args.samples, n)
        latency = 1 if args.latency is None else args.latency
        return BlockConfig(args.block, n, free_level, latency, **extra)
    if args.block == "shared":
        if args.schedule is not None:
            schedule = _schedule(args.schedule, args.width)
        else:   # the seed's periods, in a unit --width wide when it is given
            schedule = SharedSchedule(**({} if args.width is None else {"width": args.width}))
        return SharedConfig(schedule, free_level, args.exact)
    fields = {field.name for field in dataclasses.fields(ArbiterConfig)}
    given = {"tasks": args.tasks, "classes": args.classes, "frac_bits": args.frac_bits,
             "tie_break": args.tie_break, "decay": args.decay, "weight_bits": args.weight_bits}
    return ArbiterConfig(**{key: value for key, value in given.items()
                            if value is not None and key in fields})


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block), status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m hw.flow.generate",
        description="Write Verilog, waivers, a SystemVerilog wrapper and a port map per block "
                    "(every block by default, or the one --block describes).")
    parser.add_argument("--out", type=Path, default=Path("build/verilog"),
                        help="directory of the files (default: %(default)s)")
    parser.add_argument("--lint", action="store_true",
                        help="lint each file with verilator --lint-only -Wall and its waivers")
    parser.add_argument("--block", choices=[*KINDS, "shared", "arbiter", "dispatcher"],
                        help="one block: a free-block variant, the shared unit, the arbiter "
                             "or the RTL dispatcher")
    free = parser.add_argument_group("free-block circuits (full, grouped, sampled, exact)")
    free.add_argument("-n", type=int, help="blocks (default 128)")
    free.add_argument("--latency", type=int, help="clocks (default 1)")
    free.add_argument("--free-level", type=int, choices=(0, 1),
                      help="level of a free block (default 1); also for the shared unit")
    free.add_argument("--groups", type=int, help="grouped: group count (default n / 4)")
    free.add_argument("--samples", help="sampled: default, noprimes or k values as 0,1,3,7 "
                                        "(default: default)")
    shared = parser.add_argument_group("shared unit")
    shared.add_argument("--exact", action="store_true", help="the exact tree inside")
    shared.add_argument("--schedule", help="periods split by '/', types by ',', each "
                                           "name:size (default: the seed's "
                                           "vgpr:128/sgpr:64,lds:48)")
    shared.add_argument("--width", type=int, help="unit width (default: the widest period)")
    dispatcher = parser.add_argument_group("RTL dispatcher")
    dispatcher.add_argument("--config", type=_config_path,
                            help="a dispatch scenario (configs/dispatch/*.toml): its GPU, "
                                 "channels and policy")
    dispatcher.add_argument("--policy", help="the scenario's policy (default: its first)")
    dispatcher.add_argument("--view-refresh", choices=VIEW_REFRESHES,
                            help="the view's circuits: every instance's every clock (every, "
                                 "the default) or the changed APs' only (changed)")
    arbiter = parser.add_argument_group("arbiter")
    arbiter.add_argument("--tasks", type=int)
    arbiter.add_argument("--classes", type=int)
    arbiter.add_argument("--frac-bits", type=int)
    arbiter.add_argument("--tie-break")
    arbiter.add_argument("--decay", type=_flag, help="1, true or yes; 0, false or no")
    arbiter.add_argument("--weight-bits", type=int)
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    misplaced = misplaced_option(args)
    if misplaced:
        parser.error(misplaced)
    if args.block == "dispatcher" or any(getattr(args, name) is not None
                                         for name in ("config", "policy", "view_refresh")):
        return _main_dispatcher(parser, args)
    if args.block is None:
        configs = list(VERILOG_DEFAULTS)
    else:
        try:
            configs = [config_from_arguments(args)]
        except (TypeError, ValueError) as error:
            parser.error(str(error))
    problem = unwritable(args.out)
    if problem:
        parser.error(f"--out: {problem}")
    failures = 0
    for config in configs:
        start = time.perf_counter()
        files = write_block(config, args.out)
        elapsed = time.perf_counter() - start
        status = ""
        if args.lint:
            result = lint(files.verilog, files.waivers, files.systemverilog,
                          top=f"{config.name}_wrapper")
            if result.returncode == 0:
                status = "lint clean"
            else:
                status = "LINT FAILED"
                failures += 1
                sys.stderr.write(result.stdout + result.stderr)
        size = files.verilog.stat().st_size // 1024
        print(f"{files.verilog} (+ .vlt .sv .json; {size} KiB, {elapsed:.1f} s)  {status}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
