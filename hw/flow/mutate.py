"""Check the checks: apply each deliberate bug of ``tests/mutants/`` and see which tier kills it.

Every ``tests/mutants/<block>_<name>.patch`` is a plausible designer's slip, a unified diff
against the repository (its first paragraph says what the slip is). For each, this driver
copies the committed tree (``git archive HEAD``) to a scratch directory under the system's
temporary folder, applies the patch with ``git apply``, and runs the tiers of its block --
``TIERS[block]``, cheapest first -- in that copy, with this interpreter (the scratch copy's
packages come first on ``PYTHONPATH``). The first tier that fails kills the mutant and the
later ones are not run. A tier that stops without a verdict -- its time limit, or a proof
that timed out (``TIMEOUT`` or ``UNKNOWN`` in the formal summary) with no job failing -- kills
nothing: it is noted and the next tier runs; a mutant no tier kills after such a tier is
"undecided", not "survived" (a loaded machine once "killed" a mutant by a proof's 600 s
limit). It prints a kill table (mutant, killed by which tier, seconds) and writes it as JSON.

The unmutated tree is run through every tier first (``--no-baseline`` skips that): a tier
that fails without a bug would "kill" everything, and the driver stops with that tier named.
A patch that does not apply is reported as such, never as killed.

Blocks: ``arbiter``, ``maxblock`` (the free-block circuits) and ``dispatch``; a new block's
patches are named ``<block>_<name>.patch`` and need an entry in :data:`TIERS`.

Usage::

    python -m hw.flow.mutate                     # every mutant
    python -m hw.flow.mutate -k arbiter_         # the mutants whose name contains this
    python -m hw.flow.mutate --check             # only check that every patch applies
    python -m hw.flow.mutate --json build/mutants.json

Not part of ``make test`` (about an hour of CPU); ``tests/test_formal_sby.py`` checks that
every patch applies and names a block with tiers.
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["MUTANT_DIR", "TIERS", "Mutant", "apply_patch", "block_of", "mutants", "main"]

ROOT = Path(__file__).resolve().parents[2]
MUTANT_DIR = ROOT / "tests" / "mutants"
_PYTEST = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:xdist", "-p", "no:cacheprovider"]
_FORMAL = [sys.executable, "-m", "hw.flow.formal_sby", "-x"]

#: Per block, its tiers in order, cheapest first as measured on the unmutated tree (the
#: formal jobs of a block take 15 s to 2 min; the Amaranth-simulator tests 1-5 min; the cocotb
#: benches build Verilator first): (tier name, command run in the scratch copy).
TIERS: dict[str, list[tuple[str, list[str]]]] = {
    "arbiter": [
        # (--quick: not the deficit variant's response proof, minutes of k-induction on a
        # variant the patches do not reach first)
        ("formal", _FORMAL + ["--quick", "-k", "arbiter."]),
        ("sim", _PYTEST + ["tests/test_arbiter_sim.py"]),
        ("cocotb", _PYTEST + ["tests/test_cocotb_arbiter.py", "-k",
                              "matches_model and verilator and (t4_c2 or t8_c3_f8)"]),
    ],
    "maxblock": [
        ("formal", _FORMAL + ["-k", "maxblock."]),
        ("sim", _PYTEST + ["tests/test_maxblock_sim.py", "-k",
                           "exact or stalls or wrong_model"]),
        ("equivalence", _PYTEST + ["tests/test_formal.py", "-k", "exact"]),
        ("cocotb", _PYTEST + ["tests/test_cocotb_maxblock.py", "-k",
                              "matches_model and verilator and exactmaxfreeblock"
                              " and (n12 or n16 or n40)"]),
    ],
    # The dispatcher: its quick proofs (11-34 s each), then the fast RTL tier (the RTL under
    # Amaranth's simulator against the model, every shape but small_l2, ~4 min). Not its
    # cocotb tier: a Verilator build per shape costs minutes, and the fast tier drives the
    # same bench.
    "dispatch": [
        ("formal", _FORMAL + ["--quick", "-k", "dispatch."]),
        ("sim", _PYTEST + ["tests/test_dispatch_rtl_sim.py", "-k", "under_amaranth"]),
    ],
}


@dataclass
class Mutant:
    name: str
    block: str
    path: Path
    slip: str                   # the patch's first paragraph


@dataclass
class Outcome:
    mutant: str
    block: str
    killed_by: str              # a tier's name, "survived", "undecided", "does not apply"
    detail: str
    seconds: float


def block_of(name: str) -> str:
    """The block a mutant belongs to: its name up to the first ``_``."""
    return name.split("_", 1)[0]


def mutants(keyword: str | None = None, directory: Path = MUTANT_DIR) -> list[Mutant]:
    """Every patch of ``directory`` (whose name contains ``keyword``), sorted by name."""
    found = []
    for path in sorted(directory.glob("*.patch")):
        name = path.stem
        if keyword and keyword not in name:
            continue
        slip = path.read_text().split("\n\n", 1)[0].strip()
        found.append(Mutant(name, block_of(name), path, slip))
    return found


def _scratch_tree(parent: Path) -> Path:
    """The committed tree (``git archive HEAD``) unpacked under ``parent``."""
    base = parent / "base"
    base.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    return base


def apply_patch(patch: Path, tree: Path) -> str | None:
    """Apply ``patch`` in ``tree``; None when it applied, else git's complaint."""
    done = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree,
                          capture_output=True, text=True)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[0]


