"""The benches' payload codec (``tb.dispatch_protocol.pack``/``unpack``) against Amaranth's own
``data.Const``/``Layout.const``: the same fields for random bits of every port of every bench
shape, and the same bits back."""

import random

import pytest
from amaranth.lib import data

from hw.dispatch.params import ConfigAddress
from hw.flow.dispatch_build import DispatchShape
from tb.dispatch_cases import SHAPES
from tb.dispatch_protocol import pack, unpack

PORTS = ("workgroup_layout", "dispatch_layout", "release_layout", "config_layout")


def _plain(value, layout):
    # data.Const's fields as plain values (arrays as lists).
    if isinstance(layout, data.ArrayLayout):
        elem = layout.elem_shape
        return [_plain(value[i], elem) if isinstance(elem, data.Layout) else value[i]
                for i in range(layout.length)]
    return {key: _plain(value[key], field.shape) if isinstance(field.shape, data.Layout)
            else value[key] for key, field in layout}


@pytest.mark.parametrize("name", SHAPES)
def test_unpack_and_pack_agree_with_amaranth(name):
    shape = SHAPES[name]
    params = DispatchShape.of(shape.gpu, shape.policy, shape.channels, **shape.options()).params
    rng = random.Random(name)
    for port in PORTS:
        layout = getattr(params, port)
        assert getattr(params, port) is layout          # built once per parameter set
        for _ in range(200):
            bits = rng.getrandbits(layout.size)
            if port == "config_layout":                 # an address the enumeration has
                bits = (bits & ~0xF) | rng.choice(list(ConfigAddress)).value
            fields = unpack(layout, bits)
            assert fields == _plain(data.Const(layout, bits), layout)
            assert pack(layout, fields) == bits == layout.const(fields).as_value().value
    beat = unpack(params.dispatch_layout, rng.getrandbits(params.dispatch_layout.size))
    assert beat.tag == beat["tag"] and beat.waves == beat["waves"]
    with pytest.raises(AttributeError):
        _ = beat.no_such_field


def test_pack_fills_missing_fields_and_truncates_as_amaranth_does():
    layout = data.StructLayout({"a": 3, "b": data.ArrayLayout(2, 3), "c": ConfigAddress})
    for value in ({"a": 9}, {"b": [1, 7, 2]}, {"c": ConfigAddress.START, "a": 5}, {}):
        assert pack(layout, value) == layout.const(value).as_value().value
    assert unpack(layout, pack(layout, {"c": ConfigAddress.START})).c is ConfigAddress.START
