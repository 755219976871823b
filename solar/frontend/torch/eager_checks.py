"""The dtype and device checks eager PyTorch makes, made while tracing: no bound for a
program PyTorch refuses to run.

The trace runs on fake tensors, whose kernels are PyTorch's meta kernels: they compute shapes
and dtypes but skip most of the checks the eager CPU and CUDA kernels make. A bf16
``nn.Linear`` fed an fp32 input traces on meta (and would get a bound), while eager PyTorch
raises ``mat1 and mat2 must have the same dtype``. :data:`RULES` is the one table of those
checks: per family of operators, the arguments whose dtypes eager requires to agree and the
arguments that must be index tensors of given dtypes.

A rule only *flags* a call. What decides, and what is said, is eager PyTorch itself: the
flagged operator is run on tiny CPU stand-ins of its tensors (same dtypes and ranks, every
size 1; see :func:`stand_ins`) with the same other arguments, and its exception, PyTorch's
own message and type, is raised as a :class:`~solar.frontend.program_errors.ProgramError` at
the user's line, provided the same call with the dtypes made to agree runs (so the refusal is
about the dtypes, not about the stand-ins). Where eager accepts the stand-ins (a mix that
PyTorch promotes or allows), the trace goes on. The messages are the CPU kernels'
(the trace runs on CPU fake tensors); a CUDA kernel words the same refusal its own way.

What the CPU stand-ins cannot show, the target's own gaps, is one more table:
:data:`CUDA_KERNELS`, the CUDA kernels whose ``AT_DISPATCH`` list is narrower than the CPU's
(cuBLAS runs no integer GEMM: int8 ``mm`` raises ``"addmm_cuda" not implemented for 'Char'``,
while ``torch._int_mm`` is legal), refused with CUDA's own wording. Mixed devices (a CUDA model
fed a CPU tensor) are checked by :mod:`solar.frontend.torch.eager_devices`.

Autocast keeps its casts: inside ``torch.autocast`` the operators arrive here already cast
(the autocast dispatch key runs before the trace's), and the operand rules of the operators
autocast casts are not applied there (the trace applies PyTorch's CPU autocast list, CUDA's
casts a few more: ``mv``, ``addmv``, ``addr``).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from solar.frontend.program_errors import ProgramError
from solar.frontend.torch.eager_devices import DeviceMoves, DeviceTags
from solar.frontend.torch.provenance import (
    forward_modules,
    frame_label,
    module_packages,
    source_frame,
)

aten = torch.ops.aten

#: the index dtypes eager accepts, by kind of index argument
LONG = frozenset({torch.int64})
LONG_OR_INT = frozenset({torch.int64, torch.int32})
LONG_OR_BYTE = frozenset({torch.int64, torch.uint8})
INDICES = frozenset({torch.int64, torch.int32, torch.uint8, torch.bool})
BOOL = frozenset({torch.bool})


@dataclass(frozen=True)
class Rule:
    """What eager PyTorch checks of one family of operators.

    ``agree``: arguments (by schema name) whose dtypes must be equal; ``index``: arguments
    holding index tensors (a tensor, or a list of tensors and Nones) and the dtypes allowed
    for them; ``autocast_casts``: autocast casts these operators' operands, so ``agree`` is not
    applied inside an autocast region; ``stand_in``: the stand-in tensors of a flagged call
    (:func:`stand_ins` by default); ``always``: every call is flagged (eager decides)."""

    family: str
    ops: tuple[object, ...]
    agree: tuple[str, ...] = ()
    index: tuple[tuple[str, frozenset], ...] = ()
    autocast_casts: bool = False
    stand_in: Callable[[dict], dict] | None = None
    always: bool = False


def stand_ins(args: dict) -> dict:
    """Each tensor of ``args`` as CPU zeros of its dtype and rank with every size 1 (a list
    of tensors element by element); other values as they are (symbolic ints at their traced
    value). Every rule's operator accepts such shapes, so what eager says of them is about
    the dtypes."""

    def one(v: object) -> object:
        if isinstance(v, torch.Tensor):
            return torch.zeros((1,) * v.dim(), dtype=v.dtype)
        if isinstance(v, (list, tuple)):
            return type(v)(one(x) for x in v)
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            if v.node.hint is None:
                raise ValueError(f"{v}: no value to stand in for")
            return v.node.hint
        return v

    return {k: one(v) for k, v in args.items()}


def conv_stand_ins(args: dict) -> dict:
    """:func:`stand_ins` for ``aten.convolution``: ``groups`` channels, one per group, kernel
    size 1, and a spatial size ``2 * padding + 1`` so that a transposed convolution's output
    is not empty."""
    out = stand_ins(args)
    x, w, g = args["input"], args["weight"], int(out["groups"])
    n = 2 * max((int(p) for p in out["padding"]), default=0) + 1
    spatial = (n,) * (x.dim() - 2)
    out["input"] = torch.zeros((1, g, *spatial), dtype=x.dtype)
    out["weight"] = torch.zeros((g, 1, *(1,) * (w.dim() - 2)), dtype=w.dtype)
    if args.get("bias") is not None:
        out["bias"] = torch.zeros(g, dtype=args["bias"].dtype)
    return out


#: the one table: per family of operators, what eager PyTorch checks of their dtypes
RULES: tuple[Rule, ...] = (
    Rule(
        "matmul",
        (aten.mm, aten.bmm, aten.mv, aten.dot, aten.vdot),
        ("self", "mat2", "vec", "tensor"),
        autocast_casts=True,
    ),
    Rule("matmul", (aten.addmm, aten.addmm_), ("self", "mat1", "mat2"), autocast_casts=True),
    Rule(
        "matmul",
        (aten.baddbmm, aten.baddbmm_, aten.addbmm, aten.addbmm_),
        ("self", "batch1", "batch2"),
        autocast_casts=True,
    ),
    Rule("matmul", (aten.addmv, aten.addmv_), ("self", "mat", "vec"), autocast_casts=True),
    Rule(
        "conv",
        (aten.convolution,),
        ("input", "weight", "bias"),
        autocast_casts=True,
        stand_in=conv_stand_ins,
    ),
    Rule("index", (aten.index_select,), index=(("index", LONG_OR_INT),)),
    Rule("index", (aten.index_add, aten.index_add_), ("self", "source"), (("index", LONG_OR_INT),)),
    Rule("index", (aten.index_copy, aten.index_copy_), ("self", "source"), (("index", LONG),)),
    Rule("index", (aten.index_fill, aten.index_fill_), index=(("index", LONG),)),
    Rule(
        "index",
        (aten.index_put, aten.index_put_, aten._index_put_impl_),
        ("self", "values"),
        (("indices", INDICES),),
    ),
    Rule("index", (aten.index,), index=(("indices", INDICES),)),
    Rule("index", (aten.gather,), index=(("index", LONG_OR_INT),)),
    Rule(
        "index",
        (
            aten.scatter,
            aten.scatter_,
            aten.scatter_add,
            aten.scatter_add_,
            aten.scatter_reduce,
            aten.scatter_reduce_,
        ),
        ("self", "src"),
        (("index", LONG_OR_INT),),
    ),
    Rule("index", (aten.embedding,), index=(("indices", LONG_OR_INT),)),
    Rule("index", (aten.take,), index=(("index", LONG),)),
    Rule(
        "target",
        (aten.nll_loss_forward, aten.nll_loss2d_forward),
        index=(("target", LONG_OR_BYTE),),
    ),
    Rule("mask", (aten.masked_fill, aten.masked_fill_), index=(("mask", BOOL),)),
    Rule("mask", (aten.where,), index=(("condition", BOOL),)),
)

#: an operator's ``out=`` overload: eager checks the result's dtype against ``out`` (exactly for
#: a GEMM, "can be cast to" for a pointwise op); every such call is run on stand-ins
OUT = Rule("out", (), always=True)

_BY_OP: dict[object, Rule] = {op: rule for rule in RULES for op in rule.ops}

#: the dtypes of ``AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES_AND2(Half, BFloat16, ...)``
FLOATING_COMPLEX_HALF_BF16 = frozenset(
    {
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.complex64,
        torch.complex128,
    }
)


@dataclass(frozen=True)
class CudaKernel:
    """A CUDA kernel that implements fewer dtypes than the CPU's: ``ops`` reach it, it is
    named ``kernel`` in its ``AT_DISPATCH`` (the name eager's message quotes) and dispatches
    on ``dtypes``, the dtype of the call's first tensor argument."""

    kernel: str
    ops: tuple[object, ...]
    dtypes: frozenset


#: the CUDA kernels whose dtypes the CPU stand-ins cannot check (PyTorch 2.x,
#: aten/src/ATen/native/cuda/Blas.cpp: the CPU kernels run integer GEMMs, the cuBLAS ones do
#: not; ``torch._int_mm`` is CUDA's int8 GEMM). ``mv`` runs ``addmv``'s kernel, ``vdot`` of
#: real tensors ``dot``'s, ``addbmm`` one ``addmm_`` per batch (LinearAlgebra.cpp).
CUDA_KERNELS: tuple[CudaKernel, ...] = (
    CudaKernel(
        "addmm_cuda",
        (aten.mm, aten.addmm, aten.addmm_, aten._addmm_activation, aten.addbmm, aten.addbmm_),
        FLOATING_COMPLEX_HALF_BF16,
    ),
    CudaKernel("baddbmm_cuda", (aten.bmm, aten.baddbmm, aten.baddbmm_), FLOATING_COMPLEX_HALF_BF16),
    CudaKernel("addmv_impl_cuda", (aten.mv, aten.addmv, aten.addmv_), FLOATING_COMPLEX_HALF_BF16),
    CudaKernel("dot", (aten.dot, aten.vdot), FLOATING_COMPLEX_HALF_BF16),
)

_CUDA_BY_OP: dict[object, CudaKernel] = {op: k for k in CUDA_KERNELS for op in k.ops}


def cuda_refusal(func, args: tuple) -> NotImplementedError | None:
    """What eager CUDA raises for a call whose dtype its CUDA kernel does not implement, in
    its words (``"addmm_cuda" not implemented for 'Char'``); None where the kernel has the
    dtype, or where a tensor is empty (the kernels return before dispatching)."""
    kernel = _CUDA_BY_OP.get(func.overloadpacket)
    if kernel is None:
        return None
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors or tensors[0].dtype in kernel.dtypes:
        return None
    if any(statically_known_true(t.numel() == 0) for t in tensors):
        return None
    return NotImplementedError(
        f"\"{kernel.kernel}\" not implemented for '{scalar_type_name(tensors[0].dtype)}'"
    )


def scalar_type_name(dtype: torch.dtype) -> str:
    """c10's name of ``dtype`` (``Char`` for int8), as kernels' dtype errors print it: the
    legacy tensor type's name (``torch.CharTensor``) less its prefix and suffix."""
    with _disable_current_modes():
        name = torch.empty(0, dtype=dtype).type()
    return name.removeprefix("torch.").removesuffix("Tensor")


def flagged(rule: Rule, args: dict) -> bool:
    """Whether a call's arguments break ``rule`` (eager is then asked)."""
    if rule.always:
        return True
    dtypes = {v.dtype for k in rule.agree if isinstance(v := args.get(k), torch.Tensor)}
    if len(dtypes) > 1 and not (rule.autocast_casts and in_autocast()):
        return True
    for name, allowed in rule.index:
        value = args.get(name)
        tensors = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(t, torch.Tensor) and t.dtype not in allowed for t in tensors):
            return True
    return False