#: A formal summary row whose job ended without a verdict (``hw.flow.formal_sby``'s table).
_NO_VERDICT = re.compile(r"^\S+\s.*\s(TIMEOUT|UNKNOWN)\s+\d+\.\d", re.MULTILINE)
_VERDICT_FAILED = re.compile(r"^\S+\s.*\s(FAIL|ERROR)\s+\d+\.\d", re.MULTILINE)


def _run_tier(command: list[str], tree: Path, log: Path,
              timeout: float) -> tuple[bool | None, str]:
    """Run one tier in ``tree``; (passed, a line about it), passed None when the tier gave no
    verdict (it ran out of time, or a proof timed out and none failed). Its output goes to
    ``log``."""
    env = {**__import__("os").environ, "PYTHONPATH": str(tree)}
    try:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        log.write_text(f"timed out after {timeout:.0f} s\n")
        return None, f"timed out after {timeout:.0f} s"
    output = done.stdout + done.stderr
    log.write_text(" ".join(command) + "\n\n" + output)
    lines = [line for line in output.splitlines() if line.strip()]
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))
              or " unexpected" in line or "as expected" in line]
    summary = failed[0] if failed else (lines[-1] if lines else "")
    if done.returncode != 0 and _NO_VERDICT.search(output) \
            and not _VERDICT_FAILED.search(output):
        row = _NO_VERDICT.search(output)
        return None, f"no verdict: {row[0].split()[0]} {row[1]}"
    return done.returncode == 0, summary.strip()[:140]


