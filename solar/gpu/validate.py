"""Numerical validation (DESIGN.md §7): execute the IR on the source program's own inputs and
weights, and compare every output (optionally every kernel's output) with the source's.

What is validated or measured is a :class:`Subject`, framework-neutral: a callable that runs
the source program on real arrays, its real inputs, and the traced IR with the values of its
inputs. Any frontend plugs in through :meth:`Subject.from_trace`, given a trace object with

* ``program``: the IR (:class:`solar.ir.program.Program`),
* ``output_names``: the IR names of the program's flattened array outputs, in order,
* ``values(fn, inputs)``: ``{IR input name: torch.Tensor}`` built from the real arrays,

which :class:`solar.frontend.torch.TorchTrace` provides (a JAX trace provides the same; its
arrays are converted with DLPack and timed with the host clock).

Tolerances (``‖out − ref‖ / ‖ref‖`` over the finite elements, computed in float64):
:data:`REL_TOL` by the output's dtype, loosened to the loosest float dtype the program computes
in (a bf16 intermediate feeding an fp32 output), and to :data:`TF32_TOL` when a contraction
runs in tf32. Integer and bool outputs may differ in at most :data:`INT_MISMATCH_TOL` of their
elements (argmax ties). A non-finite value where the reference is finite never passes; an
output whose reference has no finite element fails (nothing was checked).

Inputs are never zeros: problem files are built with a fixed seed on the target device, and
every floating parameter, buffer or input that is one constant value (``torch.ones``,
``torch.zeros``: LayerNorm weights, biases, masks), and every constant int8/uint8 parameter
(a quantised weight), is replaced by random values of the same sign and scale
(:func:`randomize_constants`), so a wrong index or a skipped term cannot hide.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from solar.ir.dtypes import is_float
from solar.ir.program import Program

__all__ = [
    "INT_MISMATCH_TOL",
    "REL_TOL",
    "SCHEMA",
    "TF32_TOL",
    "KernelCheck",
    "OutputCheck",
    "Subject",
    "ValidationReport",
    "compare",
    "discover",
    "load_real_problem",
    "problem_subject",
    "randomize_constants",
    "tolerance",
    "validate",
    "validate_paths",
    "validate_problem",
    "validate_subject",
]

SCHEMA = "solar.validate/1"

#: Relative-error tolerance by dtype (IR dtype names).
REL_TOL: dict[str, float] = {
    "float64": 1e-9,
    "float32": 1e-4,
    "float16": 2e-2,
    "bfloat16": 2e-2,
    "float8_e4m3fn": 1.25e-1,
    "float8_e5m2": 2.5e-1,
}
TF32_TOL = 5e-3
INT_MISMATCH_TOL = 1e-3
#: A program whose non-contraction statements run more instances than this is not executed
#: (the executor would take minutes); contractions run as einsums and do not count.
MAX_INSTANCES = 2e11


def _ir_dtype(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tolerance(dtype, program: Program | None = None) -> float:
    """Relative-error tolerance for an output of ``dtype`` (torch or IR dtype) of ``program``:
    the dtype's own, loosened to the loosest float dtype the program computes in and to tf32's
    when a contraction runs in tf32. 0 for integer and bool outputs (compared exactly)."""
    name = _ir_dtype(dtype)
    if name not in REL_TOL:
        return 0.0
    tol = REL_TOL[name]
    if program is not None:
        for decl in program.tensors.values():
            if is_float(decl.dtype) and decl.dtype in REL_TOL:
                tol = max(tol, REL_TOL[decl.dtype])
        if any(st.precision == "tf32" for k in program.kernels for st in k.statements):
            tol = max(tol, TF32_TOL)
    return tol


# ---------------------------------------------------------------------------------------------
# Comparing tensors


@dataclass
class OutputCheck:
    """One output (or intermediate) compared with its reference."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    rel_err: float  # relative error, or the mismatched fraction for integer/bool tensors
    max_abs_err: float
    tol: float
    ok: bool
    reason: str | None = None
    nonfinite: int = 0  # non-finite reference elements (matched exactly)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["shape"] = list(self.shape)
        return d


