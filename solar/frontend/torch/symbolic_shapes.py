"""Symbolic sizes of a PyTorch trace: the dims a user names become symbols of PyTorch's
``ShapeEnv`` while tracing, and :class:`~solar.algebra.size.Size` s while lowering.

The fake inputs get a dynamic size only on the named dims (every other dim is static, and two
dims of equal size are not assumed equal: no duck sizing), so the fx graph's shapes are
``SymInt`` s over exactly those dims. The lowering converts each ``SymInt`` it reads into a
``Size`` (the traced value with its expression in the user's symbols); PyTorch's own guards
(``s0 != 1``, the equalities it derived) join the guards of the analysis.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

import sympy
import torch

from solar.algebra.size import Recording, make, register_foreign, symbol
from solar.frontend.shapes import ActiveShapes


class SymbolicShapes:
    """A ``ShapeEnv`` and fake mode whose dynamic dims are the user's named sizes.

    ``dims`` maps ``(binding, dim)`` (a graph input's binding, ``("input", 0)`` or
    ``("param", "fc.weight")``, and one of its dims) to
    ``(name, expr)``: the size there is ``expr`` of the symbol ``name`` (usually the symbol
    itself; ``2*seq`` where a problem file builds the dim as ``2 * SEQ``).
    """

    def __init__(self, dims: Mapping[tuple[object, int], tuple[str, sympy.Expr]]) -> None:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        self.dims = dict(dims)
        self.guards: list[sympy.Basic] = []
        self.env = ShapeEnv(duck_shape=False, specialize_zero_one=False)
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=True)
        self._subs: dict[sympy.Symbol, sympy.Expr] = {}  # torch symbol -> user expression

    def fakes(self, leaves: Sequence[tuple[object, torch.Tensor]]) -> list[torch.Tensor]:
        """Contiguous fakes of the graph inputs ``(binding, tensor)`` on one device (the
        first non-meta one, as a plain trace), dynamic on their named dims."""
        devices = [t.device for _, t in leaves if t.device.type != "meta"]
        device = devices[0] if devices else torch.device("cpu")
        unknown = set(self.dims) - {(b, d) for b, t in leaves for d in range(t.dim())}
        if unknown:
            (b, d), *_ = sorted(unknown, key=str)
            raise ValueError(
                f"symbolic size {self.dims[(b, d)][0]!r}: the program has no dim {d} of {b}"
            )
        return [self.fake(b, t, device) for b, t in leaves]

    def fake(self, leaf: object, t: torch.Tensor, device: torch.device) -> torch.Tensor:
        """A contiguous fake of ``t`` on ``device``, dynamic on the leaf's named dims."""
        from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

        named = {d: self.dims[(leaf, d)] for d in range(t.dim()) if (leaf, d) in self.dims}
        dynamic = [DimDynamic.DYNAMIC if d in named else DimDynamic.STATIC for d in range(t.dim())]
        real = torch.empty(tuple(t.shape), dtype=t.dtype, device="meta")
        fake = self.mode.from_tensor(
            real, symbolic_context=StatelessSymbolicContext(dynamic_sizes=dynamic)
        )
        for d, (_, expr) in named.items():
            s = fake.shape[d]
            if isinstance(s, torch.SymInt):
                self._subs[s.node.expr] = expr
        if device.type != "meta":
            with self.mode:
                fake = fake.to(device)
        return fake

    def translate(self, e: sympy.Expr) -> sympy.Expr:
        """A ShapeEnv expression in the user's symbols (PyTorch's integer functions as plain
        sympy: ``FloorDiv`` as ``floor``)."""
        e = self.env.replace(e)
        return _integer(e.xreplace(self._subs)) if e.free_symbols else e

    def size(self, x: object) -> object:
        """An int of the trace: a ``SymInt`` becomes a :class:`Size`, others pass."""
        if isinstance(x, torch.SymInt):
            node = x.node
            hint = node.hint if node.hint is not None else self.env.size_hint(node.expr)
            return make(int(hint), self.translate(node.expr))
        return x

    def record_guards(self, rec: Recording) -> None:
        """PyTorch's guards of the trace, in the user's symbols, onto ``rec``, each at the
        place PyTorch decided it (the program's line, and PyTorch's own)."""
        for g in self.env.guards:
            with rec.at(_pytorch_place(g.sloc)):
                rec.add(self.translate(g.expr))
        slocs = getattr(self.env, "replacements_slocs", {})
        for s, e in self.env.replacements.items():
            if s in self._subs:
                with rec.at(_pytorch_place(slocs.get(s))):
                    rec.add(sympy.Eq(self._subs[s], self.translate(e)))

    def active(self) -> contextlib.AbstractContextManager[SymbolicShapes]:
        """The block in which lowering reads this trace's ``SymInt`` s as sizes."""
        return _SHAPES.use(self)


