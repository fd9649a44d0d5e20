"""``make pareto`` (``hw/flow/pareto.py``) without the synthesis tools: the seed's circuit
in embodiment 7's shared unit gives the view the exact tree gives, clock for clock (so the
two rows may share the model's figures); every point is a valid build and policy; the model
side's scenarios, the front and the table."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from hw.dispatch.views import FreeBlockViews
from hw.flow import pareto
from hw.flow.dispatch_build import DispatchShape
from model.dispatch.config import GpuConfig

SMALL = GpuConfig(aps=2, peus=2, vgpr=16, sgpr=8, lds=12, wave_slots=4, priorities=2)


@pytest.mark.parametrize("latency", [1, 2])
def test_the_shared_unit_with_the_seeds_circuit_shows_the_exact_trees_view(latency):
    params = DispatchShape.of(SMALL, pareto.view_policy("shared_seed", latency), 2).params
    m = Module()
    m.submodules.seed = seed = FreeBlockViews(params, shared_circuit="seed")
    m.submodules.exact = exact = FreeBlockViews(params, shared_circuit="exact")
    rng = random.Random(34)
    sizes, counts = params.sizes, params.instances
    compared = []

    async def bench(ctx):
        for _ in range(200):
            for name, n in sizes.items():
                for index in range(counts[name]):
                    # Mostly long runs, sometimes a random word: every run length shows up.
                    word = (rng.getrandbits(n) if rng.random() < 0.3 else
                            ((1 << rng.randint(0, n)) - 1) << rng.randint(0, n // 2))
                    word &= (1 << n) - 1
                    ctx.set(seed.status[name][index], word)
                    ctx.set(exact.status[name][index], word)
            await ctx.tick()
            for name in sizes:
                for index in range(counts[name]):
                    mine = ctx.get(seed.view[name][index])
                    assert mine == ctx.get(exact.view[name][index]), (name, index)
                    compared.append(mine)

    simulator = Simulator(m)
    simulator.add_clock(1e-6)
    simulator.add_testbench(bench)
    simulator.run()
    assert len(set(compared)) > 8          # the views moved: the comparison saw lengths


def test_the_shared_circuit_is_checked():
    params = DispatchShape.of(SMALL, pareto.view_policy("shared_exact", 1), 2).params
    with pytest.raises(ValueError, match="shared_circuit"):
        FreeBlockViews(params, shared_circuit="sampled")


@pytest.mark.parametrize(("view", "latency"), pareto.points())
def test_every_point_is_a_build_of_the_default_gpu(view, latency):
    policy = pareto.view_policy(view, latency)
    params = DispatchShape.of(GpuConfig(), policy, 4).params        # every parameter checked
    assert params.policy.circuit == pareto.VIEWS[view][2]["circuit"]
    # The view's age: the shared unit's answer is registered, so its status is one older.
    shared = policy.circuit == "shared"
    assert policy.circuit_latency + shared == latency
    assert policy.history == "ema"                  # the policy the RTL builds


def test_the_shared_view_has_no_latency_zero():
    with pytest.raises(ValueError, match="one clock old"):
        pareto.view_policy("shared_exact", 0)


def test_the_model_side_runs_each_distinct_view_once_against_the_reference():
    scenarios, left_out = pareto._scenarios()
    reference = pareto.model_point(*pareto.REFERENCE)
    for key, scenario in scenarios.items():
        names = [p.name for p in scenario.policies]
        assert len(names) == len(set(names)) and reference in names and "miaow" in names
        # The full circuit and the seed's shared circuit report what the exact ones do.
        assert not any(name.startswith(("full", "shared_seed")) for name in names)
        for claim in scenario.claims:
            assert claim.baseline == reference and claim.policy in names
        measured = {(c.metric, c.loads) for c in scenario.claims}
        expected = {(m[3], (m[1],)) for m in pareto.MEASURES if m[0] == key}
        assert measured == expected
    # RDNA4 has one SGPR block: no group size divides it, and the table says why.
    assert {p for k, p in left_out if k == "llama"} == {
        "grouped4 L1", "grouped4 L2", "grouped8 L1", "grouped8 L2"}
    assert all("group_size" in why for why in left_out.values())
    assert not [k for k, _ in left_out if k == "default"]


def test_the_claim_rows_are_keyed_in_evaluation_order():
    scenarios, _ = pareto._scenarios()
    keys = pareto._row_keys(scenarios)
    assert len(keys) == sum(len(s.claims) for s in scenarios.values())
    assert keys[0] == ("default", 0.9, "throughput")
    assert keys[-1] == ("llama", "as written", "latency.p99")


def test_the_front_keeps_what_nothing_beats():
    items = [("a", 10, 0.5), ("b", 20, 0.9), ("c", 30, 0.8), ("d", 20, 0.7), ("e", 5, 0.5),
             ("f", 40, 1.0)]
    assert pareto.pareto_front(items) == {"e", "b", "f"}
    # A tie on both is on the front twice: neither beats the other.
    assert pareto.pareto_front([("x", 1, 1.0), ("y", 1, 1.0)]) == {"x", "y"}


def test_the_points_are_every_view_at_every_latency_and_the_deepest_shared_unit():
    found = pareto.points()
    assert found[0] == ("exact", 0) and len(found) == len(set(found))
    assert {(v, lat) for v in pareto.VIEWS for lat in pareto.LATENCIES} <= set(found)
    assert ("shared_exact", 3) in found and set(pareto.ROUTED) <= set(found)


def _fake_model():
    rows = []
    scenarios, _ = pareto._scenarios()
    for (key, load, metric), claim in zip(
            pareto._row_keys(scenarios),
            [c for s in scenarios.values() for c in s.claims], strict=True):
        worse = claim.policy == "miaow" or "grouped8" in claim.policy
        mean = 0.5 if worse else 0.99
        rows.append({"scenario": key, "load": load, "metric": metric, "policy": claim.policy,
                     "comparison": {"ratio": {"mean": mean, "low": mean - 0.01,
                                              "high": mean + 0.01}}})
    return {"rows": rows, "capacities": []}


def test_the_table_adds_the_rest_and_marks_the_front(tmp_path):
    areas = {point: {"status": "ok", "luts": 1000 * (i + 1), "carries": 0, "ffs": 10,
                     "multipliers": 0, "rams": 0, "block_rams": 0, "circuits": []}
             for i, point in enumerate(pareto.points())}
    areas[("full", 2)] = {"status": "failed", "error": "yosys ran out"}
    rest = {"total": {"luts": 100000, "carries": 0, "ffs": 5, "multipliers": 0, "rams": 0,
                      "block_rams": 48},
            "date": "2026-11-22"}
    rows = pareto.assemble(areas, rest, _fake_model())
    by_point = {r["point"]: r for r in rows}
    assert by_point["exact L1"]["total"]["luts"] == 102000
    assert by_point["exact L1"]["quality"]["default/as written/throughput"]["mean"] == 1.0
    assert by_point["full L2"]["status"] == "failed" and not by_point["full L2"]["front"]
    # The cheapest point and the reference (the best quality, 1.0) are on the front; MIAOW
    # (half the throughput at 36,627 LUT4, cheaper than every build) is too.
    assert by_point["exact L0"]["front"] and by_point["MIAOW"]["front"]
    assert not by_point["grouped8 L1"]["front"]
    text = pareto.markdown(rows, rest, 5)
    assert "| exact L0 * |" in text and "yosys ran out" in text and "100,000 LUT4" in text
    pareto.plot(rows, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 10000


def test_one_aps_views_are_routed_once_and_then_cached(tmp_path, monkeypatch):
    calls = []

    def fake_flow(variant, n, family, text, work, timeout):
        calls.append((variant, n, text))
        return {"status": "ok", "fmax": 99.5, "device": "25k", "luts": 3000, "ffs": 900}

    monkeypatch.setattr(pareto, "run_flow", fake_flow)
    first = pareto.route_view("shared_exact", 1, tmp_path / "work", tmp_path / "cache")
    again = pareto.route_view("shared_exact", 1, tmp_path / "work", tmp_path / "cache")
    assert len(calls) == 1 and not first["cached"] and again["cached"]
    assert again["fmax"] == 99.5
    variant, n, text = calls[0]
    # One AP: one shared unit (not sixteen), inside the register wrapper's module ``top``.
    assert n == 128 and "shared_exact L1" in variant
    assert "module top" in text and text.count("module sharedmaxfreeblock") <= 1
    assert "shared1" not in text and "shared0" in text


def test_miaows_refused_event_lists_are_made_synchronous_and_nothing_else():
    from hw.flow.miaow_area import patched
    text = ("   always @(posedge clk or rst) begin\n"
            "   end // always @(posedge clk or rst)\n"
            "   always @( posedge clk or posedge rst ) begin\n"
            "\talways @ (posedge  clk or rst)\n")
    out, count = patched(text)
    assert count == 2
    assert out.splitlines() == ["   always @(posedge clk) begin",
                                "   end // always @(posedge clk or rst)",
                                "   always @( posedge clk or posedge rst ) begin",
                                "\talways @(posedge clk)"]


def test_miaows_dispatcher_is_wrapped_with_a_power_on_reset():
    from amaranth.back import verilog

    from hw.flow.fpga_wrapper import RegisterWrapper
    from hw.flow.miaow_area import MiaowDispatcher
    ports = {"clk": ("input", 1), "rst": ("input", 1), "host_wg_id": ("input", 6),
             "dispatch2cu_wf_dispatch": ("output", 8)}
    dut = MiaowDispatcher(ports)
    assert set(dut.signature.members) == {"host_wg_id", "dispatch2cu_wf_dispatch"}
    text = verilog.convert(RegisterWrapper(dut), name="top", emit_src=False)
    assert "dispatcher dut" in text and ".rst(" in text and ".host_wg_id(" in text


def test_an_unwritable_output_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pareto, "view_area", lambda *a, **k: pytest.fail("it ran"))
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert pareto.main(["--out", str(not_a_folder)]) == 2
    assert pareto.main(["--results", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert pareto.main(["--seeds", "1", "--out", str(tmp_path / "o")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and "is not a folder" in lines[0] and "is a folder" in lines[1]
    assert "--seeds" in lines[2]
