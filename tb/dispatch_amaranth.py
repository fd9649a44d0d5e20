"""The dispatcher's co-simulation bench under Amaranth's own simulator (no HDL simulator).

The same drivers as the cocotb bench (``tb/test_dispatch.py``): :class:`tb.dispatch_bench.
CosimDriver` (clock for clock against the model, with the protocol checker) and
:class:`tb.dispatch_bench.RandomDriver` (the protocol checker alone); only the port access
differs. cocotb reads and writes handles by their Verilog names (``wg_in__0__payload``);
here :func:`ports` maps the same dotted names (``wg_in.0.payload``) to the component's
signals, and :func:`simulate` runs one clock as the module docstring of
``tb/dispatch_bench.py`` says: read the registered outputs, drive the inputs, read every
(settled) output, then the clock edge. ``tests/test_dispatch_rtl_sim.py`` is the fast tier
that uses it.
"""

from amaranth.hdl import ClockDomain, Module, Value
from amaranth.sim import Simulator

from tb.dispatch_bench import input_ports, output_ports

__all__ = ["REGISTERED", "ports", "simulate"]

#: The registered outputs a driver reads at the start of a clock, before it drives.
REGISTERED = ("dispatch.valid", "dispatch.payload")


def _port(component, name: str) -> Value:
    target = component
    for part in name.split("."):
        target = target[int(part)] if part.isdigit() else getattr(target, part)
    return Value.cast(target)


def ports(component, params) -> tuple[dict, dict]:
    """``(inputs, outputs)``: the component's signals by the bench's dotted port names."""
    return ({name: _port(component, name) for name in input_ports(params)},
            {name: _port(component, name) for name in output_ports(params)})


def simulate(component, params, drivers, *, reset_clocks: int = 2) -> int:
    """Run each driver of ``drivers`` to its end on ``component`` (a
    :class:`hw.dispatch.Dispatcher` or a variant of it), with ``reset_clocks`` clocks of reset
    before each (the cocotb bench's two); returns the clocks simulated."""
    top = Module()
    top.submodules.dut = component
    top.domains.sync = domain = ClockDomain()
    inputs, outputs = ports(component, params)
    clocks = [0]

    async def bench(ctx):
        for driver in drivers:
            ctx.set(domain.rst, 1)
            for signal in inputs.values():
                ctx.set(signal, 0)
            for _ in range(reset_clocks):
                await ctx.tick()
            ctx.set(domain.rst, 0)
            while not driver.done:
                registered = {name: ctx.get(outputs[name]) for name in REGISTERED}
                for name, value in driver.inputs(registered).items():
                    ctx.set(inputs[name], value)
                driver.outputs({name: ctx.get(signal) for name, signal in outputs.items()})
                clocks[0] += 1
                await ctx.tick()

    simulator = Simulator(top)
    simulator.add_clock(1e-8)
    simulator.add_testbench(bench)
    simulator.run()
    return clocks[0]
