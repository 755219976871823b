"""Data-dependent sizes: which value each one is traced at, and the report line saying so.

A size that depends on tensor values (the rows of ``nonzero``, of a boolean-mask index or of
``masked_select``, the distinct values of ``unique``, the bins of ``bincount``, the length of
``repeat_interleave`` with a tensor of repeats (0 by default: every repeat may be 0), the
elements a boolean-mask write ``x[mask] = v`` selects (0 by default), the rows each
expert of a grouped GEMM multiplies) cannot be read off fake tensors. PyTorch's own answer is an
unbacked SymInt (a ``ShapeEnv`` symbol with no value); solar instead traces every such size at
one chosen value, so every operator after it sees concrete shapes and the whole program is
bounded consistently:

- by default the **smallest value the operator allows** (0 rows of ``nonzero``; at least one
  distinct value (slice, with ``dim``) of a non-empty ``unique``; ``max(minlength, 1)`` bins
  of a non-empty ``bincount``): the bound then holds for every input;
- with ``observe=True`` the sizes of one real run of the program on the given (real) inputs,
  replayed in call order per operator, with the Python scalars it read (``.item()``, a tensor in
  an ``if``): the bound of that input.

Grouped GEMMs (``torch._grouped_mm``, the experts of a mixture-of-experts layer) keep their
static shapes; their per-group row counts follow the :class:`Routing`. Every size chosen is
kept (:class:`AssumedSize`) and listed in the report.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from solar.frontend.torch.provenance import caller_source

aten = torch.ops.aten

ROUTINGS = ("any", "balanced")


@dataclass(frozen=True)
class Routing:
    """How the rows of a grouped GEMM (tokens routed to experts) split over its groups.

    - ``any`` (default): the split valid for every routing: the fewest groups the router can
      touch (``k`` of a top-k router: all tokens on the same ``k`` experts), each taking an
      equal share; the GEMM flops do not depend on the split, the expert weights read do.
    - ``balanced``: rows spread evenly over all groups (the serving assumption).
    - explicit per-group counts (``routing=[c0, c1, ...]``, summing to the rows).
    """

    kind: str = "any"
    counts: tuple[int, ...] = ()

    @classmethod
    def parse(cls, routing: object) -> Routing:
        if isinstance(routing, Routing):
            return routing
        if isinstance(routing, str):
            if routing not in ROUTINGS:
                raise ValueError(
                    f"routing={routing!r} is not one of {ROUTINGS} or a list of per-expert "
                    "token counts"
                )
            return cls(routing)
        if isinstance(routing, Sequence) and all(isinstance(c, int) and c >= 0 for c in routing):
            return cls("counts", tuple(routing))
        raise ValueError(
            f"routing={routing!r}: pass 'any', 'balanced' or a list of per-expert token counts"
        )

    def split(self, rows: int, groups: int, fewest: int) -> list[int]:
        """Rows per group: ``fewest`` is the fewest groups any routing touches."""
        if self.kind == "counts":
            if len(self.counts) != groups or sum(self.counts) != rows:
                raise ValueError(
                    f"routing={list(self.counts)} must give {groups} per-expert counts summing "
                    f"to {rows} (tokens x experts per token)"
                )
            tokens = rows // max(fewest, 1)
            if max(self.counts, default=0) > tokens:
                raise ValueError(
                    f"routing {list(self.counts)}: an expert cannot take more than the {tokens} "
                    f"tokens, each of which picks {fewest} distinct experts"
                )
            return list(self.counts)
        used = groups if self.kind == "balanced" else max(1, min(fewest, groups))
        return [
            rows // used + (1 if g < rows % used else 0) if g < used else 0 for g in range(groups)
        ]

    def describe(self) -> str:
        if self.kind == "counts":
            return f"the given per-expert token counts {list(self.counts)}"
        if self.kind == "balanced":
            return "'balanced': tokens x k spread evenly over the experts"
        return (
            "'any': every token on the same k experts, the fewest a top-k router touches "
            "(valid for every routing)"
        )


@dataclass(frozen=True)
class AssumedSize:
    """One data-dependent size and the value the trace took for it."""

    op: str
    source: str
    value: object
    observed: bool
    why: str = ""

    def line(self, times: int = 1) -> str:
        where = f" at {self.source}" if self.source else ""
        repeat = f" ({times} times)" if times > 1 else ""
        how = "observed on the given inputs" if self.observed else self.why
        what = "value" if self.op.endswith("_local_scalar_dense") else "size"
        return f"data-dependent {what} of {self.op}{where}{repeat}: {self.value} ({how})"


@dataclass
class SizePolicy:
    """The sizes of one trace: observed ones (per operator, in call order) or minima."""

    routing: Routing = field(default_factory=Routing)
    observed: dict[str, deque] | None = None
    chosen: list[AssumedSize] = field(default_factory=list)
    pending: deque = field(default_factory=deque)  # sizes known values decided (known.py)
    notes_once: list[str] = field(default_factory=list)  # lines the report gives once

    def take(
        self, op: str, minimum: object, why: str, depth: int = 3, source: str | None = None
    ) -> object:
        """The size (or scalar) of the next call of ``op``: observed, else ``minimum``
        (``source``: the user line, where the caller knows it better than the stack)."""
        source = caller_source(depth) if source is None else source
        if self.pending:
            value = self.pending.popleft()
            why = f"follows from the routing: {self.routing.describe()}"
            self.chosen.append(AssumedSize(op, source, value, False, why))
            return value
        if self.observed is None:
            self.chosen.append(AssumedSize(op, source, minimum, False, why))
            return minimum
        queue = self.observed.get(op)
        if not queue:
            raise ValueError(
                f"{op}{' at ' + source if source else ''}: the traced program calls it more "
                "often than the observed run did; run it with the same inputs and mode"
            )
        value = queue.popleft()
        self.chosen.append(AssumedSize(op, source, value, True))
        return value

    def groups(self, op: str, rows: int, groups: int, fewest: int, source: str) -> list[int]:
        """Per-group rows of a grouped GEMM: observed, else the routing's split."""
        if self.observed is not None:
            counts = list(self.observed["_grouped_mm"].popleft())
            self.chosen.append(AssumedSize(op, source, counts, True))
            return counts
        split = self.routing.split(rows, groups, fewest)
        why = f"routing {self.routing.describe()}"
        self.chosen.append(AssumedSize(op, source, split, False, why))
        return split

    def notes(self) -> list[str]:
        """The report's lines, one per distinct (operator, line, value, reason); the Python
        values read from tensors (``.item()``, a tensor in an ``if``) summed up in one."""
        sizes = [a for a in self.chosen if not a.op.endswith("_local_scalar_dense")]
        counted = Counter((a.op, a.source, str(a.value), a.observed, a.why) for a in sizes)
        first = {(a.op, a.source, str(a.value), a.observed, a.why): a for a in sizes}
        lines = [*dict.fromkeys(self.notes_once)]
        lines += [first[key].line(n) for key, n in counted.items()]
        scalars = [a for a in self.chosen if a not in sizes]
        by_reason: dict[str, list[AssumedSize]] = defaultdict(list)
        for a in scalars:
            by_reason["observed on the given inputs" if a.observed else a.why].append(a)
        for how, reads in by_reason.items():
            where = ", ".join(s for s in dict.fromkeys(a.source for a in reads) if s)
            lines.append(
                f"{len(reads)} Python value(s) read from tensors (.item(), a tensor in an if"
                f"{'; at ' + where if where else ''}): {how}"
            )
        return lines