def compare(
    out: torch.Tensor, ref: torch.Tensor, *, tol: float, name: str = "", chunk: int = 1 << 25
) -> OutputCheck:
    """Compare ``out`` with the reference ``ref`` (see the module docstring for the rule)."""
    shape, dtype = tuple(ref.shape), _ir_dtype(ref.dtype)

    def fail(reason: str, rel=math.inf, mx=math.inf) -> OutputCheck:
        return OutputCheck(name, shape, dtype, rel, mx, tol, False, reason)

    if tuple(out.shape) != shape:
        return fail(f"shape {tuple(out.shape)} differs from the reference's {shape}")
    if out.dtype != ref.dtype:
        return fail(f"dtype {_ir_dtype(out.dtype)} differs from the reference's {dtype}")
    if out.device != ref.device:
        out = out.to(ref.device)
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    n = r.numel()
    if n == 0:
        return OutputCheck(name, shape, dtype, 0.0, 0.0, tol, True)
    if not (ref.dtype.is_floating_point or ref.dtype.is_complex):
        bad = 0
        mx = 0.0
        for a in range(0, n, chunk):
            oc, rc = o[a : a + chunk], r[a : a + chunk]
            neq = oc != rc
            bad += int(neq.sum())
            if ref.dtype != torch.bool and bool(neq.any()):
                mx = max(mx, float((oc[neq].double() - rc[neq].double()).abs().max()))
            elif bool(neq.any()):
                mx = 1.0
        frac = bad / n
        ok = frac <= INT_MISMATCH_TOL
        why = None if ok else f"{bad} of {n} elements differ ({frac:.3g} > {INT_MISMATCH_TOL})"
        return OutputCheck(name, shape, dtype, frac, mx, INT_MISMATCH_TOL, ok, why)
    diff2 = ref2 = 0.0
    mx = 0.0
    bad_nonfinite = 0
    ref_nonfinite = 0
    for a in range(0, n, chunk):
        oc, rc = o[a : a + chunk].double(), r[a : a + chunk].double()
        fo, fr = torch.isfinite(oc), torch.isfinite(rc)
        both = fo & fr
        nf_r = ~fr
        ref_nonfinite += int(nf_r.sum())
        same_nonfinite = (torch.isnan(oc) & torch.isnan(rc)) | (oc == rc)
        bad_nonfinite += int((fo != fr).sum()) + int((nf_r & ~fo & ~same_nonfinite).sum())
        d = (oc - rc)[both]
        if d.numel():
            diff2 += float((d * d).sum())
            mx = max(mx, float(d.abs().max()))
            rb = rc[both]
            ref2 += float((rb * rb).sum())
    if bad_nonfinite:
        return OutputCheck(
            name,
            shape,
            dtype,
            math.inf,
            math.inf,
            tol,
            False,
            f"{bad_nonfinite} elements are non-finite (NaN/inf) where the reference is not, "
            "or differ from a non-finite reference",
            ref_nonfinite,
        )
    if ref_nonfinite == n:
        why = "the reference has no finite element: nothing to compare"
        return OutputCheck(name, shape, dtype, math.nan, math.nan, tol, False, why, n)
    rel = math.sqrt(diff2 / ref2) if ref2 > 0 else (0.0 if diff2 == 0 else math.inf)
    ok = rel <= tol
    why = None if ok else f"relative error {rel:.3g} > tolerance {tol:.3g}"
    return OutputCheck(name, shape, dtype, rel, mx, tol, ok, why, ref_nonfinite)


# ---------------------------------------------------------------------------------------------
# What is validated and measured


def _is_jax(x) -> bool:
    return type(x).__module__.split(".")[0] in ("jax", "jaxlib")


def _is_jax_program(fn, args) -> bool:
    import sys

    if "jax" not in sys.modules:
        return False
    try:
        from solar.frontend.jax.trace import is_jax_program
    except ImportError:
        import jax

        return any(_is_jax(x) for x in jax.tree_util.tree_leaves(args))
    return is_jax_program(fn, args)


def _trace(model, args, *, precision, name):
    """:func:`solar.trace`, or the JAX frontend directly for JAX programs."""
    if _is_jax_program(model, args):
        from solar.frontend.jax import trace_jax

        return trace_jax(model, args, precision=precision, name=name)
    from solar.api import trace

    return trace(model, args, precision=precision, name=name)


def _torch_leaves(result) -> list[torch.Tensor]:
    from torch.utils import _pytree as pytree

    return [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]


def _jax_leaves(result) -> list[torch.Tensor]:
    import jax

    try:
        from solar.frontend.jax.lower import to_torch
    except ImportError:
        to_torch = torch.from_dlpack
    return [to_torch(x) for x in jax.tree_util.tree_leaves(result) if hasattr(x, "shape")]


