"""One lowering framework for both frontends (solar/frontend/lowering): one registry class
where registering an operator twice is an error, shared base classes for the context and the
lowerer, statements built only through ``ProgramBuilder.statement``, ``contiguous_strides``
defined once, and ``verify`` run at the end of tracing."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from solar.frontend import lowering as framework
from solar.frontend.lowering import DuplicateLoweringError, Registry

ROOT = Path(__file__).resolve().parents[1]
FRONTEND = ROOT / "solar" / "frontend"

# Statements still built positionally, in files the IR-kinds change converts (issue 23, item 3);
# remove each from this set once it builds through ProgramBuilder.
PENDING: set[str] = set()


def _lower_a(ctx, x):
    pass


def _lower_b(ctx, x):
    pass


def _trees(folder: Path):
    for path in sorted(folder.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


# ------------------------------------------------------------------------- the registry


def test_registering_an_operator_twice_names_the_operator_and_both_functions():
    reg: Registry[str, object] = Registry("test")
    reg.add("exp", _lower_a)
    with pytest.raises(DuplicateLoweringError) as e:
        reg.add("exp", _lower_b)
    msg = str(e.value)
    assert "test operator exp is registered twice" in msg
    assert f"{__name__}._lower_a" in msg and f"{__name__}._lower_b" in msg
    assert "replace=True" in msg and "\n" not in msg
    assert reg["exp"] is _lower_a  # the first registration stands
    reg.add("exp", _lower_b, replace=True)
    assert reg["exp"] is _lower_b
    with pytest.raises(KeyError, match="nothing registered to replace"):
        reg.add("log", _lower_a, replace=True)


def test_scoped_undoes_registrations_and_removals():
    reg: Registry[str, object] = Registry("test")
    reg.add("exp", _lower_a)
    with reg.scoped():
        reg.add("log", _lower_b)
        assert reg.remove("exp") is _lower_a
        assert dict(reg) == {"log": _lower_b}
    assert dict(reg) == {"exp": _lower_a}


def test_torch_registry_rejects_a_second_lowering_of_an_aten_operator():
    torch = pytest.importorskip("torch")
    from solar.frontend.torch import LOWERINGS, lowering

    aten = torch.ops.aten
    first = LOWERINGS[aten.relu.default]
    with LOWERINGS.scoped(), pytest.raises(DuplicateLoweringError) as e:
        lowering(aten.relu.default)(_lower_b)
    msg = str(e.value)
    assert "PyTorch operator aten.relu.default is registered twice" in msg
    assert f"{first.__module__}.{first.__qualname__}" in msg
    assert f"{__name__}._lower_b" in msg
    assert LOWERINGS[aten.relu.default] is first
    with pytest.raises(TypeError, match="takes torch.ops.aten operators"):
        lowering("relu")(_lower_b)


def test_jax_registry_rejects_a_second_rule_for_a_primitive():
    pytest.importorskip("jax")
    from solar.frontend.jax import LOWERINGS, lowering

    first = LOWERINGS["exp"]
    with LOWERINGS.scoped(), pytest.raises(DuplicateLoweringError) as e:
        lowering("exp")(_lower_b)
    msg = str(e.value)
    assert "JAX operator exp is registered twice" in msg
    assert f"{first.fn.__module__}.{first.fn.__qualname__}" in msg
    assert f"{__name__}._lower_b" in msg
    assert LOWERINGS["exp"] is first


# -------------------------------------------------------------- one set of base classes


def test_both_frontends_share_the_base_classes():
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    from solar.frontend import jax as fj
    from solar.frontend import torch as ft
    from solar.frontend.jax import lower as jl
    from solar.frontend.torch import lower as tl

    for sub in (tl.LoweringContext, jl.LoweringContext):
        assert issubclass(sub, framework.LoweringContext)
    for sub in (tl.Lowerer, jl.Lowerer):
        assert issubclass(sub, framework.Lowerer)
    assert issubclass(ft.UnsupportedOperatorError, framework.UnsupportedOperatorError)
    assert issubclass(fj.UnsupportedPrimitiveError, framework.UnsupportedOperatorError)
    assert ft.UnsupportedDtypeError is fj.UnsupportedDtypeError is framework.UnsupportedDtypeError
    assert ft.PrecisionPolicy is fj.PrecisionPolicy is framework.PrecisionPolicy
    assert type(ft.LOWERINGS) is type(fj.LOWERINGS) is Registry


def test_a_lowering_gets_a_context_of_the_base_class():
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    from solar.frontend.jax import LOWERINGS as JAX_RULES
    from solar.frontend.jax import lowering as jax_lowering
    from solar.frontend.jax import trace_jax
    from solar.frontend.torch import LOWERINGS, lowering, trace_torch

    seen = []
    relu = LOWERINGS[torch.ops.aten.relu.default]
    exp = JAX_RULES["exp"]
    with LOWERINGS.scoped(), JAX_RULES.scoped():

        @lowering(torch.ops.aten.relu.default, replace=True)
        def relu_seen(ctx, x):
            seen.append(ctx)
            relu(ctx, x)

        @jax_lowering("exp", replace=True)
        def exp_seen(ctx, x, **params):
            seen.append(ctx)
            exp.fn(ctx, x, **params)

        trace_torch(lambda x: torch.relu(x), torch.zeros(4))
        trace_jax(lambda x: jax.numpy.exp(x), jax.ShapeDtypeStruct((4,), "float32"))
    assert len(seen) == 2
    assert all(isinstance(ctx, framework.LoweringContext) for ctx in seen)
    assert all(ctx.source.startswith("test_lowering_framework.py:") for ctx in seen)


def test_an_ill_formed_program_fails_at_the_end_of_tracing_naming_its_kernel():
    """A lowering that breaks a statement after building it (here: redeclares its output
    with another rank) is caught by ``verify`` when tracing ends, not later in lifting."""
    torch = pytest.importorskip("torch")
    from solar.frontend.torch import LOWERINGS, lowering, trace_torch

    relu = LOWERINGS[torch.ops.aten.relu.default]
    with LOWERINGS.scoped():

        @lowering(torch.ops.aten.relu.default, replace=True)
        def relu_broken(ctx, x):
            relu(ctx, x)
            tensors = ctx.builder.program.tensors
            out = ctx.out().name
            tensors[out] = dataclasses.replace(tensors[out], shape=(*tensors[out].shape, 1))

        # the last kernel: no later statement's own check sees the broken declaration first
        with pytest.raises(ValueError, match=r"^kernel relu_0: relu\[i0\] has 1 indices"):
            trace_torch(lambda x: torch.relu(x), torch.zeros(4))


def test_an_ill_formed_jax_program_fails_at_the_end_of_tracing():
    jax = pytest.importorskip("jax")
    from solar.frontend.jax import LOWERINGS, lowering, trace_jax

    exp = LOWERINGS["exp"]
    with LOWERINGS.scoped():

        @lowering("exp", replace=True)
        def exp_broken(ctx, x, **params):
            exp.fn(ctx, x, **params)
            tensors = ctx.builder.program.tensors
            out = ctx.out().name
            tensors[out] = dataclasses.replace(tensors[out], shape=(*tensors[out].shape, 1))

        # checked after fusion grouped the units into kernels
        with pytest.raises(ValueError, match=r"^kernel fusion_0: exp\[i0\] has 1 indices"):
            trace_jax(jax.numpy.exp, jax.ShapeDtypeStruct((4,), "float32"))


# ------------------------------------------------------------------ one way to build IR


def _statement_calls() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for rel, tree in _trees(FRONTEND):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
                if name == "Statement":
                    found.setdefault(rel, []).append(node.lineno)
    return found


def test_the_frontends_build_statements_only_through_the_program_builder():
    found = _statement_calls()
    outside = {rel: lines for rel, lines in found.items() if rel not in PENDING}
    assert not outside, f"Statement(...) built directly (use ProgramBuilder.statement): {outside}"
    stale = PENDING - set(found)
    assert not stale, f"{sorted(stale)} no longer build Statement(...): drop them from PENDING"


def test_contiguous_strides_is_defined_once():
    defs = [
        (rel, node.name)
        for rel, tree in _trees(FRONTEND)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name in ("contiguous_strides", "_contiguous_strides", "_contiguous")
    ]
    assert defs == [("solar/frontend/layout.py", "contiguous_strides")]


def _frontend_imports() -> dict[str, set[str]]:
    """``{module: the solar.frontend modules it imports}``, function-local imports included
    (``from package import module`` imports the module, not the package's ``__init__``)."""
    trees = {}
    for rel, tree in _trees(FRONTEND):
        parts = Path(rel).with_suffix("").parts
        trees[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = tree
    out: dict[str, set[str]] = {}
    for module, tree in trees.items():
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    found.add(sub if sub in trees else node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        out[module] = {m for m in found if m in trees}
    return out


def test_no_two_frontend_modules_import_each_other():
    imports = _frontend_imports()
    pairs = sorted(
        (a, b) for a, deps in imports.items() for b in deps if a < b and a in imports.get(b, ())
    )
    assert not pairs, f"modules importing each other: {pairs}"
    assert "solar.frontend.torch.ops.indexing" in imports["solar.frontend.torch.ops.dynamic"]


# --------------------------------------------------------------------- the lowering library

#: each builder of the lowering library, and the one module defining it
LIBRARY = {
    "cast": "solar/frontend/lowering/exprs.py",
    "scale": "solar/frontend/lowering/exprs.py",
    "pointwise": "solar/frontend/lowering/pointwise.py",
    "extern_rows": "solar/frontend/lowering/extern_rows.py",
    "window": "solar/frontend/lowering/window.py",
    "range_guard": "solar/frontend/lowering/window.py",
}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_each_lowering_builder_is_written_once(name):
    defs = [
        rel
        for rel, tree in _trees(FRONTEND)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name == name
    ]
    assert defs == [LIBRARY[name]]


def test_the_library_takes_the_shared_context_not_a_record_of_callbacks():
    """No frontend builds an ``Emitter`` (a record of its context's calls) for the routines:
    they take the shared LoweringContext, whose interface has view and storage."""
    names = {
        node.name
        for _, tree in _trees(FRONTEND)
        for node in ast.walk(tree)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }
    assert "Emitter" not in names and "emitter" not in names
    for method in ("out", "operand", "view", "storage", "local", "load", "statement", "fail"):
        assert callable(getattr(framework.LoweringContext, method))