def eager_refusal(func, args: dict, rule: Rule) -> BaseException | None:
    """What eager PyTorch raises for ``func`` on stand-ins of ``args``; None where it runs
    them, or where the refusal is not about the dtypes: the same call with the dtypes made
    to agree (:func:`agreeing`) must run, else the stand-ins do not stand for the program and
    the trace goes on as before."""
    with _disable_current_modes(), warnings.catch_warnings():  # real CPU tensors, eager
        warnings.simplefilter("ignore")  # an out= stand-in resized: not the program's
        try:
            made = (rule.stand_in or stand_ins)(args)
        except (TypeError, ValueError):  # a size with no value (unbacked): cannot ask eager
            return None
        refusal = _run(func, made)
        if refusal is None or rule.always:
            return refusal
        return refusal if _run(func, agreeing(made, rule)) is None else None


def agreeing(made: dict, rule: Rule) -> dict:
    """``made`` with the dtypes ``rule`` asks for: its ``agree`` tensors in the first one's
    dtype, its index tensors in an allowed dtype (int64 where allowed, else the first)."""
    out = dict(made)
    tensors = [made[k] for k in rule.agree if isinstance(made.get(k), torch.Tensor)]
    for k in rule.agree:
        if isinstance(made.get(k), torch.Tensor):
            out[k] = made[k].to(tensors[0].dtype)
    for name, allowed in rule.index:
        dtype = torch.int64 if torch.int64 in allowed else sorted(allowed, key=str)[0]
        value = made.get(name)
        if isinstance(value, torch.Tensor):
            out[name] = value.to(dtype)
        elif isinstance(value, (list, tuple)):
            out[name] = type(value)(
                v.to(v.dtype if v.dtype in allowed else dtype) if isinstance(v, torch.Tensor) else v
                for v in value
            )
    return out


