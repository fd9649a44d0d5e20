"""``model.cluster.run`` from Python gives the numbers ``gpusched cluster`` writes, takes its
settings from the scenario unless overridden, and refuses what the command line refuses."""

import json

import pytest

import model.cluster as cluster
from model.cli import main

CONFIG = "configs/cluster/mixed_steady.toml"


def test_run_gives_the_commands_numbers(tmp_path):
    out = tmp_path / "cluster.json"
    assert main(["cluster", "--config", CONFIG, "--policy", "seed-004", "--policy", "fgd",
                 "--quick", "--quiet", "--json", str(out), "--plots", str(tmp_path)]) == 0
    entry = next(iter(json.loads(out.read_text())["scenarios"].values()))
    result = cluster.run(CONFIG, ["seed-004", "fgd"], quick=True)
    assert result.seeds == (1,)
    assert list(result.summary) == ["seed-004", "fgd"]
    for policy in ("seed-004", "fgd"):
        for name, value in result.summary[policy].items():
            assert entry["summary"][policy][name]["mean"] == pytest.approx(value["mean"]), name
    assert result["seed-004"]["energy_kwh"] == pytest.approx(
        entry["policies"]["seed-004"]["energy_kwh"])


def test_settings_come_from_the_scenario_unless_overridden():
    # The scenario runs 5 seeds; seeds=2 runs 2 (1 and 2), tie_break is passed through.
    result = cluster.run(CONFIG, "seed-004", seeds=2, tie_break="random")
    assert result.seeds == (1, 2)
    assert result.scenario.tie_break == "random"
    assert result.summary["seed-004"]["energy_kwh"]["count"] == 2


@pytest.mark.parametrize("kwargs, error, text", [
    (dict(seeds=0), ValueError, "seeds must be an integer in 1..1000, not 0"),
    (dict(seeds="2"), TypeError, "seeds must be an integer"),
    (dict(tie_break="first"), ValueError, "tie_break must be one of 'shuffled', 'name', 'random'"),
    (dict(pwr_fgd_weights=(0, 0)), ValueError, "pwr_fgd_weights must be a pair"),
    (dict(inflation_ratio=-1.0), ValueError, "inflation_ratio must be a number in"),
    (dict(colour="red"), TypeError, "unknown setting(s) 'colour'; accepted: seeds"),
    (dict(seed=1.5), TypeError, "seed must be an integer or None"),
    (dict(policy="nope"), ValueError, "policy must be None or among the scenario's"),
    (dict(policy=3), TypeError, "policy must be None, a policy name or a non-empty list"),
])
def test_bad_arguments_name_the_argument_and_what_is_accepted(kwargs, error, text):
    with pytest.raises(error) as caught:
        cluster.run(CONFIG, **kwargs)
    assert text in str(caught.value)


def test_a_scenario_that_is_not_one_is_refused():
    with pytest.raises(TypeError, match="scenario_or_path must be a cluster Scenario"):
        cluster.run(42)