# --------------------------------------------------------------------------- fake tracing
MODEL_VALUE = (
    "computed from the model's own parameters, buffers and tensor constants, whose real values "
    "it holds (built on a real device): the same for every input"
)
MASK_WRITE = "aten.index_put (boolean mask)"  # elements a masked write selects: ops/dynamic.py
MINIMUM = "its smallest possible value; observe=True with real inputs uses the real size"


def _rows(policy: SizePolicy, op: str, x: torch.Tensor, at_least_one: bool = False) -> int:
    least = 1 if at_least_one and x.numel() > 0 else 0
    return int(policy.take(op, least, MINIMUM, depth=4))


def _nonzero(policy: SizePolicy) -> Callable:
    def impl(fake_mode, func, arg):
        n = arg.nonzero_memo
        if n is None:
            n = _rows(policy, "aten.nonzero", arg)
            arg.nonzero_memo = n
        return arg.new_empty((n, arg.dim()), dtype=torch.int64)

    return impl


def _masked_select(policy: SizePolicy) -> Callable:
    def impl(fake_mode, func, x, mask):
        return x.new_empty((_rows(policy, "aten.masked_select", mask),))

    return impl


def _index(policy: SizePolicy, original: Callable) -> Callable:
    def impl(fake_mode, func, *args, **kwargs):
        indices = args[1] if len(args) > 1 else kwargs.get("indices", [])
        for t in indices:
            if t is not None and t.dtype in (torch.bool, torch.uint8):
                t.nonzero_memo = _rows(policy, "aten.index.Tensor (boolean mask)", t)
        return original(fake_mode, func, *args, **kwargs)

    return impl


