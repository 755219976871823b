"""Analytical counts against the counting oracle (:mod:`solar.interp.torch.oracle`), for every
registered PyTorch lowering and JAX rule.

Each case (``oracle_cases_torch``, ``oracle_cases_jax``) draws shapes and parameters with
hypothesis, traces a program that calls its operator, and compares every count of every
statement and kernel with the oracle's enumeration: op counts per op class, DRAM elements read
and written per storage base, per kernel and for the fused program. An exact count must equal
the oracle's; a proven lower bound (a gather or scatter, whose elements are data) must not
exceed it. Each program is checked twice: with the default enumeration limits, and with tiny
ones (:func:`solar.ir.limits.limits`), which make these small shapes take the
paths large shapes take (progressions, interval solving, sweeps, lower bounds); there,
contractions must stay exact (a contraction's count never falls back to a bound).

A registered lowering without a case fails :func:`test_registry_complete`, which prints how many
it covered.
"""

from __future__ import annotations

import pytest
import torch
from eager_oracle import trace_pre_dispatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle_cases_torch import CASES as TORCH_CASES
from oracle_cases_torch import Case

from solar.frontend.torch import LOWERINGS, trace_torch
from solar.frontend.torch.registry import NAMED_LOWERINGS
from solar.interp.torch.oracle import check, count
from solar.ir.cost import contraction_operands, op_counts
from solar.ir.limits import limits
from solar.ir.program import Program

# Tiny limits: larger than any one loop extent of the cases (so a guarded group's short dims
# are still enumerated, as a real convolution's taps are) and smaller than their products.
TINY = {"enum": 16, "mask": 4, "segments": 4}


def assert_counts(program: Program, values: dict) -> None:
    """Every analytical count of ``program`` against the oracle, at default and tiny limits."""
    counts = count(program, values)
    bad = check(program, counts=counts)
    assert not bad, "\n".join(map(str, bad)) + f"\n{program}"
    with limits(**TINY):
        bad = check(program, counts=counts)
        assert not bad, "tiny limits:\n" + "\n".join(map(str, bad)) + f"\n{program}"
        for k in program.kernels:
            for st_ in k.statements:
                pair = contraction_operands(st_)
                if pair is not None and not any(ld.indirect for ld in pair):
                    assert op_counts(program, st_, k).exact, f"inexact contraction in\n{program}"


def run_torch(case: Case, draw) -> None:
    fn, inputs = case.build(draw)
    if case.error is not None:
        with pytest.raises(case.error, match=case.op.replace(".", r"\.")):
            trace_torch(fn, inputs)
        return
    if case.pre_dispatch:
        program, values, _ = trace_pre_dispatch(fn, *inputs)
        ops = {k.op for k in program.kernels}
    else:
        trace = trace_torch(fn, inputs, observe=case.observe)
        program, values = trace.program, trace.values(fn, inputs)
        ops = {str(n.target) for n in trace.graph.graph.nodes if n.op == "call_function"}
    packets = {o.rsplit(".", 1)[0] for o in ops}  # a packet key: any overload of it
    assert case.op in ops | packets, f"the case for {case.op} traced {sorted(ops)}"
    assert_counts(program, values)


SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: c.op)
def test_torch_lowering_counts(case: Case):
    @settings(SETTINGS, max_examples=case.examples)
    @given(data=st.data())
    def run(data):
        with torch.no_grad():
            run_torch(case, data.draw)

    run()


# ------------------------------------------------------------------------------------ JAX

jax = pytest.importorskip("jax")
from oracle_cases_jax import CASES as JAX_CASES  # noqa: E402
from oracle_cases_jax import Case as JaxCase  # noqa: E402

from solar.frontend.jax import LOWERINGS as JAX_RULES  # noqa: E402
from solar.frontend.jax import trace_jax  # noqa: E402


