"""The RTL dispatcher's files for ``make verilog BLOCK=dispatcher CONFIG=FILE [POLICY=NAME]``
(``python -m hw.flow.generate --block dispatcher ...``): the build taken from a dispatch
scenario (:func:`dispatcher_shape`), its Verilator waivers (:func:`dispatcher_waivers`), the
typed SystemVerilog wrapper (:func:`dispatcher_systemverilog`) and the port map with every
field's meaning, reset value, handshake rule and configuration address
(:func:`dispatcher_port_map`), all from the same layouts as the RTL (:func:`write_dispatcher`).
"""

import json
import re
import sys
import time
from pathlib import Path

from amaranth._toolchain.yosys import YosysError

from hw.flow.verilog_files import (
    BlockFiles,
    Port,
    _declare,
    _fields,
    _type_name,
    _vector,
    lint,
    ports,
    unwritable,
)

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
            "waves": "waves in the WG, 1 or more (0, or more than any AP holds: refused)",
            "vgpr": "VGPR blocks per wave",
            "sgpr": "SGPR blocks per wave",
            "lds": "LDS blocks of the whole WG",
            "independent": "1: its waves need not start together (embodiment 3 may split it "
                           "into one-wave parts)",
            "barrier": "1: an in-order barrier, dispatched only when no WG of its channel "
                       "runs (builds with barriers only)",
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


def dispatcher_shape(path: Path, policy_name: str | None = None, view_refresh: str = "every"):
    """``(shape, scenario, policy)``: the dispatcher build of scenario ``path``'s GPU, its
    channels and its policy ``policy_name`` (default: the first), its view computed as
    ``view_refresh`` says (:class:`hw.dispatch.DispatcherParams`).

    Raises :class:`model.config.ConfigError` (one line) for a missing policy or one the RTL
    does not build (:func:`hw.flow.dispatch_cosim.policy_unsupported`).
    """
    from hw.dispatch.params import config_writes
    from hw.flow.dispatch_cosim import policy_unsupported, scenario_shape
    from model.config import ConfigError
    from model.dispatch import load_scenario

    scenario = load_scenario(path)
    names = [policy.name for policy in scenario.policies]
    name = names[0] if policy_name is None else policy_name
    if name not in names:
        raise ConfigError(f"{path}: no policy {name!r}; it has "
                          f"{', '.join(repr(n) for n in names)}")
    policy = scenario.policies[names.index(name)]
    reason = policy_unsupported(policy)
    if reason:
        raise ConfigError(f"{path}: policy {name!r}: {reason}")
    try:
        shape = scenario_shape(scenario, policy, pad=False, view_refresh=view_refresh)
    except (TypeError, ValueError) as error:      # the GPU's, named by its field
        raise ConfigError(f"{path}: {error}") from None
    try:
        # Every parameter checked before anything is built, and the policy's values against
        # the registers that hold them (a window or split threshold of 2^16 or more was a
        # traceback from the port map, after the .v, .vlt and .sv had been written).
        config_writes(shape.params, policy, _wave_powers(scenario.gpu, scenario.channels),
                      scenario.gpu)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{path}: policy {name!r}: {error}") from None
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


#: The width warnings of the dispatcher's own modules that the source cannot avoid, each a
#: Verilog idiom of Amaranth's back end, waived by its message only (the width, comparison
#: and case warnings that the source caused are fixed there: hw/dispatch/logic.py's
#: width-safe helpers), with why.
DISPATCHER_IDIOMS = {
    ("WIDTHTRUNC", "*Assign RHS's SHIFTR generates*"):
        "a part select at a variable offset (Amaranth's bit_select and word_select: the "
        "word of the picked channel, AP or priority) is written as 'x >> offset' assigned "
        "to a wire of the part's width; Verilog keeps the low bits, which are the part",
    ("WIDTHEXPAND", "*Operator MODDIV expects * bits on the RHS, but RHS's CONST*"):
        "embodiment 1's random tie-break takes the LFSR modulo the tie count k, a constant "
        "that the back end writes at its own width ('lfsr_next % 2'h3'), whatever width "
        "the source gives it; Verilog zero-extends it, which is the value meant",
}