@dataclass
class Subject:
    """A program ready to validate and measure, whatever its framework.

    ``run()`` runs the source program once on its real inputs and returns its result;
    ``flatten(result)`` gives the result's arrays as torch tensors in the order of
    ``output_names``; ``values()`` the IR's input values; ``timer`` is ``None`` (CUDA events
    on CUDA, the host clock elsewhere) or ``"host"`` (work on streams torch does not own)."""

    name: str
    run: Callable[[], object]
    flatten: Callable[[object], list[torch.Tensor]]
    program: Program
    values: Callable[[], Mapping[str, torch.Tensor]]
    output_names: list[str]
    device: torch.device
    framework: str = "torch"
    timer: str | None = None
    sync: Callable[[], None] | None = None
    trace: object = None  # the frontend's trace (TorchTrace: the fx graph, for per-kernel checks)
    model: object = None
    inputs: tuple = ()
    path: str | None = None
    notes: list[str] = field(default_factory=list)
    trace_s: float = 0.0

    @classmethod
    def from_trace(
        cls,
        fn,
        inputs,
        trace,
        *,
        name: str | None = None,
        framework: str | None = None,
        device: str | torch.device | None = None,
        path: str | None = None,
        notes: Sequence[str] = (),
    ) -> Subject:
        """A subject from a source callable ``fn``, its real ``inputs`` and a frontend trace
        (``program``, ``output_names``, ``values(fn, inputs)``: see the module docstring)."""
        args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
        if framework is None:
            framework = "jax" if _is_jax_program(fn, args) else "torch"
        if framework == "jax":
            import jax

            call, call_args = fn, args
            try:  # flax modules are called through the frontend's own preparation
                from solar.frontend.jax.trace import prepare

                prep = prepare(fn, args, getattr(trace, "weight_args", None))
                call, call_args = jax.jit(prep.fn), prep.args
            except ImportError:
                pass

            def run():
                return jax.block_until_ready(call(*call_args))

            flatten, timer = _jax_leaves, "host"
        else:

            def run():
                return fn(*args)

            flatten, timer = _torch_leaves, None

        def values():
            return trace.values(fn, args)

        if device is None:
            device = _device_of(fn, args)
        dev = torch.device(device)

        def sync():
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)

        return cls(
            name=name or trace.program.name,
            run=run,
            flatten=flatten,
            program=trace.program,
            values=values,
            output_names=list(trace.output_names),
            device=dev,
            framework=framework,
            timer=timer,
            sync=sync,
            trace=trace,
            model=fn,
            inputs=args,
            path=path,
            notes=list(notes),
        )

    def synchronize(self) -> None:
        if self.sync is not None:
            self.sync()


def _device_of(fn, args) -> torch.device:
    from torch.utils import _pytree as pytree

    leaves = pytree.tree_leaves(args)
    if any(_is_jax(x) for x in leaves) or _is_jax_program(fn, args):
        import jax

        leaves = jax.tree_util.tree_leaves(args)
    for t in leaves:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            return t.device
        if _is_jax(t) and hasattr(t, "devices"):
            d = next(iter(t.devices()))
            return torch.device("cuda" if d.platform == "gpu" else "cpu")
    if isinstance(fn, torch.nn.Module):
        for t in [*fn.parameters(), *fn.buffers()]:
            if t.device.type != "meta":
                return t.device
    return torch.device("cpu")


def make_subject(
    model,
    inputs,
    *,
    trace=None,
    name: str | None = None,
    precision: str | None = None,
    path: str | None = None,
    notes: Sequence[str] = (),
) -> Subject:
    """A :class:`Subject` for a module or function on real arrays (traced here with
    :func:`solar.trace` unless ``trace`` is given; the framework is told from the inputs)."""
    args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    t0 = time.perf_counter()
    if trace is None:
        trace = _trace(model, args, precision=precision, name=name)
    s = Subject.from_trace(model, args, trace, name=name, path=path, notes=notes)
    s.trace_s = time.perf_counter() - t0
    return s


# ---------------------------------------------------------------------------------------------
# Real inputs for problem files