def primitives(fn, inputs) -> set[str]:
    """Names of the primitives in ``fn``'s jaxpr, sub-jaxprs included."""
    names: set[str] = set()

    def walk(jaxpr) -> None:
        for eqn in jaxpr.eqns:
            names.add(eqn.primitive.name)
            for p in eqn.params.values():
                for q in p if isinstance(p, (list, tuple)) else [p]:
                    inner = getattr(q, "jaxpr", q)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(jax.make_jaxpr(fn)(*inputs).jaxpr)
    return names


def run_jax(case: JaxCase, draw) -> None:
    fn, inputs = case.build(draw)
    assert case.op in primitives(fn, inputs), f"the case for {case.op} has no {case.op}"
    if case.error is not None:
        with pytest.raises(case.error, match=case.match or case.op):
            trace_jax(fn, inputs)
        return
    trace = trace_jax(fn, inputs, precision="ieee", scan=case.scan)
    assert_counts(trace.program, trace.values(fn, inputs))


@pytest.mark.parametrize("case", JAX_CASES, ids=lambda c: f"{c.op}-{c.scan}")
def test_jax_rule_counts(case: JaxCase):
    @settings(SETTINGS, max_examples=case.examples)
    @given(data=st.data())
    def run(data):
        run_jax(case, data.draw)

    run()


# Primitives JAX 0.10 defines but cannot put in a jaxpr (no abstract evaluation rule: binding
# one fails, checked below), so no case can trace them.
UNREACHABLE = ("zeros_like", "custom_jvp_call_jaxpr")
#: primitives only a symbolic trace records (a symbolic dim read as a value): the oracle runs
#: concrete programs; their counts are held against numeric traces in tests/test_symbolic_jax.py
SYMBOLIC_ONLY = ("dim_as_value",)


def jax_primitives() -> dict[str, object]:
    """The primitives the installed JAX defines (its loaded modules' Primitive objects), by
    name; registered names outside it are other JAX versions' spellings."""
    import sys

    import oracle_cases_jax  # noqa: F401  (imports the modules the cases bind from)
    from jax.extend.core import Primitive

    return {
        v.name: v
        for m in list(sys.modules.values())
        if getattr(m, "__name__", "").startswith("jax")
        for v in list(vars(m).values())
        if isinstance(v, Primitive)
    }


def test_registry_complete(capsys):
    """Every registered PyTorch lowering and JAX rule has an oracle case (JAX names of other
    versions excepted: the installed JAX has no such primitive)."""
    keys = {str(k) for k in LOWERINGS} | set(NAMED_LOWERINGS)
    covered = {c.op for c in TORCH_CASES}
    missing = sorted(keys - covered)
    assert not missing, f"registered lowerings without an oracle case: {missing}"
    assert not covered - keys, f"cases for unregistered operators: {sorted(covered - keys)}"
    refused = sum(c.error is not None for c in TORCH_CASES)

    rules = set(JAX_RULES)
    jcovered = {c.op for c in JAX_CASES}
    assert not jcovered - rules, f"cases for unregistered primitives: {jcovered - rules}"
    prims = jax_primitives()
    for name in UNREACHABLE:
        with pytest.raises(NotImplementedError):
            jax.make_jaxpr(lambda x, p=prims[name]: p.bind(x))(1.0)
    other = rules - set(prims)
    missing = sorted(rules - jcovered - other - set(UNREACHABLE) - set(SYMBOLIC_ONLY))
    assert not missing, f"registered JAX rules without an oracle case: {missing}"
    jrefused = {c.op for c in JAX_CASES if c.error is not None}
    with capsys.disabled():
        print(
            f"\ncount oracle: {len(covered)} of {len(keys)} registered PyTorch lowerings "
            f"covered ({len(covered) - refused} counted, {refused} refused with a clear "
            f"error); {len(jcovered)} of {len(rules)} JAX rules covered "
            f"({len(jcovered - jrefused)} counted, {len(jrefused)} refused), the other "
            f"{len(rules - jcovered)} not primitives JAX {jax.__version__} can trace: "
            f"{', '.join(sorted(rules - jcovered))}"
        )