def _run(func, made: dict) -> BaseException | None:
    """``func`` called on ``made`` (by schema names): what it raises, or None."""
    schema = func._schema.arguments
    call_args = [made[a.name] for a in schema if not a.kwarg_only and a.name in made]
    call_kwargs = {a.name: made[a.name] for a in schema if a.kwarg_only and a.name in made}
    try:
        func(*call_args, **call_kwargs)
    except (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError) as e:
        return e
    return None


class EagerChecks(TorchDispatchMode):
    """Runs alongside make_fx: each call of an operator of :data:`RULES` is checked as eager
    PyTorch checks it, and a refused one raises PyTorch's error at the user's line."""

    def __init__(
        self,
        root: torch.nn.Module | None,
        devices: Iterable[tuple[torch.Tensor, torch.device]] = (),
    ) -> None:
        super().__init__()
        self.devices = DeviceTags(devices)
        self.names: dict[int, str] = {}
        if root is not None:
            for name, m in root.named_modules(remove_duplicate=False):
                self.names.setdefault(id(m), name)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = _BY_OP.get(func.overloadpacket)
        if rule is None and any(a.is_out for a in func._schema.arguments):
            rule = OUT
        if rule is not None:
            named = _named(func, args, kwargs)
            if flagged(rule, named):
                refusal = eager_refusal(func, named, rule)
                if refusal is not None:
                    raise self._located(refusal)
        refusal = cuda_refusal(func, args)
        if refusal is None and self.devices.active:
            named = _named(func, args, kwargs)
            refusal = self.devices.refusal(func, named)
        if refusal is not None:
            raise self._located(refusal)
        out = func(*args, **kwargs)
        if self.devices.active:
            self.devices.carry(func, named, out)
        return out

    def _located(self, refusal: BaseException) -> EagerRefusal:
        """``refusal`` at the user's line and the module running there."""
        frame = sys._getframe(2)
        found = forward_modules(frame)
        where = frame_label(source_frame(frame, module_packages(found)))
        module = ""
        if found:
            path, kind = self.names.get(id(found[0])), type(found[0]).__name__
            module = f"({kind})" if path is None else f"{path or 'the model'} ({kind})"
        error = EagerRefusal(refusal, where, module)
        error.__cause__ = refusal
        return error