def _fresh_like(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor | None:
    """Random values in place of a constant tensor ``t`` (None: leave it)."""
    if t.numel() <= 1:
        return None
    flat = t.detach().reshape(-1)
    c = flat[0]
    if t.dtype.is_floating_point:
        if not bool(torch.isfinite(c)) or not bool((flat == c).all()):
            return None
        u = torch.rand(t.shape, generator=gen, dtype=torch.float32).to(t.device)
        c = float(c)
        new = (u - 0.5) if c == 0 else c * (0.5 + u)
        return new.to(t.dtype)
    if t.dtype in (torch.int8, torch.uint8):
        if not bool((flat == c).all()):
            return None
        lo, hi = (-128, 128) if t.dtype == torch.int8 else (0, 256)
        return torch.randint(lo, hi, t.shape, generator=gen, dtype=torch.int32).to(t)
    return None


def randomize_constants(model, inputs, *, seed: int = 0) -> tuple[tuple, list[str]]:
    """Replace constant-filled tensors (see the module docstring) with random ones of the same
    sign and scale: parameters and buffers in place, inputs in the returned tuple. Returns
    ``(inputs, notes)``."""
    from torch.utils import _pytree as pytree

    gen = torch.Generator().manual_seed(seed + 1_000_003)
    notes: list[str] = []
    if isinstance(model, torch.nn.Module):
        with torch.no_grad():
            named = [(f"parameter {n}", p, True) for n, p in model.named_parameters()]
            named += [(f"buffer {n}", b, False) for n, b in model.named_buffers()]
            for what, t, is_param in named:
                if t.device.type == "meta" or (not is_param and not t.dtype.is_floating_point):
                    continue
                new = _fresh_like(t, gen)
                if new is not None:
                    t.copy_(new)
                    notes.append(what)
    count = [0]

    def fix(x):
        if isinstance(x, torch.Tensor) and x.device.type != "meta" and x.dtype.is_floating_point:
            new = _fresh_like(x, gen)
            if new is not None:
                count[0] += 1
                return new
        return x

    inputs = pytree.tree_map(fix, tuple(inputs))
    if count[0]:
        notes.append(f"{count[0]} constant input(s)")
    if notes:
        head = "randomized constant-filled tensors (never validate or time on zeros): "
        notes = [head + ", ".join(notes)]
    return inputs, notes


def load_real_problem(
    path: str | Path,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    overrides: Mapping[str, object] | None = None,
    randomize: bool = True,
    strict_overrides: bool = True,
):
    """Build a KernelBench-style problem file with real tensors on ``device``:
    ``Model(*get_init_inputs())`` and ``get_inputs()`` after ``torch.manual_seed(seed)``, in
    eval mode, with constant-filled tensors randomized. ``overrides`` sets module-level
    constants first (``{"BATCH": 4}``: small CPU runs of full-size files); a name the file
    lacks is an error, or ignored when ``strict_overrides`` is false (one set for a folder).
    Returns ``(solar.problem.Problem, notes)``."""
    from solar.problem import Problem, ProblemError, load_module

    path = Path(path)
    module = load_module(path)
    jax_problem = _real_jax_problem(
        module, path, device=device, seed=seed, overrides=overrides, strict=strict_overrides,
        randomize=randomize,
    )  # fmt: skip
    if jax_problem is not None:
        return jax_problem
    missing = [n for n in ("Model", "get_inputs") if not hasattr(module, n)]
    if missing:
        raise ProblemError(
            f"{path}: defines no {' or '.join(missing)}; a problem file needs a Model class, "
            "get_inputs() and optionally get_init_inputs()"
        )
    notes: list[str] = []
    for k, v in (overrides or {}).items():
        if not hasattr(module, k):
            if strict_overrides:
                raise ProblemError(f"{path}: has no module-level name {k!r} to override")
            continue
        setattr(module, k, v)
        notes.append(f"{k} = {v!r} (overridden)")
    init = getattr(module, "get_init_inputs", lambda: [])
    torch.manual_seed(seed)
    try:
        with torch.device(device):
            model = module.Model(*init())
            inputs = tuple(module.get_inputs())
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        raise ProblemError(
            f"{path}: building Model/get_inputs on the {device} device failed: "
            f"{type(e).__name__}: {e}"
        ) from e
    if isinstance(model, torch.nn.Module):
        model.eval()
    if randomize:
        inputs, more = randomize_constants(model, inputs, seed=seed)
        notes += more
    return Problem(path, path.stem, model, tuple(inputs)), notes


def _flax_kind(obj) -> str | None:
    if not isinstance(obj, type):
        return None
    try:
        from flax import linen, nnx
    except ImportError:
        return None
    if issubclass(obj, nnx.Module):
        return "nnx"
    if issubclass(obj, linen.Module):
        return "linen"
    return None


def _real_jax_problem(module, path, *, device, seed, overrides, strict, randomize):
    """A JAX problem file (see :mod:`solar.frontend.jax.problem`) with real arrays: each
    ``jax.ShapeDtypeStruct`` of ``get_inputs()``/``get_params()`` becomes random values
    (normal floats, integers in [0, 8), fair bools), Flax models are initialised for real
    with the seed, constant-filled weights are randomized. None if not a JAX problem file."""
    import sys

    model_cls = getattr(module, "Model", None)
    forward = getattr(module, "forward", None)
    if "jax" not in sys.modules:
        return None
    kind = _flax_kind(model_cls)
    if kind is None and model_cls is not None:
        from solar.frontend.jax.problem import imports_jax

        if imports_jax(module):  # a plain Model with params and apply(params, *inputs)
            kind = "apply"
    if kind is None and not (model_cls is None and callable(forward)):
        return None
    import inspect
    import itertools
    import os

    from solar.problem import Problem, ProblemError

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to torch
    import jax
    import jax.numpy as jnp

    notes: list[str] = []
    for k, v in (overrides or {}).items():
        if not hasattr(module, k):
            if strict:
                raise ProblemError(f"{path}: has no module-level name {k!r} to override")
            continue
        setattr(module, k, v)
        notes.append(f"{k} = {v!r} (overridden)")
    want_gpu = torch.device(device).type == "cuda"
    devs = [d for d in jax.devices() if (d.platform == "gpu") == want_gpu] or jax.devices()
    jdev = devs[0]
    key = jax.random.key(seed)
    count = itertools.count()

    def is_struct(x) -> bool:
        return isinstance(x, jax.ShapeDtypeStruct)

    def real(x):
        if not is_struct(x):
            return x
        k = jax.random.fold_in(key, next(count))
        dt = jnp.dtype(x.dtype)
        if jnp.issubdtype(dt, jnp.floating):
            v = jax.random.normal(k, x.shape, jnp.float32).astype(dt)
        elif dt == jnp.bool_:
            v = jax.random.bernoulli(k, 0.5, x.shape)
        elif jnp.issubdtype(dt, jnp.integer):
            v = jax.random.randint(k, x.shape, 0, 8).astype(dt)
        else:
            raise ProblemError(f"{path}: cannot make random values of dtype {dt}")
        return jax.device_put(v, jdev)

    def fresh(x):
        """Random values in place of a constant-filled float array."""
        if not isinstance(x, jax.Array) or x.size <= 1:
            return x
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return x
        flat = x.reshape(-1)
        c = flat[0]
        if not bool(jnp.isfinite(c)) or not bool(jnp.all(flat == c)):
            return x
        u = jax.random.uniform(jax.random.fold_in(key, next(count)), x.shape, jnp.float32)
        c = float(c)
        new = (u - 0.5) if c == 0 else c * (0.5 + u)
        return new.astype(x.dtype)

    try:
        with jax.default_device(jdev):
            init = list(getattr(module, "get_init_inputs", lambda: [])())
            inputs = jax.tree_util.tree_map(real, tuple(module.get_inputs()), is_leaf=is_struct)
            if kind == "nnx":
                from flax import nnx

                takes = "rngs" in inspect.signature(model_cls.__init__).parameters
                model = model_cls(*init, rngs=nnx.Rngs(seed)) if takes else model_cls(*init)
                if randomize:
                    nnx.update(model, jax.tree_util.tree_map(fresh, nnx.state(model)))
                fn, args = model, inputs
            elif kind == "linen":
                model = model_cls(*init)
                variables = model.init(key, *inputs)
                if randomize:
                    variables = jax.tree_util.tree_map(fresh, variables)
                fn, args = model, (variables, *inputs)
            elif kind == "apply":
                model = model_cls(*init)
                params = jax.tree_util.tree_map(real, model.params, is_leaf=is_struct)
                fn, args = model.apply, (params, *inputs)
            else:
                get_params = getattr(module, "get_params", None)
                if get_params is not None:
                    params = jax.tree_util.tree_map(real, get_params(*init), is_leaf=is_struct)
                    fn, args = forward, (params, *inputs)
                else:
                    fn, args = forward, inputs
            if randomize and kind in (None, "apply"):
                args = jax.tree_util.tree_map(fresh, args)
    except ProblemError:
        raise
    except Exception as e:
        raise ProblemError(
            f"{path}: building the JAX problem with real arrays failed: {type(e).__name__}: {e}"
        ) from e
    notes.append("JAX problem: random arrays from its ShapeDtypeStructs (integers in [0, 8))")
    return Problem(path, path.stem, fn, tuple(args)), notes


def problem_subject(
    path: str | Path,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    overrides: Mapping[str, object] | None = None,
    randomize: bool = True,
    precision: str | None = None,
    strict_overrides: bool = True,
) -> Subject:
    """A :class:`Subject` for a problem file built with real tensors on ``device``."""
    problem, notes = load_real_problem(
        path,
        device=device,
        seed=seed,
        overrides=overrides,
        randomize=randomize,
        strict_overrides=strict_overrides,
    )
    return make_subject(
        problem.model,
        problem.inputs,
        name=problem.name,
        precision=precision,
        path=str(path),
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------
# The report


@dataclass
class KernelCheck:
    """The outputs of one IR kernel compared with the source's intermediates."""

    kernel: str
    op: str
    tensors: list[OutputCheck]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tensors)

    @property
    def rel_err(self) -> float:
        return max((t.rel_err for t in self.tensors), default=0.0)

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "op": self.op,
            "ok": self.ok,
            "rel_err": self.rel_err,
            "tensors": [t.to_dict() for t in self.tensors],
        }


