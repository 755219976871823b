"""Opaque library routines over rows: the table behind :class:`~solar.ir.program.Extern`.

Some operators are not loop nests of scalar operators but library algorithms whose work depends
on the data (sorting networks, radix sorts, selection): sort, argsort, topk, kthvalue, median,
and the selections whose output size is data-dependent (nonzero, unique, histc), each traced
at one chosen size (:mod:`solar.frontend.torch.sizes`; a run whose data has another size is
refused).
The IR states them as *extern* statements (:class:`solar.ir.program.Extern`): the rows
they read and the outputs they write are ordinary affine accesses, so their DRAM traffic is
exact, and the routine itself is a row of this table: its name and the operations it provably
needs (pure data; the torch interpreter's implementation of each routine, mapping rows
``(*batch, n)`` to ``(*batch, m)``, is :data:`solar.interp.torch.routine_kernels.TORCH_ROUTINES`).

The FFT and dense linear-algebra routines (:mod:`solar.ir.extern_spectral`,
:mod:`solar.ir.extern_linalg`) add their rows to the table: they carry their
published operation counts (see those modules) and say what the bound assumes of them in
:data:`ROUTINE_ASSUMPTIONS`.

Cost model (the compute lower bound) of the rows below: **zero operations** for every
selection routine. Reading
every key once and writing every output once is necessary, and is counted as DRAM traffic by
the accesses. No positive op count is provable for these routines on a GPU: a comparison
count (``n - 1`` for a selection, ``log2 n!`` for a sort) only binds comparison-based
algorithms, while radix sort and radix select move keys by digit through memory (histograms,
scatters), with a per-key instruction count that depends on the key width and the
implementation; and a fan-in argument over two-input operations fails for the 3-input
instructions (LOP3, FMA) and for combining done by the memory system (atomics). So an extern
node is bounded by its memory traffic (and by the compute of the elementwise expression that
feeds it, counted as usual). Adding a routine is adding a row.
"""

from __future__ import annotations

from solar.ir import extern_linalg, extern_spectral
from solar.ir.extern_base import ExternOp


def _no_ops(n: int, m: int, rows: int, attrs: dict) -> dict[str, int]:
    return {}


def _random_keys(n: int, m: int, rows: int, attrs: dict) -> dict[str, int]:
    """A random permutation draws one random key per element (>= 1 op each, see
    :data:`solar.ir.ops.SCALAR_OPS` ``random``); ordering the keys costs nothing provable."""
    return {"cuda_int32": n * rows}


class DataSizeMismatch(ValueError):
    """A data-dependent size of the data differs from the size the program was traced at."""


_ROWS = [
    ExternOp("sort.values", _no_ops, "rows sorted (descending, stable)"),
    ExternOp("sort.indices", _no_ops, "positions of the sorted values"),
    ExternOp("topk.values", _no_ops, "k largest/smallest (k, largest, sorted)"),
    ExternOp("topk.indices", _no_ops, "positions of the top k"),
    ExternOp("kthvalue.values", _no_ops, "k-th smallest (k), one per row"),
    ExternOp("kthvalue.indices", _no_ops, "position of the k-th smallest"),
    ExternOp("median.values", _no_ops, "lower median (ignore_nan)"),
    ExternOp("median.indices", _no_ops, "position of the lower median"),
    ExternOp("randperm", _random_keys, "a random permutation of the row (n keys)"),
    ExternOp("nonzero", _no_ops, "one coordinate of the non-zero elements (shape)"),
    ExternOp("nonzero.count", _no_ops, "how many elements are non-zero"),
    ExternOp("unique.values", _no_ops, "distinct values"),
    ExternOp("unique.inverse", _no_ops, "each value's slot"),
    ExternOp("unique.counts", _no_ops, "each value's count"),
    ExternOp("histc", _no_ops, "counts of the row in equal bins of [lo, hi]"),
    ExternOp("nms", _no_ops, "boxes kept by NMS, of boxes sorted by score (iou)"),
]

_ROWS += extern_spectral.ROWS + extern_linalg.ROWS

EXTERN_OPS: dict[str, ExternOp] = {op.name: op for op in _ROWS}

# What the bound assumes when a program runs a routine (the Bound's assumptions): routine name
# or prefix ("fft.") -> the sentence, from the routine families.
ROUTINE_ASSUMPTIONS: dict[str, str] = {**extern_spectral.ASSUMPTIONS, **extern_linalg.ASSUMPTIONS}


def routine_assumptions(names: set[str]) -> list[str]:
    """The assumptions of the routines ``names`` (by exact name or prefix), each once."""
    out: list[str] = []
    for key, text in ROUTINE_ASSUMPTIONS.items():
        hit = key in names or (key.endswith(".") and any(n.startswith(key) for n in names))
        if hit and text not in out:
            out.append(text)
    return out


def extern_op(name: str) -> ExternOp:
    try:
        return EXTERN_OPS[name]
    except KeyError:
        raise ValueError(
            f"extern routine {name!r} is not in solar.ir.extern.EXTERN_OPS; add a row there"
        ) from None