class EagerRefusal(ProgramError):
    """A call eager PyTorch refuses (its own exception, :attr:`original`), at the user's line
    (:attr:`where`) and module (:attr:`module`): the program cannot run, so it has no bound."""

    #: what the command line prints after the one line
    hint = "eager PyTorch raises this: the program cannot run, so it has no bound"

    def __init__(self, original: BaseException, where: str, module: str) -> None:
        super().__init__(original, where, module)
        self.args = (f"{self.summary} ({self.hint})",)


def in_autocast() -> bool:
    """Whether the call is inside a ``torch.autocast`` region. Inside a dispatch mode PyTorch
    reports autocast as off (its dispatch keys are excluded there), so this reads the
    thread's autocast nesting depth instead (a region with ``enabled=False`` counts too:
    the operand rules are then skipped, never wrongly applied)."""
    depth = torch.autocast_increment_nesting()
    torch.autocast_decrement_nesting()
    return depth > 1


def _named(func, args: tuple, kwargs: dict) -> dict:
    """The call's arguments by their schema names."""
    named = dict(kwargs)
    for a, v in zip(func._schema.arguments, args, strict=False):
        named[a.name] = v
    return named


@contextmanager
def eager_checks(
    root: torch.nn.Module | None, devices: Iterable[tuple[torch.Tensor, torch.device]] = ()
) -> Iterator[EagerChecks]:
    """Check every traced call as eager PyTorch would (see the module docstring); ``devices``
    pairs each graph input's fake tensor with the user's device of its tensor
    (:class:`~solar.frontend.torch.eager_devices.DeviceTags`)."""
    mode = EagerChecks(root, devices)
    with mode, DeviceMoves(mode.devices) if mode.devices.active else nullcontext():
        yield mode