@dataclass
class ValidationReport:
    """IR vs source, per output (and per kernel when asked). ``status`` is ``passed``,
    ``failed`` (some output differs), ``error`` (something raised; ``reason`` says what) or
    ``skipped`` (``reason`` says why)."""

    program: str
    device: str
    status: str
    outputs: list[OutputCheck] = field(default_factory=list)
    kernels: list[KernelCheck] | None = None
    first_bad_kernel: str | None = None
    reason: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    path: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    @property
    def worst(self) -> OutputCheck | None:
        bad = [o for o in self.outputs if not o.ok]
        pool = bad or self.outputs
        return max(pool, key=lambda o: o.rel_err / o.tol if o.tol else o.rel_err, default=None)

    def summary(self) -> str:
        w = self.worst
        s = f"{self.program}: {self.status}"
        if w is not None:
            s += f" (worst {w.name}: rel err {w.rel_err:.3g}, tol {w.tol:.3g})"
        if self.first_bad_kernel:
            s += f"; first differing kernel {self.first_bad_kernel}"
        if self.reason and self.status != "passed":
            s += f": {self.reason}"
        return s

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "path": self.path,
            "device": self.device,
            "status": self.status,
            "reason": self.reason,
            "outputs": [o.to_dict() for o in self.outputs],
            "kernels": None if self.kernels is None else [k.to_dict() for k in self.kernels],
            "first_bad_kernel": self.first_bad_kernel,
            "seconds": dict(self.seconds),
            "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(_jsonable(self.to_dict()), indent=indent)

    def renderables(self) -> list:
        from rich.table import Table

        t = Table(title=f"{self.program}: IR vs source on {self.device}: {self.status}")
        for c in ("output", "shape", "dtype", "rel err", "tol", "ok", "why"):
            t.add_column(c)
        for o in self.outputs:
            t.add_row(
                o.name,
                "x".join(map(str, o.shape)),
                o.dtype,
                f"{o.rel_err:.3g}",
                f"{o.tol:.3g}",
                "yes" if o.ok else "NO",
                o.reason or "",
            )
        out: list = [t]
        if self.kernels:
            k = Table(title="per kernel (IR intermediates vs the source's)")
            for c in ("kernel", "op", "rel err", "ok"):
                k.add_column(c)
            for kc in self.kernels:
                k.add_row(kc.kernel, kc.op, f"{kc.rel_err:.3g}", "yes" if kc.ok else "NO")
            out.append(k)
        if self.reason:
            out.append(f"{self.status}: {self.reason}")
        out += [f"note: {n}" for n in self.notes]
        return out

    def __str__(self) -> str:
        return _render(self.renderables())


