"""``make verilog BLOCK=dispatcher CONFIG=FILE`` at the corners of a scenario.

Builds the generator refused late, built wrongly or could not lint, each on a GPU of a few
blocks (seconds per build): resources of one block, one wave slot on one AP of one PEU, the
shared unit pipelined deeper than a tiny schedule's tree has pieces, a sliding-window
history, an empty ``CONFIG=`` and default resource weights wider than the RTL's registers.
"""

from pathlib import Path

import pytest

from hw.flow.generate import main

_GPU = {"aps": 2, "peus": 1, "vgpr": 8, "sgpr": 8, "lds": 8, "wave_slots": 4, "priorities": 1}
_CHANNEL = {"arrival": 0.1, "waves": "[1, 2]", "vgpr": 1, "sgpr": 1, "lds": 1}


def _scenario(directory: Path, policy: str = 'preset = "emb1"', **changes) -> Path:
    """A one-channel scenario of the tiny GPU ``_GPU`` with ``changes`` (its fields and the
    channel's: ``channel_waves=1``)."""
    gpu = {**_GPU, **{key: value for key, value in changes.items()
                      if not key.startswith("channel_")}}
    channel = {**_CHANNEL, **{key[len("channel_"):]: value for key, value in changes.items()
                              if key.startswith("channel_")}}
    text = "\n".join(['name = "corner"', "[gpu]", *(f"{k} = {v}" for k, v in gpu.items()),
                      "[[channels]]", *(f"{k} = {v}" for k, v in channel.items()),
                      "[[policies]]", policy]) + "\n"
    path = directory / "corner.toml"
    path.write_text(text)
    return path


def _generate(capsys, config, out: Path, *options) -> tuple[int, str, list[str]]:
    status = main(["--block", "dispatcher", "--config", str(config), "--out", str(out),
                   *options])
    captured = capsys.readouterr()
    return status, captured.out, captured.err.strip().splitlines()


@pytest.mark.parametrize("resource", ["vgpr", "sgpr", "lds"])
def test_a_resource_of_one_block_lints_clean(resource, capsys, tmp_path):
    # The exact circuit of one block, combinational, was its status bit under two more
    # names that nothing read: UNUSEDSIGNAL 'join_bit_0' and 'start', lint failed.
    config = _scenario(tmp_path, **{resource: 1})
    status, out, err = _generate(capsys, config, tmp_path / "out", "--lint")
    assert status == 0 and "lint clean" in out, err[-20:]


def test_the_exact_block_of_one_block_lints_clean(capsys, tmp_path):
    assert main(["--block", "exact", "-n", "1", "--latency", "0", "--lint",
                 "--out", str(tmp_path)]) == 0
    assert "lint clean" in capsys.readouterr().out


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("latency", [0, 1, 2, 3])
def test_the_first_fit_of_few_blocks_lints_clean(n, latency, capsys, tmp_path):
    # One block, combinational: the walk's one bit was a name the port's assignment made
    # unread (UNUSEDSIGNAL 'starts1'), and the dispatcher's lint failed with it.
    assert main(["--block", "first_fit", "-n", str(n), "--latency", str(latency), "--lint",
                 "--out", str(tmp_path)]) == 0
    assert "lint clean" in capsys.readouterr().out



def test_one_wave_slot_on_one_peu_of_one_ap_lints_clean(capsys, tmp_path):
    # One record in flight at most: the record memories were one word deep, their address
    # ports zero bits wide, written [-1:0] (ASCRANGE), lint failed.
    config = _scenario(tmp_path, aps=1, wave_slots=1, channel_waves=1)
    status, out, err = _generate(capsys, config, tmp_path / "out", "--lint")
    assert status == 0 and "lint clean" in out, err[-20:]


def test_the_shared_unit_deeper_than_a_tiny_schedules_tree_builds(capsys, tmp_path):
    # Blocks of 4: each type's field is one leaf, the tree one piece, which a pipeline of 2
    # (a register between two pieces) cannot cut: a traceback from SharedMaxFreeBlock after
    # the checks (ValueError: Pipeline 2 needs 1 cuts between the 1 pieces ...). The unit now
    # takes the pipeline its tree has, the rest of the latency in front, as past 3.
    config = _scenario(tmp_path, vgpr=4, sgpr=4, lds=4,
                       policy='preset = "emb1"\ncircuit = "shared"\ncircuit_latency = 2')
    status, out, err = _generate(capsys, config, tmp_path / "out", "--lint")
    assert status == 0 and "lint clean" in out, err[-20:]


def test_the_shared_unit_refuses_a_pipeline_its_tree_cannot_take_when_built():
    from hw.shared_maxblock import SharedMaxFreeBlock, exact_deepest_pipeline
    from model.maxblock import SharedSchedule

    tiny = SharedSchedule(((("a", 4),), (("b", 4),)), 4)
    assert exact_deepest_pipeline(tiny) == 1 and exact_deepest_pipeline(SharedSchedule()) == 3
    with pytest.raises(ValueError, match=r"^Pipeline 2 cuts this schedule's exact tree 1 times "
                                         r"between its 1 pieces of logic: it must be 0 to 1 "
                                         r"for this schedule$"):
        SharedMaxFreeBlock(tiny, exact=True, pipeline=2)


def test_a_window_history_is_built_as_the_average_and_says_so(capsys, tmp_path):
    # make cosim said so; make verilog built the exponential average without a word.
    config = _scenario(tmp_path, policy='preset = "emb1"\nap_choice = "instruction"\n'
                                        'history = "window"\nhistory_cycles = 64')
    status, out, err = _generate(capsys, config, tmp_path / "out")
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert status == 0 and notes == ['note: history = "ema" (the RTL keeps the exponential '
                                     'average, not the 64-cycle window)'], (out, err)


def test_an_empty_config_is_refused_not_read_as_the_current_directory(capsys, tmp_path):
    # make verilog BLOCK=dispatcher CONFIG= passes --config "", which read as "." (error:
    # .: cannot read: Is a directory).
    with pytest.raises(SystemExit) as exit_info:
        main(["--block", "dispatcher", "--config", "", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1, err
    assert "--config" in err[0] and "is empty" in err[0] and "TOML file" in err[0], err


def test_default_weights_too_wide_for_the_registers_name_the_field(capsys, tmp_path):
    # Embodiment 9's default weights L / C_h of 127, 113, 109 and 4 blocks need 21 bits:
    # the error read "policy 'emb1': Weight width must be 0..16, not 21".
    config = _scenario(tmp_path, vgpr=127, sgpr=113, lds=109)
    status, _, err = _generate(capsys, config, tmp_path / "out")
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {config}: gpu.resource_weights: ") and "21 bits" in err[0] \
        and "at most 16" in err[0], err
