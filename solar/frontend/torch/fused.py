"""Library calls that eager CUDA runs as ONE fused kernel, kept as one graph node while tracing.

``make_fx`` on fake (CPU or meta) tensors records what the *tracing* device would run. For most
operators that is what CUDA runs too, but for a few library calls it is not:

========================================  ====================================================
intercepted (torch function)              what eager CUDA launches
========================================  ====================================================
``F.scaled_dot_product_attention``        one fused attention kernel (FlashAttention-2/3,
                                          memory-efficient, or cuDNN attention); the CPU/meta
                                          trace records ``bmm``, ``_safe_softmax``, ``bmm``
                                          (meta) or a CPU-only flash op
``torch._VF.lstm`` (``nn.LSTM``)          cuDNN RNN (``_cudnn_rnn``): per layer an input GEMM
``torch._VF.gru`` (``nn.GRU``)            over all steps plus a recurrent GEMM and a fused
``torch._VF.rnn_tanh`` / ``rnn_relu``     gate kernel per step; the CPU trace records
(``nn.RNN``)                              per-timestep ``addmm``/``sigmoid``/``tanh``/``mul``
                                          kernels and a ``stack``
``torch.rms_norm`` (``F.rms_norm``,       one ``_fused_rms_norm`` kernel; CPU and meta traces
``nn.RMSNorm``)                           record ``pow, mean, add, rsqrt, mul, mul``
``F.one_hot``                             ``zeros`` + ``scatter_`` (two kernels, each at
                                          least the bytes of one kernel writing the output);
                                          the CPU trace records ``arange, eq, _to_copy`` with a
                                          bool intermediate eager CUDA never writes
========================================  ====================================================

Calls whose CUDA implementation is a different *sequence* of kernels (train-mode dropout,
``nn.LSTMCell``/``nn.GRUCell``, the eval fast paths of ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer``) are rerouted to that sequence by the same interception
(:mod:`solar.frontend.torch.reroute`).

The fake kernel of ``solar.sdpa`` gives its output CUDA's memory layout: the fused attention
kernels write ``(B, L, H, Ev)`` and return its ``(B, H, L, Ev)`` transpose (memory-efficient
attention, which float32 and masked calls use, always; FlashAttention and cuDNN when the query
has that layout), so the usual
``out.transpose(1, 2).reshape(B, L, H·Ev)`` that follows is a free view, as on CUDA.

Recording the decomposition would make the unfused bound charge DRAM round trips of the
attention scores (B·H·Lq·Lk elements) or of every gate at every timestep, which eager CUDA
never makes: the bound would exceed measured eager runtime. So while tracing
(:func:`intercept_fused`), each call above becomes one operator of the ``solar``
torch.library namespace (``torch.ops.solar.sdpa``, ``torch.ops.solar.lstm``, ``.gru``,
``.rnn_tanh``, ``.rnn_relu``) with the original arguments: the op's schema mirrors the
intercepted function's signature (names, order, defaults), so the call binds unchanged.

Two hooks catch the calls, because neither sees all of them:

- a :class:`~torch.overrides.TorchFunctionMode` sees every call of the builtin, under any name
  it was imported as; but a mode is switched off while it handles a Python-level function that
  dispatches through ``handle_torch_function`` (``F.multi_head_attention_forward``, and so
  ``nn.MultiheadAttention`` and ``nn.Transformer*``), so the calls nested in those bodies
  escape it;
- so the module attributes the library itself calls through (``torch.nn.functional.
  scaled_dot_product_attention``, ``torch._VF.lstm``, ...) are also replaced, for the duration
  of the trace only, by wrappers that emit the solar op (tracing is not thread-safe anyway).

Each op has a fake kernel (output shapes only) and an eager kernel (the original function, so
a traced graph still runs on real tensors). make_fx records it as one node, and its lowering
(:mod:`.ops.attention`, :mod:`.ops.recurrent`) emits kernels whose intermediates (scores,
probabilities, gates, the recurrent state) are kernel-local: SDPA is ONE kernel; a recurrent
op is ONE kernel per layer (see :mod:`.ops.recurrent` for why that stays a lower bound of
cuDNN's launches).

Adding a fused op is one :class:`FusedOp` row in :data:`FUSED_OPS` (schema, the attributes
the function is reached through, fake kernel, optional argument check) plus a
``@lowering(torch.ops.solar.<name>)``.
Calls a row cannot represent (packed sequences) are refused with a clear error rather than
silently decomposed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from solar.frontend.torch.provenance import caller_source
from solar.frontend.torch.ranges import host_read
from solar.frontend.torch.registry import UnsupportedOperatorError
from solar.frontend.torch.reroute import patched, reroute_items, rerouted

NAMESPACE = "solar"


@dataclass(frozen=True)
class FusedOp:
    """One intercepted library call: ``torch.ops.solar.<name>`` with ``schema`` (mirroring the
    signature of the intercepted function, so its calls bind as they are), the attributes the
    function is reached through (``(owner, name)``; the first one's value is the function), a
    fake kernel computing the outputs' shapes, and an optional ``check(args, kwargs) -> reason
    or None`` that refuses calls the op cannot represent."""

    name: str
    schema: str
    attributes: tuple[tuple[object, str], ...]
    fake: Callable[..., object]
    why: str
    check: Callable[[tuple, dict], str | None] | None = None

    @property
    def op(self) -> torch._ops.OpOverload:
        return getattr(getattr(torch.ops, NAMESPACE), self.name).default

    @property
    def function(self) -> Callable[..., object]:
        """The original function (also while :func:`intercept_fused` replaces it)."""
        return _ORIGINALS[self.name]

    def call(self, args: tuple, kwargs: dict) -> object:
        """The solar op applied to a call's arguments (or a clear error)."""
        reason = self.check(args, kwargs) if self.check is not None else None
        if reason:
            raise UnsupportedOperatorError(f"{NAMESPACE}.{self.name}", caller_source(), reason)
        out = self.op(*args, **kwargs)
        return tuple(out) if isinstance(out, list) else out


# --------------------------------------------------------------------------------- fake kernels


def _one_hot_fake(self, num_classes=-1):  # noqa: ANN001
    return self.new_empty((*self.shape, num_classes), dtype=torch.int64)


def _one_hot_classes_known(args: tuple, kwargs: dict) -> str | None:
    n = kwargs.get("num_classes", args[1] if len(args) > 1 else -1)
    if n is None or n < 0:
        return "without num_classes needs the data (its max); pass num_classes"
    return None


def _sdpa_fake(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    *,
    scale=None,
    enable_gqa=False,
):
    q, k, v, gqa = query, key, value, enable_gqa
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise RuntimeError("scaled_dot_product_attention needs query, key and value of >= 2 dims")

    def lead(t: torch.Tensor) -> list[int]:
        shape = list(t.shape[:-2])
        if gqa and len(shape) >= 1:
            shape[-1] = 1  # key/value heads broadcast over query-head groups
        return shape

    batch = torch.broadcast_shapes(tuple(q.shape[:-2]), tuple(lead(k)), tuple(lead(v)))
    shape = (*batch, q.shape[-2], v.shape[-1])
    efficient = q.dtype == torch.float32 or attn_mask is not None  # FlashAttention cannot
    if len(shape) == 4 and (efficient or _bshd(q)):
        # CUDA's kernels write (B, L, H, Ev) and return its transpose: memory-efficient
        # attention (float32, or an explicit mask) always, FlashAttention and cuDNN when the
        # query is laid out so (empty_like / matching layout). ``out.transpose(1, 2)`` is then
        # contiguous: free.
        b, h, lq, ev = shape
        return q.new_empty_strided(shape, (lq * h * ev, ev, h * ev, 1))
    return q.new_empty(shape)


def _bshd(q: torch.Tensor) -> bool:
    """Whether a (B, H, L, E) query is a transposed view of a (B, L, H, E) layout."""
    s = q.stride()
    return q.shape[1] > 1 and q.shape[2] > 1 and s[2] > s[1] > s[3]


def _rnn_output(x: torch.Tensor, h: torch.Tensor, bidirectional: bool) -> torch.Tensor:
    if x.ndim != 3:
        raise RuntimeError(f"recurrent input must have 3 dims, got {tuple(x.shape)}")
    return x.new_empty((*x.shape[:2], (2 if bidirectional else 1) * h.shape[-1]))


# The fake kernels take the schema's argument names.
def _lstm_fake(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, *_):  # noqa: A002
    h0, c0 = hx
    return _rnn_output(input, h0, bidirectional), h0.new_empty(h0.shape), c0.new_empty(c0.shape)


def _rnn_fake(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, *_):  # noqa: A002
    return _rnn_output(input, hx, bidirectional), hx.new_empty(hx.shape)


def _not_packed(args: tuple, kwargs: dict) -> str | None:
    """The padded overload has a bool ``has_biases`` at position 3; the PackedSequence one
    (``data, batch_sizes, hx, params, ...``) a list there."""
    if len(args) > 3 and not isinstance(args[3], bool):
        return (
            "on a PackedSequence is not supported (its per-step batch sizes are data); "
            "pass a padded tensor"
        )
    return None


_RNN_ARGS = (
    "Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, "
    "bool bidirectional, bool batch_first"
)
_CUDNN = "cuDNN runs the whole recurrence (_cudnn_rnn); CPU traces per-timestep kernels"

FUSED_OPS: list[FusedOp] = [
    FusedOp(
        "sdpa",
        "(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, "
        "bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
        ((F, "scaled_dot_product_attention"),),
        _sdpa_fake,
        "CUDA runs one fused attention kernel; the scores never reach DRAM",
    ),
    FusedOp(
        "lstm",
        f"(Tensor input, Tensor[] hx, {_RNN_ARGS}) -> (Tensor output, Tensor h_n, Tensor c_n)",
        ((torch._VF, "lstm"),),
        _lstm_fake,
        _CUDNN,
        _not_packed,
    ),
    FusedOp(
        "rms_norm",
        "(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
        ((torch, "rms_norm"),),
        lambda input, normalized_shape, weight=None, eps=None: torch.empty_like(input),  # noqa: A006
        "CUDA runs one _fused_rms_norm kernel; the CPU trace records six",
    ),
    FusedOp(
        "one_hot",
        "(Tensor self, int num_classes=-1) -> Tensor",
        ((F, "one_hot"),),
        _one_hot_fake,
        "CUDA writes the one-hot output directly (zeros + scatter); no bool intermediate",
        _one_hot_classes_known,
    ),
    *(
        FusedOp(
            name,
            f"(Tensor input, Tensor hx, {_RNN_ARGS}) -> (Tensor output, Tensor h_n)",
            ((torch._VF, name),),
            _rnn_fake,
            _CUDNN,
            _not_packed,
        )
        for name in ("gru", "rnn_tanh", "rnn_relu")
    ),
]


# ------------------------------------------------------------------------------ registration


def _eager_kernel(fn: Callable[..., object]) -> Callable[..., object]:
    def run(*args: object, **kwargs: object) -> object:
        out = fn(*args, **kwargs)
        return tuple(out) if isinstance(out, (tuple, list)) else out

    return run


_ORIGINALS: dict[str, Callable[..., object]] = {
    row.name: getattr(*row.attributes[0]) for row in FUSED_OPS
}


def _register(rows: Sequence[FusedOp]) -> torch.library.Library:
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # noqa: TOR901
    for row in rows:
        lib.define(row.name + row.schema)
        lib.impl(row.name, _eager_kernel(row.function), "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{row.name}", row.fake, lib=lib)
    return lib


_LIBRARY = _register(FUSED_OPS)
_BY_FUNCTION: dict[object, FusedOp] = {row.function: row for row in FUSED_OPS}


def fused_op(fn: object) -> FusedOp | None:
    """The row intercepting torch function ``fn``, if any."""
    try:
        return _BY_FUNCTION.get(fn)
    except TypeError:  # unhashable callables are never intercepted
        return None


# ``_foreach_addcmul``/``_foreach_addcdiv`` with their scalars in a tensor (the ``.Tensor``
# overloads): eager reads that tensor on the host (it must be a CPU tensor), and PyTorch's fake
# kernel rejects every such tensor ("Expected scalars to be on CPU, got meta"), so no trace can
# record them. Eager optimizers pass a list of floats unless torch.compile'd.
_ADDC = ("_foreach_addcmul", "_foreach_addcmul_", "_foreach_addcdiv", "_foreach_addcdiv_")
_HOST_SCALARS = {getattr(torch, n) for n in _ADDC} | {
    getattr(torch.ops.aten, n).Tensor for n in _ADDC
}


def _refuse_host_scalars(func, args: tuple, kwargs: dict) -> None:
    scalars = kwargs.get("scalars", args[3] if len(args) > 3 else None)
    if func in _HOST_SCALARS and isinstance(scalars, torch.Tensor):
        op = func if isinstance(func, torch._ops.OpOverload) else f"aten.{func.__name__}.Tensor"
        raise UnsupportedOperatorError(
            op,
            caller_source(),
            "takes its scalars as a tensor, which CUDA reads on the host and fake tensors "
            "cannot run (PyTorch's meta kernel rejects it); pass a list of floats instead",
        )


class _Intercept(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        _refuse_host_scalars(func, args, kwargs)
        value = host_read(func, args) if not kwargs else None
        if value is not None:
            return value
        row = fused_op(func)
        if row is not None:
            return row.call(args, kwargs)
        replacement = rerouted(func)
        return func(*args, **kwargs) if replacement is None else replacement(*args, **kwargs)


def _wrapper(row: FusedOp) -> Callable[..., object]:
    def intercepted(*args: object, **kwargs: object) -> object:
        return row.call(args, kwargs)

    intercepted.__name__ = intercepted.__qualname__ = row.function.__name__
    return intercepted


@contextmanager
def intercept_fused() -> Iterator[None]:
    """While active, calls of :data:`FUSED_OPS` functions become ``torch.ops.solar`` ops, and
    the calls of :data:`solar.frontend.torch.reroute.REROUTED` run what CUDA runs."""
    items = [(owner, attr, _wrapper(row)) for row in FUSED_OPS for owner, attr in row.attributes]
    with patched([*items, *reroute_items()]), _Intercept():
        yield
