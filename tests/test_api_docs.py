"""docs/api.md cannot rot: every ```python block in it runs, and every command has one.

Each block runs from the repository root in a fresh namespace (as a notebook cell would on a
new kernel); a block that raises fails its test, named by the section and the block's line.
A ```output block right after a python block is what that block prints, compared exactly
(trailing spaces aside). Every command of ``gpusched`` (:data:`model.cli.SUBCOMMANDS`) must
have a ``## gpusched <command>`` section with at least one python block.
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

from model.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"

_FENCE = re.compile(r"^```(\w*)\s*$")
_SECTION = re.compile(r"^## gpusched (\w+)\s*$")


def blocks(text: str) -> list[dict]:
    """The fenced blocks of ``text``: ``{"section", "line", "language", "code", "output"}``
    per python block (``section``: the command of the ``## gpusched`` heading above it,
    ``""`` before the first; ``output``: the ```output block right after it, or None)."""
    lines = text.splitlines()
    found, section, index = [], "", 0
    while index < len(lines):
        heading = _SECTION.match(lines[index])
        if heading:
            section = heading.group(1)
        elif lines[index].startswith("## "):
            section = ""
        fence = _FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        start = index + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"docs/api.md:{index + 1}: a ``` block that is never closed")
        body = "\n".join(lines[start:end]) + "\n"
        after = found and all(not line.strip() for line in lines[found[-1]["end"] + 1:index])
        if fence.group(1) == "output" and after:
            found[-1]["output"] = body
        elif fence.group(1) == "python":
            found.append({"section": section, "line": index + 1, "code": body,
                          "output": None, "end": end})
        index = end + 1
    return found


def missing_commands(text: str) -> list[str]:
    """The commands with no python block in their ``## gpusched <command>`` section."""
    covered = {block["section"] for block in blocks(text)}
    return [command for command in SUBCOMMANDS if command not in covered]


def _strip(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


DOC_BLOCKS = blocks(DOC.read_text()) if DOC.exists() else []


def test_the_reader_finds_sections_blocks_and_outputs():
    # The reader on a made-up page: a check that found no block would pass on any page.
    text = ("# API\n```python\nprint(1)\n```\n## gpusched dispatch\n```python\nprint(2)\n```\n"
            "```output\n2\n```\n## gpusched cluster\ntext only\n```text\nnot run\n```\n")
    found = blocks(text)
    assert [(b["section"], b["code"], b["output"]) for b in found] == [
        ("", "print(1)\n", None), ("dispatch", "print(2)\n", "2\n")]
    assert set(missing_commands(text)) == set(SUBCOMMANDS) - {"dispatch"}
    assert "cluster" in missing_commands(text)


@pytest.mark.parametrize("command", list(SUBCOMMANDS))
def test_every_command_has_an_example(command):
    assert DOC.exists(), "docs/api.md is missing"
    assert command not in missing_commands(DOC.read_text()), (
        f"docs/api.md has no ```python block under '## gpusched {command}'")


@pytest.mark.parametrize("block", DOC_BLOCKS,
                         ids=[f"{b['section'] or 'intro'}-line{b['line']}" for b in DOC_BLOCKS])
def test_every_example_runs(block, monkeypatch):
    monkeypatch.chdir(ROOT)
    printed = io.StringIO()
    namespace = {"__name__": "__main__"}
    code = compile(block["code"], f"docs/api.md:{block['line']}", "exec")
    with contextlib.redirect_stdout(printed):
        exec(code, namespace)  # noqa: S102 - the documentation's own examples
    if block["output"] is not None:
        assert _strip(printed.getvalue()) == _strip(block["output"]), (
            f"docs/api.md:{block['line']}: the block prints other than its ```output block")
