"""hw.flow.runner's Verilator build: the runtime objects shared through ccache."""

import shlex

from hw.flow import runner


def test_verilator_compiles_go_through_ccache_in_the_build_tree(monkeypatch):
    monkeypatch.setattr(runner.shutil, "which",
                        lambda name: "/opt/bin/ccache" if name == "ccache" else None)
    (argument,) = runner.object_cache()
    name, value = argument.split("=", 1)
    assert name == "OBJCACHE"
    assert shlex.split(value) == ["env", f"CCACHE_DIR={runner.BUILD_ROOT / 'ccache'}",
                                  "/opt/bin/ccache"]


def test_without_ccache_the_build_compiles_everything(monkeypatch):
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    assert runner.object_cache() == []
