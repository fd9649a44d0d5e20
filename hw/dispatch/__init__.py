"""Seed 002's multi-channel workgroup dispatcher as synthesizable Amaranth (issue 16).

:class:`Dispatcher` is built from the model's configuration objects
(:class:`model.dispatch.GpuConfig`, :class:`model.dispatch.PolicyConfig`) and runs the model's
cycle (:mod:`model.dispatch.engine`) clock for clock; docs/dispatch_rtl.md describes it.

Model twin: :mod:`model.dispatch` (the loop :mod:`model.dispatch.engine` and one model
module per stage module here, of the same name).
"""

from hw.dispatch.dispatcher import Dispatcher
from hw.dispatch.params import ConfigAddress, DispatcherParams, config_writes

__all__ = ["ConfigAddress", "Dispatcher", "DispatcherParams", "config_writes"]