#: The lint rules the dispatcher's own modules still break (not the free-block circuits,
#: which are clean) by line range, with why they are waived rather than fixed.
DISPATCHER_RULES = {
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
    lines.append("// Verilog idioms of Amaranth's back end in the dispatcher's own modules, by "
                 "message:")
    for (rule, message), why in DISPATCHER_IDIOMS.items():
        lines.append(f"// {rule}: {why}.")
        lines.append(f'lint_off -rule {rule} -file "*{name}.v" -match "{message}"')
    lines.append("// The dispatcher's own modules (lines 1 to "
                 f"{library - 1}; the free-block circuits after them are lint clean):")
    for rule, why in DISPATCHER_RULES.items():
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
    # Every text before the first file, so that an error leaves no part of the set.
    texts = (text, dispatcher_waivers(name, text), dispatcher_systemverilog(name, port_list),
             json.dumps(dispatcher_port_map(shape, port_list, policy, gpu, channels),
                        indent=1) + "\n")
    for path, content in zip((files.verilog, files.waivers, files.systemverilog,
                              files.port_map), texts, strict=True):
        path.write_text(content)
    return files


def _main_dispatcher(parser, args) -> int:
    from hw.dispatch.params import history_note
    from model.config import ConfigError

    if args.block != "dispatcher":
        parser.error("--config, --policy and --view-refresh go with --block dispatcher")
    if args.config is None:
        parser.error("--block dispatcher needs --config FILE (a dispatch scenario)")
    try:
        shape, scenario, policy = dispatcher_shape(args.config, args.policy,
                                                   args.view_refresh or "every")
    except (ConfigError, ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    problem = unwritable(args.out)
    if problem:
        parser.error(f"--out: {problem}")
    gpu = shape.gpu
    print(f"{args.config} / {policy.name}: {gpu.aps} APs x {gpu.peus} PEUs x "
          f"{len(shape.channels)} channels, {policy.circuit} circuit, latency "
          f"{policy.circuit_latency}, decision pipeline {policy.decision_pipeline}"
          f"{', view of the changed APs' if shape.view_refresh == 'changed' else ''}", flush=True)
    if history_note(policy):        # as make cosim says it: the build keeps the average
        print(f"note: {history_note(policy)}", flush=True)
    start = time.perf_counter()
    what = f"{gpu.aps} APs x {gpu.peus} PEUs x {len(shape.channels)} channels dispatcher"
    try:
        files = write_dispatcher(shape, args.out, policy, scenario.gpu, scenario.channels)
    except KeyboardInterrupt:
        print(f"\ninterrupted after {time.perf_counter() - start:.0f} s, before the files were "
              f"written", file=sys.stderr)
        return 130
    except MemoryError:
        # Python's elaboration of a very large build (1,024 APs: after 12 min) before any
        # file is written.
        print(f"error: {args.config}: out of memory after {time.perf_counter() - start:.0f} s "
              f"elaborating the {what}: build fewer APs or channels", file=sys.stderr)
        return 1
    except YosysError as error:
        # Amaranth's own Yosys is WebAssembly (32-bit: at most 4 GiB of memory); a build
        # whose netlist outgrows that ends in a wasm trap and a page of backtrace.
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        cause = next((line for line in reversed(lines) if "trap" in line or "memory" in line),
                     lines[-1] if lines else "no message")
        print(f"error: {args.config}: Amaranth's Yosys stopped converting the {what} to "
              f"Verilog after {time.perf_counter() - start:.0f} s ({cause}); it runs as "
              f"WebAssembly with at most 4 GiB of memory, which a build this size outgrows (the "
              f"default 16 x 4 x 4 converts): build fewer APs or channels", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    status = ""
    if args.lint:
        lint_start = time.perf_counter()
        try:
            result = lint(files.verilog, files.waivers, files.systemverilog,
                          top=f"{shape.name}_wrapper")
        except KeyboardInterrupt:
            print(f"\ninterrupted after {time.perf_counter() - lint_start:.0f} s of lint: "
                  f"{files.verilog} (+ .vlt .sv .json) written, not linted", file=sys.stderr)
            return 130
        status = (f"lint clean ({time.perf_counter() - lint_start:.0f} s)"
                  if result.returncode == 0 else "LINT FAILED")
        if result.returncode:
            sys.stderr.write(result.stdout + result.stderr)
    size = files.verilog.stat().st_size // 1024
    print(f"{files.verilog} (+ .vlt .sv .json; {size} KiB, {elapsed:.1f} s)  {status}")
    return 1 if status == "LINT FAILED" else 0