def _render(renderables) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=140, color_system=None, force_terminal=False)
    for r in renderables:
        console.print(r)
    return buf.getvalue().rstrip()


def _jsonable(x):
    """JSON-safe copy: non-finite floats become strings ("inf", "nan")."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


# ---------------------------------------------------------------------------------------------
# Validation


def _is_product(e) -> bool:
    from solar.ir.scalar import Call, Const, Load

    if isinstance(e, (Load, Const)):
        return True
    if isinstance(e, Call) and e.op in ("mul", "cast"):
        return all(_is_product(a) for a in e.args)
    return False


def execution_cost(program: Program) -> float:
    """Instances the executor evaluates element by element (contractions excluded)."""
    total = 0.0
    for k in program.kernels:
        reps = math.prod(int(d.extent) for d in k.loops) if k.loops else 1
        for st in k.statements:
            if st.reduce == "sum" and _is_product(st.expr):
                continue
            total += reps * float(math.prod(int(d.extent) for d in st.dims))
    return total


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def validate_subject(
    subject: Subject,
    *,
    per_kernel: bool | str = False,
    tol: float | Mapping[str, float] | None = None,
    max_instances: float = MAX_INSTANCES,
    reference: Sequence[torch.Tensor] | None = None,
) -> ValidationReport:
    """Execute the IR on the subject's values and compare with the source's outputs.

    ``per_kernel``: ``True`` also compares every kernel's outputs with the source's
    intermediates (torch subjects; the fx graph is run on the same values), ``"auto"`` only
    when an output fails (to find the first differing kernel). ``tol`` overrides the
    tolerance: one number, or ``{dtype: number}``. ``reference``: the source's flattened
    outputs if already computed (the source is not run again)."""
    program, dev = subject.program, subject.device
    rep = ValidationReport(subject.name, str(dev), "error", path=subject.path)
    rep.notes = list(subject.notes)
    if subject.trace_s:
        rep.seconds["trace"] = subject.trace_s
    cost = execution_cost(program)
    if cost > max_instances:
        rep.status = "skipped"
        rep.reason = (
            f"the IR's element-wise statements run {cost:.3g} instances (> {max_instances:.3g}): "
            "too slow to execute at this size"
        )
        return rep

    def tol_of(dtype) -> float:
        if isinstance(tol, Mapping):
            name = _ir_dtype(dtype)
            if name in tol:
                return float(tol[name])
        elif tol is not None and (_ir_dtype(dtype) in REL_TOL):
            return float(tol)
        return tolerance(dtype, program)

    from solar.ir.execute import execute

    try:
        values = subject.values()
        t0 = time.perf_counter()
        got = execute(program, values, device=dev)
        _sync(dev)
        rep.seconds["ir"] = time.perf_counter() - t0
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        rep.reason = f"executing the IR failed: {type(e).__name__}: {_line(e)}"
        return rep
    try:
        if reference is None:
            t0 = time.perf_counter()
            with torch.no_grad():
                result = subject.run()
            subject.synchronize()
            rep.seconds["source"] = time.perf_counter() - t0
            reference = subject.flatten(result)
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        rep.reason = f"running the source program failed: {type(e).__name__}: {_line(e)}"
        return rep
    t0 = time.perf_counter()
    names = subject.output_names
    if len(reference) != len(names):
        rep.status = "failed"
        rep.reason = f"the source returns {len(reference)} tensors; the IR has {len(names)} outputs"
        return rep
    for i, (name, ref) in enumerate(zip(names, reference)):
        label = name if names.count(name) == 1 else f"{name}#{i}"
        rep.outputs.append(compare(got[name], ref, tol=tol_of(ref.dtype), name=label))
    rep.seconds["compare"] = time.perf_counter() - t0
    rep.status = "passed" if all(o.ok for o in rep.outputs) else "failed"
    if rep.status == "failed":
        bad = [o.name for o in rep.outputs if not o.ok]
        rep.reason = f"{len(bad)} of {len(rep.outputs)} outputs differ ({', '.join(bad[:4])})"
    del got
    if per_kernel is True or (per_kernel == "auto" and rep.status == "failed"):
        t0 = time.perf_counter()
        try:
            rep.kernels = kernel_checks(subject, values, tol_of)
            bad_k = next((k for k in rep.kernels if not k.ok), None)
            rep.first_bad_kernel = bad_k.kernel if bad_k else None
        except torch.cuda.OutOfMemoryError:
            rep.notes.append("per-kernel check skipped: out of device memory")
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        except Exception as e:
            rep.notes.append(f"per-kernel check failed: {type(e).__name__}: {_line(e)}")
        rep.seconds["per_kernel"] = time.perf_counter() - t0
    return rep


def _line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:300] if s else type(e).__name__


def kernel_checks(
    subject: Subject, values: Mapping[str, torch.Tensor], tol_of: Callable[[object], float]
) -> list[KernelCheck]:
    """Every IR kernel's outputs vs the source's intermediates: the IR runs with
    ``keep_intermediates``, the traced fx graph runs on the same values, and each fx node's
    result is compared with the IR tensor of the same name (shapes and dtypes must agree;
    views of inputs and unnamed tensors are skipped)."""
    import torch.fx as fx

    from solar.frontend.torch.lower import output_stem
    from solar.ir.execute import execute

    trace = subject.trace
    gm = getattr(trace, "graph", None)
    bindings = getattr(trace, "bindings", None)
    if not isinstance(gm, fx.GraphModule) or bindings is None:
        raise ValueError("per-kernel checks need a torch trace (an fx graph and bindings)")
    program, dev = subject.program, subject.device
    kept = execute(program, values, device=dev, keep_intermediates=True)
    writer: dict[str, int] = {}
    for ki, k in enumerate(program.kernels):
        for st in k.statements:
            writer.setdefault(program.base(st.out.tensor), ki)
    mutating = any(
        isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable
        for n in gm.graph.nodes
        if n.op == "call_function"
    )
    args = [values[n] for n in bindings]
    if mutating:
        args = [a.clone() for a in args]
    found: dict[int, list[OutputCheck]] = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
                return r
            multi = isinstance(r, (tuple, list))
            vals = list(r) if multi else [r]
            for i, v in enumerate(vals):
                name = output_stem(n, i) if multi else n.name
                if not isinstance(v, torch.Tensor) or name not in kept:
                    continue
                decl = program.tensors.get(name)
                ki = writer.get(program.base(name)) if decl is not None else None
                if ki is None or decl.shape != tuple(v.shape):
                    continue
                got = kept[name]
                if got.dtype != v.dtype:
                    continue
                found.setdefault(ki, []).append(compare(got, v, tol=tol_of(v.dtype), name=name))
            return r

    with torch.no_grad():
        Recorder(gm).run(*args)
    _sync(dev)
    return [
        KernelCheck(program.kernels[ki].name, program.kernels[ki].op, checks)
        for ki, checks in sorted(found.items())
    ]


def validate(
    model,
    inputs,
    *,
    per_kernel: bool | str = False,
    tol: float | Mapping[str, float] | None = None,
    precision: str | None = None,
    name: str | None = None,
    trace=None,
) -> ValidationReport:
    """Validate the IR of ``model(*inputs)`` against the model itself, on the real tensors
    given (their device is where both run: CUDA at full size, or CPU at small sizes)."""
    subject = make_subject(model, inputs, trace=trace, name=name, precision=precision)
    return validate_subject(subject, per_kernel=per_kernel, tol=tol)


def validate_problem(
    path: str | Path,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    per_kernel: bool | str = "auto",
    tol: float | Mapping[str, float] | None = None,
    overrides: Mapping[str, object] | None = None,
    precision: str | None = None,
    strict_overrides: bool = True,
) -> ValidationReport:
    """Validate a problem file built with real tensors on ``device`` (see
    :func:`load_real_problem`); errors become a report with status ``error``."""
    path = Path(path)
    try:
        subject = problem_subject(
            path,
            device=device,
            seed=seed,
            overrides=overrides,
            precision=precision,
            strict_overrides=strict_overrides,
        )
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        return ValidationReport(
            path.stem,
            str(device),
            "error",
            reason=f"{type(e).__name__}: {_line(e)}",
            path=str(path),
        )
    return validate_subject(subject, per_kernel=per_kernel, tol=tol)


# ---------------------------------------------------------------------------------------------
# Batches


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Problem files: each file as given, and every ``*.py`` below each folder (sorted; names
    starting with ``_`` or ``.`` skipped)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out += sorted(
                f
                for f in p.rglob("*.py")
                if not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts)
            )
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return out


def progress(items: Sequence, *, desc: str = "", enable: bool = True):
    """Iterate with a progress bar (tqdm, else rich, else none)."""
    if not enable:
        yield from items
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(items, desc=desc, total=len(items), dynamic_ncols=True)
        for x in bar:
            bar.set_postfix_str(getattr(x, "stem", str(x))[:40])
            yield x
        return
    try:
        from rich.progress import track
    except ImportError:
        yield from items
        return
    yield from track(items, description=desc, total=len(items), transient=True)


def _free(device) -> None:
    import gc

    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def validate_paths(
    paths: Iterable[str | Path],
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    per_kernel: bool | str = "auto",
    tol: float | Mapping[str, float] | None = None,
    precision: str | None = None,
    show_progress: bool = True,
    overrides: Mapping[str, object] | None = None,
) -> list[ValidationReport]:
    """Validate every problem file under ``paths``; a failing file never stops the batch.
    ``overrides`` are applied to the files that define those names."""
    reports = []
    for path in progress(discover(paths), desc="validate", enable=show_progress):
        try:
            r = validate_problem(
                path,
                device=device,
                seed=seed,
                per_kernel=per_kernel,
                tol=tol,
                precision=precision,
                overrides=overrides,
                strict_overrides=False,
            )
        except torch.cuda.OutOfMemoryError as e:
            r = ValidationReport(path.stem, str(device), "error", reason=f"out of memory: {e}")
        r.path = str(path)
        reports.append(r)
        _free(device)
    return reports


# ---------------------------------------------------------------------------------------------
# Command line


def parse_sets(items: Sequence[str] | None) -> dict[str, object]:
    """``["BATCH=4", "DTYPE='x'"]`` -> ``{"BATCH": 4, "DTYPE": "x"}`` (Python literals; other
    text stays a string)."""
    import ast

    out: dict[str, object] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ValueError(f"--set {item!r}: expected NAME=VALUE")
        try:
            out[name.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            out[name.strip()] = value.strip()
    return out


def add_set_option(p) -> None:
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="override a module-level constant of the problem files (e.g. --set BATCH=4), "
        "for small runs; repeatable",
    )


def _default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def cmd_validate(args) -> int:
    files = discover(args.paths)
    device = args.device or _default_device()
    per_kernel = True if args.per_kernel else "auto"
    reports = validate_paths(
        files,
        device=device,
        seed=args.seed,
        per_kernel=per_kernel,
        tol=args.tol,
        precision=args.precision,
        show_progress=len(files) > 1 and not args.json,
        overrides=parse_sets(args.set),
    )
    if args.json or args.out:
        if len(reports) == 1:
            doc = reports[0].to_dict()
        else:
            doc = {
                "schema": "solar.validate-batch/1",
                "device": device,
                "programs": [r.to_dict() for r in reports],
            }
        text = json.dumps(_jsonable(doc), indent=2)
        if args.out:
            Path(args.out).write_text(text + "\n")
        else:
            print(text)
    if not args.json:
        if len(reports) == 1:
            print(reports[0])
        else:
            for r in reports:
                print(r.summary())
            n_ok = sum(r.ok for r in reports)
            print(f"{n_ok} of {len(reports)} programs passed")
    return 0 if all(r.status in ("passed", "skipped") for r in reports) else 1


def register(subparsers) -> None:
    """Add ``solar validate`` to the CLI's subparsers."""
    p = subparsers.add_parser(
        "validate",
        help="execute the IR at full size and compare with the source program's outputs",
    )
    p.add_argument("paths", nargs="+", help="problem files or folders of them")
    p.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    p.add_argument("--seed", type=int, default=0, help="seed of weights and inputs (0)")
    p.add_argument(
        "--per-kernel",
        action="store_true",
        help="also compare every kernel's outputs (default: only when an output fails)",
    )
    p.add_argument("--tol", type=float, default=None, help="override the relative tolerance")
    p.add_argument("--precision", choices=["tf32", "ieee"], default=None)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--out", help="also write the JSON report to this file")
    add_set_option(p)
    p.set_defaults(func=cmd_validate)
