"""Values known while tracing: a top-k router's choice under the assumed routing, and what
follows from it.

Fake tensors carry no values, so a size that depends on values is normally taken at its
minimum (:mod:`solar.frontend.torch.sizes`). A mixture-of-experts layer run the eager way
(``nonzero`` over the experts hit, ``torch.where`` per expert, ``if expert == E``) would then
run no expert at all: a lower bound, but far from what the program's semantics force (a top-k
router sends every token to exactly ``k`` experts). So while tracing, the integer indices
``torch.topk`` returns are given the values of the assumed :class:`~solar.frontend.torch.sizes.
Routing` (every token on experts ``0..k-1`` by default: the fewest a router can touch; round
robin when balanced; the given per-expert counts), and every operator whose tensor inputs all
have known values is also run on those real (small, integer) values. A data-dependent size or
Python scalar computed from known values takes their real result; everything else is traced
as usual. A Python value read from a tensor computed from the model's own real parameters and
buffers alone (a model built on a real device) is their real value
(:mod:`solar.frontend.torch.model_reads`). Not used with ``observe=True`` (the observed run
has the real values).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from torch.utils.weak import WeakIdKeyDictionary

from solar.frontend.torch.model_reads import ModelReads
from solar.frontend.torch.provenance import caller_source
from solar.frontend.torch.sizes import SizePolicy

aten = torch.ops.aten

# operators whose output size (or Python value) a known input decides
SIZED = {
    aten.nonzero.default: lambda out, args: [int(out.shape[0])],
    aten.masked_select.default: lambda out, args: [int(out.numel())],
    aten._unique2.default: lambda out, args: [int(out[0].shape[0])],
    aten._unique.default: lambda out, args: [int(out[0].shape[0])],
    aten.unique_consecutive.default: lambda out, args: [int(out[0].shape[0])],
    aten.unique_dim.default: lambda out, args: [int(out[0].shape[args[1] % max(out[0].dim(), 1)])],
    aten.bincount.default: lambda out, args: [int(out.shape[0])],
    aten.index.Tensor: lambda out, args: [
        int(m.count_nonzero())
        for m in args[1]
        if m is not None and m.dtype in (torch.bool, torch.uint8)
    ],
}
MAX_KNOWN = 1 << 22  # elements: larger results are not computed (their values stay unknown)

# factories whose values their arguments decide (no tensor values read): known once a router
# has run, so that per-expert counts built from them (``zeros(...).scatter(1, topk, 1).sum(0)``,
# JetMoE's) follow from the routing too; a ``new_*`` tensor gives only its dtype
FILLED = {
    aten.zeros.default,
    aten.ones.default,
    aten.full.default,
    aten.scalar_tensor.default,
    aten.arange.default,
    aten.arange.start,
    aten.arange.start_step,
    aten.new_zeros.default,
    aten.new_ones.default,
    aten.new_full.default,
}


def routed(tokens: int, k: int, experts: int, policy: SizePolicy) -> torch.Tensor:
    """``(tokens, k)`` expert indices realising the routing: distinct experts per token, the
    per-expert totals of :meth:`Routing.split` (slots filled expert by expert, ``k``-major, so
    an expert's share of at most ``tokens`` slots lands on distinct tokens)."""
    counts = policy.routing.split(tokens * k, experts, k)
    if max(counts, default=0) > tokens:
        raise ValueError(
            f"routing {counts}: an expert cannot take more than the {tokens} tokens, each of "
            f"which picks {k} distinct experts"
        )
    order = torch.repeat_interleave(torch.arange(experts), torch.tensor(counts))
    return order.reshape(k, tokens).t().contiguous()


class KnownValues(TorchDispatchMode):
    """Runs alongside make_fx: gives router indices their assumed values, propagates values
    through operators whose inputs are all known, and decides data-dependent sizes from them."""

    def __init__(self, policy: SizePolicy, reads: ModelReads | None = None) -> None:
        super().__init__()
        self.policy = policy
        self.reads = reads  # values computed from the model's real parameters and buffers
        self.values = WeakIdKeyDictionary()
        self.routers: list[str] = []
        self.used = False  # whether a known value decided a size or a Python value

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default and args[0] not in self.values:
            value = self._model_value(args[0])
            if value is not None:
                return value
        if func is not aten.topk.default and not self.values:  # nothing known: trace as is
            return func(*args, **kwargs)
        if func in FILLED:
            real = _filled(func, args, kwargs)
        else:
            leaves = pytree.tree_leaves((args, kwargs))
            tensors = [a for a in leaves if isinstance(a, torch.Tensor)]
            known = bool(tensors) and all(t in self.values for t in tensors)
            real = self._run(func, args, kwargs) if known else None
        if real is not None and func is aten._local_scalar_dense.default:
            self.used = True
            self.policy.chosen.append(self._size(func, real))
            return real
        if real is not None and func in SIZED:
            self.used = True
            with _disable_current_modes():
                self.policy.pending.extend(SIZED[func](real, self._real(args)))
        out = func(*args, **kwargs)
        if func is aten.topk.default and not known:
            self._route(out, args)
        elif real is not None:
            for fake, value in zip(pytree.tree_leaves(out), pytree.tree_leaves(real), strict=False):
                if isinstance(fake, torch.Tensor) and isinstance(value, torch.Tensor):
                    self.values[fake] = value
        return out

    def _real(self, tree: object) -> object:
        return pytree.tree_map(lambda a: self.values[a] if isinstance(a, torch.Tensor) else a, tree)

    def _run(self, func, args, kwargs) -> object:
        with _disable_current_modes():
            real_args, real_kwargs = self._real(args), self._real(kwargs)
            try:
                out = func(*real_args, **real_kwargs)
            except NotImplementedError:
                # the known values live on the CPU, where some kernels lack integer dtypes
                # that CUDA has (histc of int expert ids): the same values in float64 are exact
                out = _via_float64(func, real_args, real_kwargs)
        leaves = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        return None if any(t.numel() > MAX_KNOWN for t in leaves) else out

    def _route(self, out: tuple, args: tuple) -> None:
        """The indices of a top-k over the last dim (a router over experts)."""
        x, k = args[0], int(args[1])
        dim = args[2] if len(args) > 2 else -1
        if x.ndim == 0 or dim not in (-1, x.ndim - 1) or not 0 < x.numel() <= MAX_KNOWN:
            return  # an empty top-k (no detections at their minimum) routes nothing
        tokens, experts = x.numel() // x.shape[-1], x.shape[-1]
        with _disable_current_modes():
            idx = routed(tokens, k, experts, self.policy).reshape(*x.shape[:-1], k)
        self.values[out[1]] = idx
        self.routers.append(caller_source(3))

    def _model_value(self, t: torch.Tensor) -> object:
        """A Python value read from a tensor computed from the model's real parameters and
        buffers alone (:mod:`solar.frontend.torch.model_reads`), or None."""
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        from solar.frontend.torch.sizes import MODEL_VALUE, AssumedSize

        with _disable_current_modes(), unset_fake_temporarily():
            real = self.reads.value(t) if self.reads is not None else None
            if real is None or real.numel() != 1:
                return None
            value = real.item()
        op = "aten._local_scalar_dense"
        self.policy.chosen.append(AssumedSize(op, caller_source(4), value, False, MODEL_VALUE))
        return value

    def _size(self, func, value):
        from solar.frontend.torch.sizes import AssumedSize

        why = f"follows from the routing: {self.policy.routing.describe()}"
        return AssumedSize(str(func).rsplit(".", 1)[0], caller_source(3), value, False, why)

    def notes(self) -> list[str]:
        """The report line of the routers whose assumed choice decided sizes."""
        if not self.used:
            return []
        where = ", ".join(sorted(set(self.routers)))
        return [
            f"top-k router indices (aten.topk at {where}) taken as routing "
            f"{self.policy.routing.describe()}: the sizes after them follow from it"
        ]


def _filled(func, args: tuple, kwargs: dict) -> torch.Tensor | None:
    """The real (CPU) values of a :data:`FILLED` factory call, or None where a size is
    symbolic or the result is larger than :data:`MAX_KNOWN`."""
    leaves = pytree.tree_leaves((args, kwargs))
    if any(isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)) for a in leaves):
        return None
    if any(type(a) not in (int, bool) and isinstance(a, int) for a in leaves):  # a solar Size
        return None
    with _disable_current_modes():
        if args and isinstance(args[0], torch.Tensor):  # new_*: the tensor gives the dtype
            kwargs = {"dtype": args[0].dtype, **kwargs}
            args = (torch.empty(0, dtype=args[0].dtype), *args[1:])
        out = func(*args, **{**kwargs, "device": "cpu"})
    return None if out.numel() > MAX_KNOWN else out


