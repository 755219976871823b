"""A jax.jit program as XLA compiled it (issue 33): equation keys, the lowerer's kernels_of,
the optimized HLO's kernels mapped to IR kernels, and the JAX profiler read back, on the CPU
(XLA's CPU backend fuses as its GPU backend does: elementwise chains into their consumer,
dots as library calls)."""

from __future__ import annotations

from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from solar.bench.models import gpt_jax  # noqa: E402
from solar.frontend.compiled import KernelKind  # noqa: E402
from solar.frontend.jax import trace_jax  # noqa: E402
from solar.frontend.jax.compiled import compile_jax, equations_of  # noqa: E402
from solar.frontend.jax.equation_keys import equations, keys_of_op_name, parent, tag  # noqa: E402
from solar.frontend.jax.hlo_text import parse_hlo  # noqa: E402
from solar.frontend.jax.profiling import profile_jax  # noqa: E402
from solar.problem import load_module  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def normal(shape, dtype=jnp.float32, seed=1):
    return jax.random.normal(jax.random.key(seed), shape).astype(dtype)


def dense_tanh_sum(x, w, b):
    return jnp.tanh(x @ w + b).sum(-1)


def scanned(x, w, b):
    h = jnp.tanh(x @ w + b)

    def body(c, _):
        return jnp.sin(c) * 2, None

    h, _ = jax.lax.scan(body, h, None, length=3)
    return jax.nn.relu(h).sum(axis=-1)


XWB = (normal((8, 4)), normal((4, 16), seed=2), normal((16,), seed=3))


def opcodes_and_keys(kernel):
    """``("tanh", "3")`` per op of a generated kernel (its ``ops`` strings read back)."""
    out = []
    for op in kernel.ops:
        inner = op[op.index("(") + 1 : -1].split(", equation ")
        out.append((inner[0], inner[1] if len(inner) > 1 else None))
    return out


def gpt_block():
    """One GPT-2 block (solar.bench.models.gpt_jax) at toy sizes, on concrete float32 arrays."""
    fn, (structs, _) = gpt_jax(1, 32, 2, vocab=64, context=16, batch=2, tokens=8)
    leaves, tree = jax.tree_util.tree_flatten(structs)
    params = tree.unflatten(
        [normal(s.shape, jnp.float32, seed=i) * 0.1 for i, s in enumerate(leaves)]
    )
    idx = (jnp.arange(16, dtype=jnp.int32) * 7 % 64).reshape(2, 8)
    return fn, (params, idx)


# -- equation keys ----------------------------------------------------------------------------


def test_keys_of_op_name_reads_the_scopes_in_order():
    assert keys_of_op_name("jit(f)/solar_3/tanh") == ("3",)
    assert keys_of_op_name("jit(f)/solar_4/while/body/closed_call/solar_0/sin") == ("4/0",)
    assert keys_of_op_name("jit(f)/solar_5/solar_0/jit(relu)/solar_0/max") == ("5/0/0",)
    assert keys_of_op_name("jit(f)/vmap(solar_44)/reduce_max") == ("44",)  # in a transform
    assert keys_of_op_name("jit(f)/solar_7/while/body/solar_1_2/mul") == ("7:1/2",)
    # XLA merged two reshapes into one instruction: both names, joined by ";"
    assert keys_of_op_name("jit(f)/solar_31/reshape;jit(f)/solar_28/reshape") == ("31", "28")
    assert keys_of_op_name("jit(f)/while/body/add") == ()  # XLA's own (a loop counter)
    assert keys_of_op_name("solar_x/tanh") == ()
    assert parent("7:1/2") == "7" and parent("5/0/0") == "5/0" and parent("3") is None


def test_lowerer_records_each_equation_kernels():
    # jaxpr: 0 dot_general, 1 broadcast_in_dim (a view: no kernel), 2 add (the bias, folded
    # into the dot's statement), 3 tanh, 4 reduce_sum; solar's kernels: the dot with its bias,
    # then the reduction with the tanh fused in (producer -> consumer)
    t = trace_jax(dense_tanh_sum, XWB)
    assert [k.name for k in t.program.kernels] == ["dot_general_0", "reduce_sum_1"]
    assert dict(t.kernels_of) == {
        "0": ("dot_general_0",),
        "2": ("dot_general_0",),
        "3": ("reduce_sum_1",),
        "4": ("reduce_sum_1",),
    }


