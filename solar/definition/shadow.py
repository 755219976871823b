"""Real values for the integer tensors of a reference traced on fake tensors.

A reference reads its index tensors on the host (``kv_indptr[b].item()``, ``.tolist()``,
``int(t)``, ``range(n[i])``) and loops over what it reads. Fake tensors have no values, so such a
read fails. :class:`RealValues` is a ``TorchFunctionMode`` that keeps, next to each fake tensor
derived only from index inputs, the real tensor the same calls make of the real index data
(its *shadow*). Host reads of a shadowed tensor answer from the shadow, without reaching the
tracer (they are host work, not kernels), so Python control flow on index values runs for real
and loops unroll; every torch call is still traced on the fakes, so the IR is what the
reference launches.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

# host reads: answered from the shadow, never traced
_HOST_READS = {
    torch.Tensor.item,
    torch.Tensor.tolist,
    torch.Tensor.__int__,
    torch.Tensor.__index__,
    torch.Tensor.__bool__,
    torch.Tensor.__float__,
    torch.Tensor.numpy,
}


def _real_mode():
    """Compute on real tensors: the tracer's dispatch modes (fake, proxy) set aside."""
    from torch.utils._python_dispatch import _disable_current_modes

    return _disable_current_modes()


class RealValues(TorchFunctionMode):
    """Shadow the tensors computed from ``shadows`` (fake tensor -> its real value)."""

    def __init__(
        self,
        shadows: dict[int, tuple[torch.Tensor, torch.Tensor]],
        inputs: dict[str, torch.Tensor] | None = None,
    ):
        super().__init__()
        self._shadow = dict(shadows)  # id(fake) -> (fake, real): the fake kept alive
        self._inputs = {id(t): (n, t) for n, t in (inputs or {}).items()}
        #: input name -> the distinct rows (dim 0) gathered from it through real indices
        self.gathered: dict[str, set[int]] = {}
        #: (input name, distinct rows) of each such gather, in call order
        self.gathers: list[tuple[str, int]] = []

    def real(self, t: object) -> torch.Tensor | None:
        entry = self._shadow.get(id(t)) if isinstance(t, torch.Tensor) else None
        return entry[1] if entry is not None and entry[0] is t else None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _HOST_READS:
            real = self.real(args[0]) if args else None
            if real is not None:
                with _real_mode():
                    return func(real, *args[1:], **kwargs)
            return func(*args, **kwargs)
        self._record_gather(func, args, kwargs)
        out = func(*args, **kwargs)
        flat, _ = tree_flatten((args, kwargs))
        tensors = [x for x in flat if isinstance(x, torch.Tensor)]
        if tensors and all(self.real(x) is not None for x in tensors):
            with torch._C.DisableTorchFunction(), _real_mode():
                try:
                    real_out = func(
                        *tree_map(self._to_real, args), **tree_map(self._to_real, kwargs)
                    )
                except Exception:  # the real call may refuse what the fake accepted: no shadow
                    return out
            self._pair(out, real_out)
        return out

    def _record_gather(self, func, args, kwargs) -> None:
        """Rows of an input read through a real index tensor along dim 0: ``x[idx]``,
        ``x[idx, ...]`` / ``x[idx, :]``, ``index_select(x, 0, idx)``, ``embedding(idx, x)``."""
        source, index = None, None
        if func is torch.Tensor.__getitem__ and len(args) == 2:
            source, key = args
            if (
                isinstance(key, tuple)
                and key
                and all(k is Ellipsis or k == slice(None) for k in key[1:])
            ):
                key = key[0]
            index = key
        elif func in (torch.index_select, torch.Tensor.index_select) and len(args) >= 3:
            source, index = (args[0], args[2]) if args[1] == 0 else (None, None)
        elif func is torch.nn.functional.embedding and len(args) >= 2:
            index, source = args[0], args[1]
        entry = self._inputs.get(id(source)) if isinstance(source, torch.Tensor) else None
        real = self.real(index)
        if entry is None or entry[1] is not source or real is None:
            return
        if real.dtype == torch.bool or real.is_floating_point():
            return
        with _real_mode():
            rows = (real.flatten().to(torch.int64) % max(int(source.shape[0]), 1)).unique()
            self.gathered.setdefault(entry[0], set()).update(rows.tolist())
            self.gathers.append((entry[0], int(rows.numel())))

    def _to_real(self, x):
        real = self.real(x)
        return real if real is not None else x

    def _pair(self, fake, real) -> None:
        if isinstance(fake, torch.Tensor) and isinstance(real, torch.Tensor):
            self._shadow[id(fake)] = (fake, real)
        elif isinstance(fake, (list, tuple)) and isinstance(real, (list, tuple)):
            for f, r in zip(fake, real):
                self._pair(f, r)