def _pytorch_place(sloc: object) -> str:
    """Where PyTorch decided a guard: "the PyTorch trace (file:line in function)"."""
    text = str(sloc or "").strip()
    return f"the PyTorch trace {text}" if text.strip("() ") else "the PyTorch trace"


def _integer(e: sympy.Expr) -> sympy.Expr:
    """PyTorch's integer and conversion functions (``torch.utils._sympy.functions``) in plain
    sympy, innermost first, so a guard or size evaluates outside PyTorch. A function with no
    exact sympy form is an error naming it (never a guard that holds nowhere)."""
    table = _translations()

    def plain(x: sympy.Basic) -> sympy.Basic:
        if not x.args:
            return x
        args = tuple(plain(a) for a in x.args)
        if type(x).__module__ == _TORCH_FUNCTIONS:
            name = type(x).__name__
            rule = table.get(name.removeprefix("OpaqueUnaryFn_"))
            if rule is not None:
                return rule(*args)
            raise NotImplementedError(
                f"symbolic sizes: PyTorch's {type(x).__name__} in {x} has no sympy form here; "
                "bound this program numerically (without symbolic=)"
            )
        return x.func(*args) if args != x.args else x

    return plain(e)


_TORCH_FUNCTIONS = "torch.utils._sympy.functions"


def _trunc(x: sympy.Expr) -> sympy.Expr:
    return sympy.Piecewise((sympy.floor(x), x >= 0), (sympy.ceiling(x), True))


def _translations() -> dict[str, object]:
    """PyTorch's sympy function name -> its plain sympy form (each exact on integers)."""
    floor, ceiling = sympy.floor, sympy.ceiling
    return {
        "FloorDiv": lambda a, b: floor(a / b),
        "CleanDiv": lambda a, b: floor(a / b),
        "CeilDiv": lambda a, b: ceiling(a / b),
        "ModularIndexing": lambda a, b, c: sympy.Mod(floor(a / b), c),
        "Mod": sympy.Mod,
        "PythonMod": sympy.Mod,
        "Where": lambda c, a, b: sympy.Piecewise((a, c), (b, True)),
        "FloorToInt": floor,
        "CeilToInt": ceiling,
        "TruncToInt": _trunc,
        "TruncToFloat": _trunc,
        "IntTrueDiv": lambda a, b: a / b,
        "FloatTrueDiv": lambda a, b: a / b,
        "ToFloat": lambda x: x,
        "Identity": lambda x: x,
        "PowByNatural": lambda a, b: a**b,
        "FloatPow": lambda a, b: a**b,
        "LShift": lambda a, b: a * 2**b,
        "RShift": lambda a, b: floor(a / 2**b),
        "Max": sympy.Max,
        "Min": sympy.Min,
        # OpaqueUnaryFn_<name>: PyTorch's math functions of sizes, kept unevaluated there
        **{f: getattr(sympy, f) for f in ("sqrt", "exp", "log", "sin", "cos", "tan")},
        **{f: getattr(sympy, f) for f in ("sinh", "cosh", "tanh", "asin", "acos", "atan")},
        "asinh": sympy.asinh,
        "log2": lambda x: sympy.log(x, 2),
    }


def _plain(x: object) -> object:
    return int(x) if isinstance(x, torch.SymInt) else x


def _symint(x: object) -> object | None:
    """A ``SymInt`` of the active trace as a :class:`Size` (``n != t.size(-1)`` in a module
    whose ``n`` is a size: nn.RNN's and InstanceNorm's checks)."""
    shapes = _SHAPES.get()
    return shapes.size(x) if shapes is not None and isinstance(x, torch.SymInt) else None


_SHAPES: ActiveShapes[SymbolicShapes] = ActiveShapes("solar_torch_symbolic", _plain)
register_foreign(_symint)

#: an int read off a traced value, keeping its symbol (a ``SymInt`` of a symbolic trace
#: becomes a :class:`~solar.algebra.size.Size`; any other value passes)
size = _SHAPES.size
#: :func:`size` of each, as ints
sizes = _SHAPES.sizes


__all__ = ["SymbolicShapes", "size", "sizes", "symbol"]