def _via_float64(func, args: object, kwargs: object) -> object:
    """``func`` on integer tensors cast to float64, its float results cast back to the
    integer dtype of the first integer argument (exact for the small counts known here)."""
    ints = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
    ints = [a for a in ints if not a.is_floating_point() and a.dtype != torch.bool]
    if not ints:
        raise NotImplementedError(f"{func} has no CPU kernel for these dtypes")

    def up(a: object) -> object:
        return a.double() if isinstance(a, torch.Tensor) and a in ints else a

    out = func(*pytree.tree_map(up, args), **pytree.tree_map(up, kwargs))
    return pytree.tree_map(
        lambda o: (
            o.to(ints[0].dtype) if isinstance(o, torch.Tensor) and o.is_floating_point() else o
        ),
        out,
    )


@contextmanager
def known_values(
    policy: SizePolicy, reals: list[torch.Tensor | None] = ()
) -> Iterator[KnownValues]:
    """Track known values while tracing (not with observed sizes); ``reals``: the real tensor
    (or None) of each parameter and buffer placeholder, in order (see
    :class:`~solar.frontend.torch.model_reads.ModelReads`)."""
    mode = KnownValues(policy, ModelReads(list(reals)))
    if policy.observed is not None:
        yield mode
        return
    with mode:
        yield mode
