"""Loop-carried dependence chains of looped kernels (``Kernel.loops``): the facts the latency
bound (:mod:`solar.backend.latency`, docs/bounds.md) needs, read from the IR alone.

A *chain* is a state tensor ``X`` that a kernel with one sequential loop ``t < T`` writes at
step ``t + c`` and reads at ``t + c - 1`` (``h[t+1] = f(h[t], x[t])``: RNN layers, JAX scans
lowered as one loop). It is reported only when it is proven that

- **every element of the new state depends on every element of the old one within a lane**:
  positions of ``X`` that every dependent access carries unchanged (the same loop dim, from
  load to output) are *lanes* (batch rows: independent chains); each other position is
  *mixed* -- some statement on the way from ``X[t]`` to ``X[t+1]`` reduces over it across its
  whole extent (the recurrent GEMM ``Σ_k h[t,b,k]·W[n,k]``), so each new element has read all of
  them;
- the **per-step work** counted is work that depends on ``X[t]`` and feeds ``X[t+1]``: the
  backward slice of the state's write, restricted to the parts of expressions that read
  something derived from ``X[t]`` (an input projection ``W_ih·x[t]`` does not depend on the
  state and is not counted: it can be computed ahead). Counts are those of
  :func:`solar.ir.cost.statement_ops` for one iteration (all lanes).

Besides the state, a chain lists the tensors the kernel reads one slice per step (``x[t]``, or
``x[T-1-t]`` in reverse) when the new state depends on all of that slice within a lane
(:class:`StepInput`, with the work that depends on it), and the tensors it writes one slice
per step from the state (:class:`StepOutput`): a copy of the new state (``y[t] = h[t+1]``) or
values that depend on all of the old one. A stacked RNN's layer ``l+1`` reads what layer ``l``
writes, which is how the backend builds the wavefront of a stack.

A chain is reported only when its step applies a transcendental function (tanh, sigmoid,
exp, ...: work on the ``sfu`` class) to values that depend on the state. Linear and max-plus
recurrences (``c[t+1] = a·c[t] + x[t]``, a running maximum) compose into maps of the same
kind, so a parallel scan evaluates them in logarithmic depth, and the step-by-step chain
would not be a lower bound for it.

Anything not recognised (a guard other than the first/last step, gathers on the state, a
partial overwrite, more than one loop dim) drops the claim: fewer chains or less work, never
more, so the bound built on them stays a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod

from solar.algebra.size import to_real
from solar.ir.program import Access, Kernel, Program, Statement
from solar.ir.scalar import Call, Const, Expr, Indirect, Load, substitute_expr

__all__ = ["Chain", "StepInput", "StepOutput", "kernel_chains"]

Lanes = tuple[tuple[int, int], ...]  # (position in the tensor, position in the state)


@dataclass(frozen=True)
class StepInput:
    """A tensor the chain reads one slice of per step, slice ``coef * t + const``."""

    tensor: str
    coef: int
    const: int
    lanes: Lanes
    # per step, all lanes: work of statements whose operands from the tensor are not yet mixed
    # over its whole slice (the input projection; its share from one producer of part of the
    # slice is proportional), and of statements after the mixing (they depend on all of it)
    mixing_ops: dict[str, float]
    mixed_ops: dict[str, float]

    def to_dict(self) -> dict:
        return {**self.__dict__, "lanes": [list(x) for x in self.lanes]}


@dataclass(frozen=True)
class StepOutput:
    """A tensor the chain writes one slice of per step, slice ``coef * t + const``."""

    tensor: str
    coef: int
    const: int
    lanes: Lanes
    copy: bool  # a copy of the new state X[t+1] (else: depends on all of the old state X[t])
    elements: int  # elements written per step
    slice_elements: int  # elements of one slice of the tensor

    def to_dict(self) -> dict:
        return {**self.__dict__, "lanes": [list(x) for x in self.lanes]}


@dataclass(frozen=True)
class Chain:
    """A proven loop-carried dependence chain of one looped kernel (module docstring)."""

    kernel: str
    state: str
    steps: int
    lanes: int  # independent chains (product of the lane positions' extents)
    lane_positions: tuple[int, ...]
    ops: dict[str, float]  # per step, all lanes: work depending on X[t] that feeds X[t+1]
    inputs: tuple[StepInput, ...] = ()
    outputs: tuple[StepOutput, ...] = ()

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["lane_positions"] = list(self.lane_positions)
        d["inputs"] = [i.to_dict() for i in self.inputs]
        d["outputs"] = [o.to_dict() for o in self.outputs]
        return d


# ---------------------------------------------------------------------------------------------
# Index helpers


def _step_entry(index, t: str) -> tuple[int, int, int] | None | bool:
    """``(position, coef, const)`` of the one index entry that moves with ``t`` (``±t + c``);
    None when no entry does; False when the step cannot be read (two entries, other dims,
    another coefficient, a data-dependent entry)."""
    found = None
    for p, e in enumerate(index):
        if isinstance(e, Indirect):
            if t in e.dims:
                return False
            continue
        c = e.coef(t)
        if c == 0:
            continue
        if found is not None or abs(c) != 1 or len(e.terms) != 1:
            return False
        found = (p, c, e.const)
    return found


def _t_guarded(st: Statement, t: str) -> bool:
    return any(t in g.expr.dims for g in st.guards)


def _strip_cast(e: Expr) -> Expr:
    while isinstance(e, Call) and e.op == "cast" and len(e.args) == 1:
        e = e.args[0]
    return e


class _LaneFail(Exception):
    def __init__(self, position: int) -> None:
        self.position = position


@dataclass
class _Dep:
    """How a tensor depends on the source: ``pos`` maps source positions to the positions of
    this tensor that carry them unchanged; every element depends on all source values along
    the ``full`` positions (within its lane)."""

    pos: dict[int, int]
    full: frozenset[int] = field(default_factory=frozenset)


@dataclass
class _Flow:
    deps: dict[int, _Dep | None]  # statement index -> its output's dependence (None: none)
    loads: dict[int, set[Load]]  # statement index -> its loads that depend on the source
    full_in: dict[int, frozenset[int]]  # source positions all its dependent operands are full over


# ---------------------------------------------------------------------------------------------
# The analysis of one kernel


class _Kernel:
    def __init__(self, program: Program, kernel: Kernel) -> None:
        self.p = program
        self.k = kernel
        self.t = kernel.loops[0].name
        self.T = kernel.loops[0].extent
        # statements that run every step (guards on t: first/last step only -> left out)
        self.body = [
            (i, st) for i, st in enumerate(kernel.statements) if not _t_guarded(st, self.t)
        ]
        self.stmts = dict(self.body)

    # -- dependence propagation -----------------------------------------------------------

    def _out_position(self, st: Statement, d: str | None) -> int | None:
        """Position of the output entry that is exactly ``d`` (and the only one using it)."""
        if d is None:
            return None
        uses = [
            p for p, e in enumerate(st.out.index) if not isinstance(e, Indirect) and d in e.dims
        ]
        if len(uses) != 1 or st.out.index[uses[0]].single_dim != d:
            return None
        return uses[0]

    def _covers(self, st: Statement) -> bool:
        """Whether ``st`` writes every element of its output's per-step slice."""
        decl = self.p.tensors[st.out.tensor]
        if decl.view is not None or st.out.indirect or st.guards or st.kind != "nest":
            return False
        seen = set()
        for p, e in enumerate(st.out.index):
            if self.t in e.dims:
                continue
            d = e.single_dim
            if d is None or d in seen or st.extents.get(d) != decl.shape[p]:
                return False
            if any(x.name == d and x.reduction for x in st.dims):
                return False
            seen.add(d)
        return True

    def propagate(self, is_source, source: _Dep, lanes: set[int]) -> _Flow:
        """Dependence of every statement's output on the loads for which ``is_source(load)``
        (each carrying the source's positions as ``source`` says), in one iteration."""
        tdep: dict[str, _Dep | None] = {}
        flow = _Flow({}, {}, {})
        for i, st in self.body:
            pairs: list[tuple[str, tuple, _Dep]] = []
            dep_loads: set[Load] = set()
            for ld in st.expr.value_loads():
                base = self.p.base(ld.tensor)
                if is_source(ld):
                    pairs.append((ld.tensor, ld.index, source))
                elif tdep.get(base) is not None and ld.tensor == base:
                    pairs.append((base, ld.index, tdep[base]))  # type: ignore[arg-type]
                else:
                    continue
                dep_loads.add(ld)
            base = self.p.base(st.out.tensor)
            if st.accumulate and tdep.get(base) is not None and st.out.tensor == base:
                pairs.append((base, st.out.index, tdep[base]))  # type: ignore[arg-type]
            if not pairs:
                flow.deps[i] = tdep[base] = None
                continue
            flow.loads[i] = dep_loads
            flow.full_in[i] = frozenset.intersection(*(d.full for _, _, d in pairs))
            if st.kind != "nest":  # a scan or an extern routine
                flow.deps[i] = _Dep({})  # depends; an opaque pattern: nothing claimed
            else:
                flow.deps[i] = self._combine(st, pairs, lanes)
            tdep[base] = flow.deps[i] if self._covers(st) else None
        return flow

    def _combine(self, st: Statement, pairs, lanes: set[int]) -> _Dep:
        parallel = {d.name for d in st.dims if not d.reduction}
        # a guarded reduction may skip terms (a mask, a triangle): it claims no full position
        reduction = {} if st.guards else {d.name: d.extent for d in st.dims if d.reduction}
        out_pos: dict[int, int] = {}
        carried: dict[int, int | None] = {}
        full: set[int] = set()
        for tensor, index, dep in pairs:
            shape = self.p.tensors[tensor].shape
            full |= dep.full
            uses: dict[str, int] = {}  # dim -> entries of this access that use it
            for e in index:
                for dim in () if isinstance(e, Indirect) else e.dims:
                    uses[dim] = uses.get(dim, 0) + 1
            for q, p in dep.pos.items():
                e = index[p]
                d = None if isinstance(e, Indirect) else e.single_dim
                target = self._out_position(st, d) if d in parallel else None
                if q in lanes:
                    if target is None or out_pos.get(q, target) != target:
                        raise _LaneFail(q)
                    out_pos[q] = target
                elif d in reduction and reduction[d] == shape[p] and uses[d] == 1:
                    full.add(q)  # each output reads every value along this position
                elif target is not None and carried.get(q, target) == target:
                    carried[q] = target
                else:
                    carried[q] = None
        pos = dict(out_pos)
        pos.update({q: p for q, p in carried.items() if p is not None and q not in full})
        return _Dep(pos, frozenset(full))

    # -- per-step work ----------------------------------------------------------------------

    def step_ops(self, st: Statement, dependent: set[Load]) -> dict[str, float]:
        """Ops of one iteration of ``st`` that depend on the loads in ``dependent``: a
        contraction with a dependent operand counts whole; otherwise the subtrees reading
        nothing dependent are left out (a reduction or accumulation onto a dependent value
        keeps its combines)."""
        from solar.ir.cost import contraction_operands, statement_ops

        at = {self.t: 0}
        pair = contraction_operands(st)
        if pair is not None:
            if not any(ld in dependent for ld in pair):
                return {}
            expr: Expr = st.expr
        else:
            pruned = _prune(st.expr, dependent)
            if pruned is None and not st.accumulate:
                return {}
            expr = pruned if pruned is not None else Const(0.0)
        one = replace(
            st,
            out=Access(st.out.tensor, tuple(e.substitute(at) for e in st.out.index)),
            expr=substitute_expr(expr, at),
            guards=tuple(replace(g, expr=g.expr.substitute(at)) for g in st.guards),
        )
        holder = Kernel("step", "step", [one])
        return {k: to_real(v) for k, v in statement_ops(self.p, one, holder).items()}

    def needed(self, writes: set[int]) -> set[int]:
        """The backward slice of the statements ``writes`` within one iteration: statements
        whose output reaches them, through tensors whose readers cover the whole per-step
        slice (a partial read does not make its writer needed: less work, never more)."""
        need = set(writes)
        order = [i for i, _ in self.body]
        for pos in range(len(order) - 1, -1, -1):
            i = order[pos]
            if i in need:
                continue
            base = self.p.base(self.stmts[i].out.tensor)
            reads: list[tuple[Load, Statement]] = []
            feeds = False
            for j in order[pos + 1 :]:
                sj = self.stmts[j]
                if j in need:
                    reads += [
                        (ld, sj) for ld in sj.expr.value_loads() if self.p.base(ld.tensor) == base
                    ]
                writes_base = self.p.base(sj.out.tensor) == base
                if writes_base and sj.accumulate and j in need:
                    feeds = True
                if writes_base and not sj.accumulate:
                    break  # overwritten: later reads see that write
            if feeds or (reads and self._covered(base, reads)):
                need.add(i)
        return need

    def _covered(self, base: str, reads: list[tuple[Load, Statement]]) -> bool:
        """Whether the loads read every element of ``base``'s per-step slice: each reads
        whole positions but at most one, along which their ranges join up."""
        shape = self.p.tensors[base].shape
        varying: dict[int, list[tuple[int, int]]] = {}
        for ld, st in reads:
            if ld.tensor != base:
                return False
            ranges = {}
            for p, e in enumerate(ld.index):
                if isinstance(e, Indirect):
                    return False
                if self.t in e.dims:
                    continue
                if len(e.terms) != 1 or e.terms[0][1] != 1 or e.terms[0][0] not in st.extents:
                    return False
                ranges[p] = (e.const, e.const + st.extents[e.terms[0][0]])
            partial = [p for p, r in ranges.items() if r != (0, shape[p])]
            if len(partial) > 1 or len(ranges) < len(shape) - sum(
                1 for e in ld.index if not isinstance(e, Indirect) and self.t in e.dims
            ):
                return False
            for p in partial:
                varying.setdefault(p, []).append(ranges[p])
        if len(varying) > 1:
            return False
        for p, rs in varying.items():
            reach = 0
            for lo, hi in sorted(rs):
                if lo > reach:
                    return False
                reach = max(reach, hi)
            if reach < shape[p]:
                return False
        return True

    def _settle(self, run, others: list[int]) -> tuple[_Flow | None, set[int]]:
        """Run a propagation, dropping lane positions that fail, until it holds."""
        lanes = set(others)
        for _ in range(len(others) + 1):
            try:
                return run(lanes), lanes
            except _LaneFail as e:
                lanes.discard(e.position)
        return None, set()

    # -- the chains ---------------------------------------------------------------------------

    def candidates(self) -> list[tuple[str, int, int, list[int]]]:
        """Carried tensors: ``(tensor, step position, write offset, writing statements)``
        for a tensor written at ``t + c`` and read at ``t + c - 1`` in every step."""
        writes: dict[str, list[tuple[int, object]]] = {}
        for i, st in self.body:
            base = self.p.base(st.out.tensor)
            form = _step_entry(st.out.index, self.t) if st.out.tensor == base else False
            writes.setdefault(base, []).append((i, form))
        out = []
        for x, ws in writes.items():
            forms = {w for _, w in ws}
            if len(forms) != 1:
                continue
            form = forms.pop()
            if not form or form[1] != 1:
                continue
            q0, _, c_w = form
            reads = {
                _step_entry(ld.index, self.t)
                for _, st in self.body
                for ld in st.expr.value_loads()
                if ld.tensor == x
            }
            if (q0, 1, c_w - 1) in reads:
                out.append((x, q0, c_w, [i for i, _ in ws]))
        return out

    def chain(self, x: str, q0: int, c_w: int, writes: list[int]) -> Chain | None:
        shape = self.p.tensors[x].shape
        others = [q for q in range(len(shape)) if q != q0]
        source = _Dep({q: q for q in others})

        def is_source(ld: Load) -> bool:
            return ld.tensor == x and _step_entry(ld.index, self.t) == (q0, 1, c_w - 1)

        flow, lanes = self._settle(lambda ln: self.propagate(is_source, source, ln), others)
        if flow is None:
            return None
        mixed = set(others) - lanes
        for i in writes:
            d = flow.deps.get(i)
            if d is None or not mixed <= d.full or any(d.pos.get(q) != q for q in lanes):
                return None
        need = self.needed(set(writes))
        ops: dict[str, float] = {}
        for i in sorted(need & set(flow.loads)):
            _add(ops, self.step_ops(self.stmts[i], flow.loads[i]))
        return Chain(
            self.k.name,
            x,
            self.T,
            prod(shape[q] for q in lanes),
            tuple(sorted(lanes)),
            ops,
            inputs=tuple(self._inputs(writes, need, lanes)),
            outputs=tuple(self._outputs(x, q0, c_w, writes, flow, lanes, mixed)),
        )

    def _outputs(self, x, q0, c_w, writes, flow: _Flow, lanes, mixed) -> list[StepOutput]:
        out = []
        for i, st in self.body:
            y = st.out.tensor
            decl = self.p.tensors[y]
            if y == x or decl.view is not None or decl.role == "local" or st.out.indirect:
                continue
            form = _step_entry(st.out.index, self.t)
            if not form:
                continue
            mapping = self._copy_lanes(st, x, q0, c_w, lanes) if i > max(writes) else None
            copy = mapping is not None
            if not copy:
                d = flow.deps.get(i)
                if d is None or not mixed <= d.full or not lanes <= set(d.pos):
                    continue
                mapping = tuple(sorted((d.pos[q], q) for q in lanes))
            n = prod(d.extent for d in st.dims if not d.reduction)
            slice_elements = prod(decl.shape) // decl.shape[form[0]]
            out.append(StepOutput(y, form[1], form[2], mapping, copy, n, slice_elements))
        return out

    def _copy_lanes(self, st: Statement, x, q0, c_w, lanes) -> Lanes | None:
        """Lanes of an output statement that copies the whole new state ``X[t+1]``."""
        e = _strip_cast(st.expr)
        if st.reduce or st.accumulate or st.reduction_dims or st.guards:
            return None
        if not isinstance(e, Load) or e.tensor != x:
            return None
        if _step_entry(e.index, self.t) != (q0, 1, c_w):
            return None
        dims: dict[int, str] = {}
        for q, idx in enumerate(e.index):
            if q == q0:
                continue
            d = idx.single_dim
            if d is None or d in dims.values() or st.extents.get(d) != self.p.tensors[x].shape[q]:
                return None
            dims[q] = d
        if set(dims.values()) != {dd.name for dd in st.dims}:
            return None
        where: dict[str, int] = {}
        for p, o in enumerate(st.out.index):
            if isinstance(o, Indirect) or self.t in o.dims:
                continue
            if len(o.terms) != 1 or o.terms[0][1] != 1 or o.terms[0][0] in where:
                return None
            where[o.terms[0][0]] = p
        if set(where) != set(dims.values()):
            return None
        mapping = []
        for q in sorted(lanes):
            p = where[dims[q]]
            if st.out.index[p].single_dim != dims[q]:
                return None
            mapping.append((p, q))
        return tuple(mapping)

    def _inputs(self, writes, need: set[int], lanes: set[int]) -> list[StepInput]:
        written = {self.p.base(st.out.tensor) for st in self.k.statements}
        forms: dict[str, set] = {}
        for i in need:
            for ld in self.stmts[i].expr.value_loads():
                base = self.p.base(ld.tensor)
                if base not in written:
                    f = _step_entry(ld.index, self.t) if ld.tensor == base else False
                    if f is not None:
                        forms.setdefault(base, set()).add(f)
        out = []
        for z, fs in sorted(forms.items()):
            if len(fs) != 1 or False in fs:
                continue
            q0, coef, const = next(iter(fs))
            others = [q for q in range(len(self.p.tensors[z].shape)) if q != q0]
            source = _Dep({q: q for q in others})

            def is_source(ld: Load, z=z, form=(q0, coef, const)) -> bool:
                return ld.tensor == z and _step_entry(ld.index, self.t) == form

            flow, z_lanes = self._settle(
                lambda ln, f=is_source, s=source: self.propagate(f, s, ln), others
            )
            if flow is None:
                continue
            mapping = self._input_lanes(flow, writes, set(others) - z_lanes, z_lanes, lanes)
            if mapping is None:
                continue
            mixed = set(others) - z_lanes
            mixing: dict[str, float] = {}
            after: dict[str, float] = {}
            for i in sorted(need & set(flow.loads)):
                ops = self.step_ops(self.stmts[i], flow.loads[i])
                _add(after if mixed <= flow.full_in[i] else mixing, ops)
            out.append(StepInput(z, coef, const, mapping, mixing, after))
        return out

    def _input_lanes(self, flow: _Flow, writes, mixed, z_lanes, lanes) -> Lanes | None:
        """(input position, state position) of each lane when every element of the new state
        depends on all of the input's slice within its lane; None otherwise."""
        mapping = None
        for i in writes:
            d = flow.deps.get(i)
            if d is None or not mixed <= d.full:
                return None
            m = tuple(sorted((zq, d.pos.get(zq)) for zq in z_lanes))
            targets = [v for _, v in m]
            if None in targets or set(targets) != lanes or len(set(targets)) != len(targets):
                return None
            if mapping is not None and m != mapping:
                return None
            mapping = m
        return mapping  # type: ignore[return-value]


def _prune(e: Expr, dependent: set[Load]) -> Expr | None:
    """``e`` with every subtree that reads nothing dependent replaced by a constant (None when
    nothing in ``e`` is dependent)."""
    if isinstance(e, Load):
        return e if e in dependent else None
    if isinstance(e, Call):
        args = [_prune(a, dependent) for a in e.args]
        if all(a is None for a in args):
            return None
        return Call(e.op, tuple(a if a is not None else Const(0.0) for a in args), e.attrs)
    return None


def _add(acc: dict[str, float], ops: dict[str, float]) -> None:
    for k, v in ops.items():
        acc[k] = acc.get(k, 0.0) + v


def kernel_chains(program: Program, kernel: Kernel) -> list[Chain]:
    """The proven dependence chains of ``kernel`` (none unless it has one sequential loop of
    two or more steps)."""
    if len(kernel.loops) != 1 or kernel.loops[0].extent < 2:
        return []
    k = _Kernel(program, kernel)
    chains = []
    for x, q0, c_w, writes in k.candidates():
        c = k.chain(x, q0, c_w, writes)
        if c is not None and c.ops.get("sfu", 0) > 0:  # nonlinear: see the module docstring
            chains.append(c)
    return chains
