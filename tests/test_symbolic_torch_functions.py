"""PyTorch's sympy functions of sizes (``torch.utils._sympy.functions``) in plain sympy:
each translation evaluates to what PyTorch's own function gives at every sampled size, and a
function with no sympy form is a one-line error naming it."""

from __future__ import annotations

import itertools

import pytest
import sympy
from torch.utils._sympy import functions as tf

from solar.algebra.size import symbol
from solar.frontend.torch.symbolic_shapes import _integer

a, b, c = symbol("a"), symbol("b"), symbol("c")

CASES = [
    (tf.FloorDiv(a, b), lambda x, y, z: x // y),
    (tf.CleanDiv(a * b, b), lambda x, y, z: x),
    (tf.CeilDiv(a, b), lambda x, y, z: -(-x // y)),
    (tf.ModularIndexing(a, b, c), lambda x, y, z: (x // y) % z),
    (tf.PythonMod(a + 3, b), lambda x, y, z: (x + 3) % y),
    (tf.Mod(a, a * b), lambda x, y, z: x % (x * y)),
    (tf.Max(a, b + 1), lambda x, y, z: max(x, y + 1)),
    (tf.Min(a, 2 * b), lambda x, y, z: min(x, 2 * y)),
    (tf.CeilToInt(tf.IntTrueDiv(a, b)), lambda x, y, z: -(-x // y)),
    (tf.FloorToInt(tf.IntTrueDiv(a, 3)), lambda x, y, z: x // 3),
    (tf.LShift(a, 2), lambda x, y, z: x << 2),
    (tf.RShift(a, 1), lambda x, y, z: x >> 1),
    (tf.PowByNatural(a, 2) + tf.FloorDiv(tf.PythonMod(a, 5), 2), lambda x, y, z: x**2 + x % 5 // 2),
]


@pytest.mark.parametrize(("expr", "python"), CASES, ids=[type(e).__name__ for e, _ in CASES])
def test_translation_evaluates_as_python(expr, python):
    plain = _integer(expr)
    assert not any(type(x).__module__ == tf.__name__ for x in sympy.preorder_traversal(plain))
    for x, y, z in itertools.product((1, 2, 3, 7, 12), (1, 2, 5), (1, 3, 4)):
        assert plain.subs({a: x, b: y, c: z}) == python(x, y, z), (x, y, z)


def test_guard_of_mod_holds_where_it_holds():
    """PyTorch's guard ``Ne(Mod(a, a*b), 0)`` (b > 1) evaluates as ``a % (a*b) != 0``."""
    guard = _integer(sympy.Ne(tf.Mod(a, a * b), 0))
    assert guard.subs({a: 3, b: 2}) == sympy.true
    assert guard.subs({a: 3, b: 1}) == sympy.false


def test_function_without_sympy_form_is_named():
    with pytest.raises(NotImplementedError, match="RoundToInt"):
        _integer(tf.RoundToInt(a / 2) + 1)
