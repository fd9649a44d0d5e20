"""The arbiter's Verilog passes ``verilator --lint-only -Wall`` with only the waivers that ship
beside it (``hw/flow/lint.vlt``): no width, unused-signal or case warning on any of a spread
of parameter sets (decay or not, both tie rules, odd slot and class counts, one slot, a wide
``W``, a long-memory table)."""

import shutil
import subprocess

import pytest
from amaranth.back import verilog

from hw.arbiter import ArbiterConfig
from hw.flow.runner import use_packaged_verilator

WAIVERS = "hw/flow/lint.vlt"

LINTED = (
    ArbiterConfig(),
    ArbiterConfig(4, 2, 0, tie_break="index"),
    ArbiterConfig(5, 3, 16, ((1, 4096), (3, 2048), (8, 256), (256, 64))),
    ArbiterConfig(6, 3, 0, decay=False),
    ArbiterConfig(8, 3, 0, tie_break="index", decay=False, weight_bits=12),
    ArbiterConfig(1, 1, 8),
    ArbiterConfig(11, 5, 3, tie_break="history", decay=False),
)


@pytest.fixture(scope="module")
def verilator() -> str:
    use_packaged_verilator()
    found = shutil.which("verilator")
    if found is None:
        pytest.skip("Verilator is missing: install the project with `make venv`")
    return found


@pytest.mark.parametrize("config", LINTED, ids=[config.name for config in LINTED])
def test_arbiter_lints_clean(config, verilator, tmp_path, request):
    path = tmp_path / f"{config.name}.v"
    path.write_text(verilog.convert(config.component(), name=config.name, emit_src=False))
    waivers = request.config.rootpath / WAIVERS
    run = subprocess.run([verilator, "--lint-only", "-Wall", str(waivers), str(path)],
                         capture_output=True, text=True)
    warnings = [line for line in (run.stdout + run.stderr).splitlines()
                if line.startswith("%Warning") or line.startswith("%Error")]
    assert run.returncode == 0 and warnings == [], "\n".join(warnings[:20])