@pytest.mark.parametrize(
    "scan,expected",
    [
        # unrolled: every iteration's body equation keeps the body's key (4/0 sin, 4/1 mul)
        (
            "unroll",
            {"0": ("dot_general_0",), "2": ("dot_general_0",), "3": ("reduce_sum_1",),
             "4/0": ("reduce_sum_1",), "4/1": ("reduce_sum_1",), "5/0/0": ("reduce_sum_1",),
             "6": ("reduce_sum_1",)},
        ),
        # one looped kernel: the body's statements move into the scan's own kernel (key 4)
        (
            "loop",
            {"0": ("dot_general_0",), "2": ("dot_general_0",), "3": ("fusion_1",),
             "4": ("scan_2",), "5/0/0": ("reduce_sum_3",), "6": ("reduce_sum_3",)},
        ),
    ],
)  # fmt: skip
def test_nested_equations_keys(scan, expected):
    # 5/0/0: relu's custom_jvp_call (5) -> its jit (0) -> max (0)
    t = trace_jax(scanned, XWB, scan=scan)
    assert dict(t.kernels_of) == expected
    keys = equations(t.graph)
    assert [keys[k].primitive.name for k in ("4", "4/0", "4/1", "5/0/0")] == [
        "scan",
        "sin",
        "mul",
        "max",
    ]


def test_tagged_program_compiles_to_jits_own_kernels():
    """The names solar adds are metadata: XLA launches the same kernels, named alike, as for
    jax.jit(fn); every key in the HLO names an equation of the jaxpr."""
    fn, args = gpt_block()
    plain = parse_hlo(jax.jit(fn).lower(*args).compile().as_text()).launches()
    ct = compile_jax(fn, args)
    assert [k.name for k in ct.kernels] == [i.name for i in plain]
    module = parse_hlo(ct.source_code)
    keys = equations(ct.trace.graph)
    found = {
        k
        for ins in module.launches()
        for i in module.inside(ins)
        for k in keys_of_op_name(i.op_name)
    }
    assert found and found <= set(keys)


def test_while_loop_sub_jaxprs_are_numbered():
    """A while holds two sub-jaxprs (cond 0, body 1): their equations are keyed k:0/j, k:1/j."""

    def loop(x):
        return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))

    closed = jax.make_jaxpr(loop)(XWB[0])
    keys = equations(closed)
    (w,) = [k for k, e in keys.items() if e.primitive.name == "while"]
    assert keys[f"{w}:0/0"].primitive.name == "lt"
    assert {keys[f"{w}:1/{j}"].primitive.name for j in range(2)} == {"add", "sin"}
    text = jax.jit(jax.extend.core.jaxpr_as_fun(tag(closed))).lower(XWB[0]).compile().as_text()
    module = parse_hlo(text)
    named = {k for c in module.computations.values() for i in c for k in keys_of_op_name(i.op_name)}
    assert {f"{w}:0/0", f"{w}:1/0", f"{w}:1/1"} <= named


# -- the compiled program ---------------------------------------------------------------------