def _unique(policy: SizePolicy, consecutive: bool) -> Callable:
    op = "aten.unique_consecutive" if consecutive else "aten._unique2"

    def impl(fake_mode, func, arg, *args, **kwargs):
        names = (
            ["return_inverse", "return_counts", "dim"]
            if consecutive
            else ["sorted", "return_inverse", "return_counts"]
        )
        opts = dict(zip(names, args, strict=False)) | kwargs
        if opts.get("dim") is not None:
            from torch._subclasses.fake_tensor import DynamicOutputShapeException

            raise DynamicOutputShapeException(func)
        n = _rows(policy, op, arg, at_least_one=True)
        inverse = arg.new_empty(
            arg.shape if opts.get("return_inverse") else (0,), dtype=torch.int64
        )
        counts = arg.new_empty((n,) if opts.get("return_counts") else (0,), dtype=torch.int64)
        return arg.new_empty((n,)), inverse, counts

    return impl


def _unique_dim(policy: SizePolicy) -> Callable:
    """``unique(x, dim=d)``: the distinct slices along ``d`` (at least one of a non-empty
    ``x``); the inverse and counts only when asked for (as CUDA's kernel writes them)."""

    def impl(fake_mode, func, arg, dim, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
        d = dim % max(arg.dim(), 1)
        n = _rows(policy, "aten.unique_dim", arg, at_least_one=True)
        shape = [*arg.shape[:d], n, *arg.shape[d + 1 :]]
        inverse = arg.new_empty((arg.shape[d] if return_inverse else 0,), dtype=torch.int64)
        counts = arg.new_empty((n if return_counts else 0,), dtype=torch.int64)
        return arg.new_empty(shape), inverse, counts

    return impl


def _unique_legacy(policy: SizePolicy) -> Callable:
    def impl(fake_mode, func, arg, sorted=True, return_inverse=False):  # noqa: A002
        n = _rows(policy, "aten._unique", arg, at_least_one=True)
        inverse = arg.new_empty(arg.shape if return_inverse else (0,), dtype=torch.int64)
        return arg.new_empty((n,)), inverse

    return impl


def _bincount(policy: SizePolicy) -> Callable:
    def impl(fake_mode, func, x, weights=None, minlength=0):
        least = max(int(minlength), 1 if x.numel() > 0 else 0)
        why = (
            "the smallest possible value, max(minlength, 1 if any input); " + MINIMUM.split("; ")[1]
        )
        n = int(policy.take("aten.bincount", least, why, depth=3))
        if weights is None:
            dtype = torch.int64
        else:
            dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64
        return x.new_empty((n,), dtype=dtype)

    return impl


def _repeat_interleave(policy: SizePolicy, original: Callable | None) -> Callable:
    def impl(fake_mode, func, repeats, output_size=None):
        if output_size is not None:  # a known size: PyTorch's own fake kernel
            return original(fake_mode, func, repeats, output_size=output_size)
        n = int(policy.take("aten.repeat_interleave.Tensor", 0, MINIMUM, depth=3))
        return repeats.new_empty((n,))

    return impl


def _nms(policy: SizePolicy) -> Callable:
    def impl(dets, scores, iou_threshold):
        least = 1 if dets.shape[0] > 0 else 0  # the highest-scoring box is always kept
        why = "the smallest possible value (the best box is always kept); " + MINIMUM.split("; ")[1]
        n = int(policy.take("torchvision.nms", least, why, depth=3))
        return dets.new_empty((n,), dtype=torch.int64)

    return impl


def torchvision_nms() -> object | None:
    """``torchvision::nms`` when torchvision's operators are defined."""
    try:
        return torch.ops.torchvision.nms.default
    except (AttributeError, RuntimeError):
        return None


def _scalar(policy: SizePolicy) -> Callable:
    def impl(fake_mode, func, arg):
        if policy.observed is None:
            from torch._subclasses.fake_tensor import DataDependentOutputException

            from solar.frontend.torch.unknown_values import WHY, unknown_number

            number = unknown_number(fake_mode, arg)  # a float: an unknown number, fills only
            if number is None:
                raise DataDependentOutputException(func)
            source = caller_source(3)
            policy.chosen.append(AssumedSize("aten._local_scalar_dense", source, "?", False, WHY))
            return number
        return policy.take("aten._local_scalar_dense", None, "", depth=3)

    return impl


@contextmanager
def sized_fake_ops(policy: SizePolicy) -> Iterator[None]:
    """While tracing, fake tensors give every data-dependent size the policy's value (and, with
    observed sizes, ``.item()`` its observed scalar)."""
    from torch._subclasses import fake_impls

    table = fake_impls.op_implementations_dict
    patches = {
        aten.nonzero.default: _nonzero(policy),
        aten.masked_select.default: _masked_select(policy),
        aten.index.Tensor: _index(policy, table[aten.index.Tensor]),
        aten._unique2.default: _unique(policy, consecutive=False),
        aten.unique_consecutive.default: _unique(policy, consecutive=True),
        aten._unique.default: _unique_legacy(policy),
        aten.unique_dim.default: _unique_dim(policy),
        aten.bincount.default: _bincount(policy),
        aten.repeat_interleave.Tensor: _repeat_interleave(
            policy, table.get(aten.repeat_interleave.Tensor)
        ),
        aten._local_scalar_dense.default: _scalar(policy),
        aten.item.default: _scalar(policy),
    }
    saved = {op: table.get(op) for op in patches}
    table.update(patches)
    holder = None
    if torchvision_nms() is not None:  # a torch.library fake kernel: pushed, then popped
        from torch._library.simple_registry import singleton
        from torch._library.utils import Kernel

        holder = singleton.find("torchvision::nms").fake_impl
        holder.kernels.append(Kernel(_nms(policy), "solar.frontend.torch.sizes"))
    try:
        yield
    finally:
        if holder is not None:
            holder.kernels.pop()
        for op, impl in saved.items():
            if impl is None:
                table.pop(op, None)
            else:
                table[op] = impl


# ------------------------------------------------------------------------------ observing
def _observed_value(
    func: object, args: tuple, kwargs: dict, out: object
) -> tuple[str, object] | None:
    """(queue, value) of one call of a data-dependent operator in a real run."""
    if func is aten.nonzero.default:
        return "aten.nonzero", int(out.shape[0])
    if func is aten.masked_select.default:
        return "aten.masked_select", int(out.numel())
    if func is aten.index.Tensor:
        masks = [t for t in args[1] if t is not None and t.dtype in (torch.bool, torch.uint8)]
        if masks:  # one count per mask, in order
            return "aten.index.Tensor (boolean mask)", [int(m.count_nonzero()) for m in masks]
        return None
    if func in (aten._unique2.default, aten.unique_consecutive.default, aten._unique.default):
        name = {aten._unique2.default: "aten._unique2", aten._unique.default: "aten._unique"}
        return name.get(func, "aten.unique_consecutive"), int(out[0].shape[0])
    if func is aten.unique_dim.default:
        return "aten.unique_dim", int(out[0].shape[args[1] % max(args[0].dim(), 1)])
    if func is aten.bincount.default:
        return "aten.bincount", int(out.shape[0])
    if func in (aten.index_put.default, aten.index_put_.default):
        masks = [t for t in args[1] if t is not None and t.dtype in (torch.bool, torch.uint8)]
        if masks:  # the elements the (first) mask selects, as the lowering takes it
            return MASK_WRITE, int(masks[0].count_nonzero())
        return None
    if func is aten.repeat_interleave.Tensor and kwargs.get("output_size") is None:
        return "aten.repeat_interleave.Tensor", int(out.shape[0])
    if func is not None and func is torchvision_nms():
        return "torchvision.nms", int(out.shape[0])
    if func in (aten._local_scalar_dense.default, aten.item.default):
        return "aten._local_scalar_dense", out
    if func is aten._grouped_mm.default:
        offs = args[2] if len(args) > 2 else kwargs.get("offs")
        if offs is None:
            return None
        ends = [int(e) for e in offs.tolist()]
        return "_grouped_mm", [b - a for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    return None


class _Observer(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, deque] = defaultdict(deque)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        got = _observed_value(func, args, kwargs, out)
        if got is not None:
            queue, value = got
            if isinstance(value, list) and queue.startswith("aten.index"):
                self.seen[queue].extend(value)  # one entry per mask
            else:
                self.seen[queue].append(value)
        return out


def _tolist_by_items(t: torch.Tensor) -> object:
    """``t.tolist()`` read element by element through ``item()``: a real CPU tensor's
    ``tolist`` reads memory without dispatching, a fake one's reads each element with
    ``aten._local_scalar_dense``; the observed run must record those reads too, in order."""
    if t.dim() == 0:
        return t.item()
    return [_tolist_by_items(row) for row in t.unbind(0)]


class _TolistByItems(TorchFunctionMode):
    """Within the observed run only: ``Tensor.tolist`` read through :func:`_tolist_by_items`
    (``tolist`` reaches a mode's ``__torch_function__``), so the run's dispatch mode sees each
    element read. ``torch.Tensor.tolist`` itself is never replaced: other threads and code
    outside the run are untouched."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.tolist:
            return _tolist_by_items(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


def observe(run: Callable[[], object]) -> dict[str, deque]:
    """The data-dependent sizes (and scalars read) of one real run of ``run()``, per
    operator in call order."""
    from solar.frontend.torch.sparse import sparse_tensors  # traced as the trace takes them

    observer = _Observer()
    with torch.no_grad(), _TolistByItems(), observer, sparse_tensors():
        run()
    return dict(observer.seen)


def fewest_groups(node: object) -> int:
    """The fewest experts a router can touch for a grouped GEMM: the ``k`` of the ``topk``
    its offsets descend from (each token picks k distinct experts), else 1."""
    import torch.fx as fx

    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if not isinstance(n, fx.Node) or n in seen:
            continue
        seen.add(n)
        if n.target is aten.topk.default:
            return int(n.args[1])
        stack.extend(n.all_input_nodes)
    return 1
