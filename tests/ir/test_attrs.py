"""``attrs.i64_list``: the integer-array attributes of every kind the rules read, by index (issue 34: iterating a
``DenseI64ArrayAttr`` costs four times as much on jaxlib 0.10), with the default and the missing-name error."""

import pytest
from jaxlib.mlir import ir

from stablehlo_sparsity.ir.attrs import i64_list

SOURCE = """
"test.op"() {dense_array = array<i64: 1, -2, 3>, elements = dense<[4, 5]> : tensor<2xi64>,
             array = [6 : i64, 7 : i64], empty = array<i64>} : () -> ()
"""


@pytest.fixture()
def op():
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(SOURCE)
        yield module.body.operations[0]


@pytest.mark.parametrize("name, expected", [("dense_array", [1, -2, 3]), ("elements", [4, 5]), ("array", [6, 7]),
                                            ("empty", [])])
def test_every_kind_of_integer_array_reads_as_a_list(op, name, expected):
    assert i64_list(op, name) == expected
    assert all(type(v) is int for v in i64_list(op, name))


def test_a_missing_attribute_takes_the_default_or_names_itself(op):
    assert i64_list(op, "strides", [1, 1]) == [1, 1]
    with pytest.raises(KeyError, match="test.op has no attribute 'strides'"):
        i64_list(op, "strides")