def test_dense_tanh_sum_maps_exactly():
    """XLA on the CPU launches two kernels for tanh(x @ w + b).sum(-1): the dot (a library
    call, a kCustom fusion holding only the dot) and one loop fusion of the bias add, tanh
    and the reduction. The first computes equation 0, part of IR kernel dot_general_0; the
    second equations 2 (the bias, which solar folded into dot_general_0), 3 and 4 (solar's
    reduce_sum_1)."""
    ct = compile_jax(dense_tanh_sum, XWB)
    assert (ct.compiler, ct.mode) == ("xla", "jit")
    assert len(ct.kernels) == 2
    dot, rest = ct.kernels
    assert opcodes_and_keys(dot) == [("dot", "0")]
    assert dot.ir_kernels == ("dot_general_0",)
    assert opcodes_and_keys(rest) == [
        ("broadcast", "2"),
        ("add", "2"),
        ("tanh", "3"),
        ("reduce", "4"),
    ]
    assert rest.ir_kernels == ("dot_general_0", "reduce_sum_1")
    assert (equations_of(dot), equations_of(rest)) == (("0",), ("2", "3", "4"))
    for k in ct.kernels:
        assert k.kind is KernelKind.XLA and k.unmapped == "" and k.name in k.launch
        assert k.sources == ("test_compiled_jax.py:33",)  # the line of dense_tanh_sum's body
    assert not any(n.startswith("IR kernels no XLA kernel") for n in ct.notes)
    (out,) = ct.run()
    np.testing.assert_allclose(out, dense_tanh_sum(*XWB), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scan", ["unroll", "loop"])
def test_scan_body_kernels_map(scan):
    """The while loop XLA makes of the scan launches its body's kernels in its place; with a
    looped scan they map through the scan equation (4) to its one IR kernel; unrolled, the
    loop's counter and compare map to nothing, with a reason."""
    ct = compile_jax(scanned, XWB, scan=scan)
    by_ops = {tuple(op for op, _ in opcodes_and_keys(k)): k for k in ct.kernels}
    body = by_ops[("sine", "broadcast", "multiply")]
    assert body.ir_kernels == (("reduce_sum_1",) if scan == "unroll" else ("scan_2",))
    counter = by_ops[("add",)]
    if scan == "loop":
        assert counter.ir_kernels == ("scan_2",)
    else:
        assert counter.ir_kernels == () and "4: scan" in counter.unmapped
    (copy,) = [k for k in ct.kernels if opcodes_and_keys(k) == [("copy", None)]]
    assert copy.ir_kernels == () and "no jaxpr equation" in copy.unmapped
    assert not any(n.startswith("IR kernels no XLA kernel") for n in ct.notes)


def assert_covered(ct):
    """Every IR kernel is computed by some XLA kernel; every XLA kernel maps or says why."""
    done = {k for g in ct.kernels for k in g.ir_kernels}
    assert [k.name for k in ct.trace.program.kernels if k.name not in done] == []
    for g in ct.kernels:
        assert bool(g.ir_kernels) != bool(g.unmapped), g
    return sum(1 for g in ct.kernels if g.ir_kernels)


def test_mlp_is_covered():
    def mlp(params, x):
        for w, b in params:
            x = jax.nn.gelu(x @ w + b)
        return x

    params = [(normal((16, 32), seed=4), normal((32,), seed=5)),
              (normal((32, 8), seed=6), normal((8,), seed=7))]  # fmt: skip
    ct = compile_jax(mlp, (params, normal((4, 16))))
    assert assert_covered(ct) == len(ct.kernels)  # nothing XLA adds here
    (out,) = ct.run()
    np.testing.assert_allclose(out, mlp(params, normal((4, 16))), rtol=1e-5, atol=1e-5)


def test_gpt_block_is_covered():
    """One GPT-2 block (plain JAX, float32, toy sizes): 15 IR kernels; XLA on the CPU
    launches 26 kernels (8 dots as library calls, 18 loop fusions; the layer norms'
    elementwise prefixes recomputed in several fusions), every one computing a part of some
    IR kernel: the head-split layout copies carry the qkv bias add XLA fused into them."""
    fn, args = gpt_block()
    ct = compile_jax(fn, args)
    assert len(ct.trace.program.kernels) == 15
    mapped = assert_covered(ct)
    assert (len(ct.kernels), mapped) == (26, 26)
    (out,) = ct.run()
    np.testing.assert_allclose(out, jax.jit(fn)(*args), rtol=1e-5, atol=1e-5)


def test_flax_transformer_block_is_covered():
    nnx = pytest.importorskip("flax.nnx")
    model = load_module(EXAMPLES / "jax_transformer_flax.py").Model(
        16, 2, jnp.float32, rngs=nnx.Rngs(0)
    )
    x = normal((2, 5, 16))
    ct = compile_jax(model, (x,))
    # 14 IR kernels; XLA on the CPU: 25 kernels, each computing a part of some IR kernel
    assert len(ct.trace.program.kernels) == 14
    assert (len(ct.kernels), assert_covered(ct)) == (25, 25)
    assert "jax_transformer_flax.py:25" in ct.kernels[3].sources  # x + self.attn(...)
    (out,) = ct.run()
    np.testing.assert_allclose(out, model(x), rtol=1e-5, atol=1e-5)


def test_abstract_inputs_compile_but_do_not_run():
    structs = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in XWB)
    ct = compile_jax(dense_tanh_sum, structs)
    assert len(ct.kernels) == 2
    with pytest.raises(ValueError, match="compiled for ShapeDtypeStructs"):
        ct.run()


def test_keyword_arguments_are_closed_over():
    ct = compile_jax(lambda x, w, b: dense_tanh_sum(x, w, b), XWB[:2], {"b": XWB[2]})
    (out,) = ct.run()
    np.testing.assert_allclose(out, dense_tanh_sum(*XWB), rtol=1e-6, atol=1e-6)


def test_symbolic_sizes_are_refused_in_one_line():
    from solar.frontend.jax.symbolic_dims import SymbolicDims

    with pytest.raises(ValueError, match="drop symbolic="):
        compile_jax(dense_tanh_sum, XWB, symbolic=SymbolicDims({}))


def test_parse_hlo_refuses_text_without_entry():
    with pytest.raises(ValueError, match="no ENTRY computation"):
        parse_hlo("HloModule m\n")


# -- profiling --------------------------------------------------------------------------------


def test_profile_reads_the_cpu_launches_per_repetition():
    """On the CPU, XLA's runtime records the instructions it runs as tasks (the dot's library
    call); each repetition's launches name instructions of the compiled program."""
    big = (normal((256, 256)), normal((256, 256), seed=2), normal((256,), seed=3))
    ct = compile_jax(dense_tanh_sum, big)
    reps = profile_jax(ct.run, 2)
    assert len(reps) == 2
    names = {k.name for k in ct.kernels}
    for rep in reps:
        assert rep, "no launch recorded"
        for launch in rep:
            assert launch.hlo_op in names and launch.seconds > 0
    with pytest.raises(ValueError, match="reps must be at least 1"):
        profile_jax(ct.run, 0)