def run(selected: list[Mutant], *, baseline=True, timeout=1800.0, keep=None, echo=print):
    """Run ``selected``; the list of :class:`Outcome` (the baseline's first, if run)."""
    outcomes = []
    parent = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="gpusched-mutants-"))
    parent.mkdir(parents=True, exist_ok=True)
    try:
        base = _scratch_tree(parent) if not (parent / "base").exists() else parent / "base"
        blocks = sorted({m.block for m in selected})
        unknown = [b for b in blocks if b not in TIERS]
        if unknown:
            raise SystemExit(f"mutate: no tiers for block(s) {', '.join(unknown)}; "
                             f"add them to hw.flow.mutate.TIERS")
        if baseline:
            for block in blocks:
                for tier, command in TIERS[block]:
                    start = time.monotonic()
                    passed, line = _run_tier(command, base, parent / f"baseline_{block}_"
                                             f"{tier}.log", timeout)
                    echo(f"baseline {block:<9} {tier:<12} "
                         f"{ {True: 'passes', False: 'FAILS', None: 'NO VERDICT'}[passed]}"
                         f" ({time.monotonic() - start:.0f} s)")
                    if not passed:
                        raise SystemExit(f"mutate: tier {tier!r} of {block} fails on the "
                                         f"unmutated tree ({line}); fix that first")
        for mutant in selected:
            tree = parent / mutant.name
            if tree.exists():
                shutil.rmtree(tree)
            shutil.copytree(base, tree, symlinks=True,
                            ignore=shutil.ignore_patterns("build", "__pycache__"))
            start = time.monotonic()
            problem = apply_patch(mutant.path, tree)
            if problem:
                outcome = Outcome(mutant.name, mutant.block, "does not apply", problem, 0.0)
            else:
                outcome = Outcome(mutant.name, mutant.block, "survived", "", 0.0)
                undecided = []
                for tier, command in TIERS[mutant.block]:
                    passed, line = _run_tier(command, tree, tree / f"tier_{tier}.log",
                                             timeout)
                    if passed is None:
                        undecided.append(f"{tier}: {line}")
                    elif not passed:
                        outcome.killed_by, outcome.detail = tier, line
                        break
                if undecided:
                    outcome.detail = "; ".join(undecided + [outcome.detail]).strip("; ")
                    if outcome.killed_by == "survived":
                        outcome.killed_by = "undecided"
                outcome.seconds = time.monotonic() - start
                if outcome.killed_by not in ("survived", "undecided"):
                    # Keep the killing tier's log beside the scratch trees, drop the tree.
                    log = tree / f"tier_{outcome.killed_by}.log"
                    if log.exists():
                        shutil.copy(log, parent / f"{mutant.name}.{outcome.killed_by}.log")
                    shutil.rmtree(tree, ignore_errors=True)
            echo(_row(outcome))
            outcomes.append(outcome)
    except KeyboardInterrupt:
        echo("mutate: interrupted; the mutants that finished are above")
    finally:
        if not keep:
            shutil.rmtree(parent, ignore_errors=True)
    return outcomes


def _row(outcome: Outcome) -> str:
    return (f"{outcome.mutant:<40} {outcome.killed_by:<14} {outcome.seconds:6.0f}  "
            f"{outcome.detail}")


def table(outcomes: list[Outcome]) -> str:
    lines = [f"{'mutant':<40} {'killed by':<14} {'seconds':>6}", "-" * 64]
    lines += [_row(outcome) for outcome in outcomes]
    ran = [o for o in outcomes if o.killed_by not in ("does not apply", "undecided")]
    killed = [o for o in ran if o.killed_by != "survived"]
    undecided = len([o for o in outcomes if o.killed_by == "undecided"])
    lines.append(f"killed {len(killed)} of {len(ran)}"
                 + (f" ({100 * len(killed) / len(ran):.0f} %)" if ran else "")
                 + (f"; {undecided} undecided (no tier gave a verdict)" if undecided else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hw.flow.mutate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="keyword", help="only mutants whose name contains this")
    parser.add_argument("--check", action="store_true",
                        help="only check that every patch applies to HEAD")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the tiers on the unmutated tree")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per tier")
    parser.add_argument("--keep", type=Path, help="scratch directory to use and keep")
    parser.add_argument("--json", type=Path, help="write the outcomes here")
    args = parser.parse_args(argv)
    selected = mutants(args.keyword)
    if not selected:
        print(f"mutate: no patch in {MUTANT_DIR} matches {args.keyword!r}", file=sys.stderr)
        return 2
    if args.check:
        with tempfile.TemporaryDirectory(prefix="gpusched-mutants-") as parent:
            base = _scratch_tree(Path(parent))
            bad = 0
            for mutant in selected:
                problem = apply_patch(mutant.path, base)
                if problem is None:
                    subprocess.run(["git", "apply", "-R", str(mutant.path)], cwd=base,
                                   check=True, capture_output=True)
                missing = mutant.block not in TIERS
                bad += bool(problem) or missing
                print(f"{mutant.name:<40} "
                      + (problem or ("no tiers for its block" if missing else "applies")))
        return 1 if bad else 0
    outcomes = run(selected, baseline=not args.no_baseline, timeout=args.timeout,
                   keep=args.keep, echo=lambda line: print(line, flush=True))
    print()
    print(table(outcomes))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
