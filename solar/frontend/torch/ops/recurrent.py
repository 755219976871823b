"""Recurrent layers (``torch.ops.solar.lstm``, ``.gru``, ``.rnn_tanh``, ``.rnn_relu``): ONE
kernel per layer, sequential over time.

``nn.LSTM``/``nn.GRU``/``nn.RNN`` are intercepted while tracing (:mod:`..fused`): eager CUDA
runs them through cuDNN, while a CPU trace records per-timestep kernels. Each layer is one
kernel with a sequential loop ``t < T`` (:attr:`solar.ir.program.Kernel.loops`); both
directions of a bidirectional layer run in the same iteration (forward at step ``t``, reverse at
step ``T-1-t``; they are independent). Per direction and step, with the state in kernel-local
storage indexed by step (``h[t]`` enters step ``t``: every value that changes per step is
indexed by ``t``, so op counts and footprints are exact)::

    [t == 0]      h[0] = h0[l·D+d];  c[0] = c0[l·D+d];  bias[n] = b_ih[n] + b_hh[n]
    g[t,b,n]   = bias[n]                                     (the accumulator's start)
    g[t,b,n]  += Σ_i x[t', b, i] · W_ih[n, i]                tensor cores
    g[t,b,n]  += Σ_k h[t, b, k] · W_hh[n, k]                 tensor cores
    LSTM:  c[t+1] = σ(i)·tanh(g) + σ(f)·c[t];  h[t+1] = σ(o)·tanh(c[t+1])
           (proj_size: h[t+1] = W_hr · (σ(o)·tanh(c[t+1])))
    GRU:   n = tanh(gi_n + σ(gi_r + gh_r)·gh_n);  h[t+1] = n + σ(gi_z + gh_z)·(h[t] - n)
           (gi = W_ih·x + b_ih and gh = W_hh·h + b_hh accumulate apart)
    RNN:   h[t+1] = tanh(g) or relu(g)
    y[t', b, d·P + p] = h[t+1, b, p];   [t == T-1]  h_n[l·D+d] = h[T];  c_n[l·D+d] = c[T]

(``t' = t`` forward, ``T-1-t`` reverse; ``x``/``y`` are indexed ``[b, t', ·]`` when
``batch_first``). The input projection ``W_ih · x_t`` is computed inside the loop; cuDNN hoists
it into one GEMM over all steps before the recurrence, which is the same flops. The biases are
the accumulators' initial value (as in ``addmm``), so they cost no per-step add; the per-layer
``b_ih + b_hh`` is computed once. The gate math runs in float32 for half inputs (the state and
gates are float32 locals). fp32 contractions follow ``torch.backends.cudnn.allow_tf32`` (what
PyTorch sets cuDNN's RNN math type from).

Why one kernel per layer stays a lower bound of cuDNN: whatever cuDNN launches for a layer (the
standard algorithm: a GEMM for the input projections of all steps, then per step a recurrent
GEMM and a gate kernel; a persistent algorithm: one kernel for the recurrence) performs at
least this kernel's operations and moves at least its DRAM bytes (every input, weight and
output of the layer once), and a sum of per-kernel roofline times is at least the roofline
time of the union. Layers are not merged into one kernel because PyTorch runs every
multi-layer or bidirectional RNN with the standard algorithm (the persistent ones need one
layer, one direction and half precision), which passes each layer's output sequence to the
next through device memory; keeping that traffic keeps the unfused bound informative, and
still below cuDNN. A finer split (per step) would charge DRAM round trips of the state that a
persistent kernel avoids. Training-mode dropout between layers (random) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from solar.frontend.torch import fused  # noqa: F401  (defines torch.ops.solar.*)
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine, AffineLike
from solar.ir.program import Guard
from solar.ir.scalar import Expr, call

solar_ops = torch.ops.solar
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


@dataclass(frozen=True)
class _Rnn:
    """What every layer and direction of one recurrent call shares: its kind and sizes, read
    and checked once (:func:`_read_call`)."""

    kind: str
    steps: int
    batch: int
    hidden: int
    state: int  # proj_size for a projected LSTM, else hidden
    dirs: int
    has_biases: bool
    proj: bool
    batch_first: bool
    acc: str  # the dtype of the state and gates (float32 for half inputs)
    precision: str | None  # the contractions' math (cuDNN's, from allow_tf32)

    @property
    def per(self) -> int:
        """Weights per layer and direction."""
        return _weights_per(self.has_biases, self.proj)

    @property
    def g_rows(self) -> int:
        """Rows of the stacked gate pre-activations (4·hidden for an LSTM)."""
        return GATES[self.kind] * self.hidden


def _weights_per(has_biases: bool, proj: bool) -> int:
    """Weights per layer and direction: W_ih, W_hh[, b_ih, b_hh][, W_hr]."""
    return 2 + 2 * bool(has_biases) + int(proj)


class _Weights(NamedTuple):
    """The parameters of one layer and direction, in ``nn.LSTM``'s flat order."""

    w_ih: T
    w_hh: T
    b_ih: T | None
    b_hh: T | None
    w_hr: T | None  # the LSTM's projection (proj_size), else None

    @classmethod
    def of(cls, params: list[T], rnn: _Rnn, slot: int) -> _Weights:
        """The weights of slot ``layer·D + d`` of ``params``."""
        w = params[slot * rnn.per : (slot + 1) * rnn.per]
        b_ih, b_hh = (w[2], w[3]) if rnn.has_biases else (None, None)
        return cls(w[0], w[1], b_ih, b_hh, w[-1] if rnn.proj else None)


def _read_call(
    ctx: LoweringContext,
    x: T,
    h0: T,
    c0: T | None,
    params: list[T],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> _Rnn:
    """Check the call (deterministic, 3-dim, the expected number of weights, not empty) and
    read the sizes every layer shares; refuses with a one-line reason otherwise."""
    kind = ctx.op.overloadpacket.__name__
    if train and dropout and num_layers > 1:
        ctx.fail(
            f"with dropout={dropout} in training mode is random; call .eval() (or dropout=0) "
            "before tracing"
        )
    if x.ndim != 3 or h0.ndim != 3:
        ctx.fail(f"needs a 3-dim input and state, got {x.shape} and {h0.shape}")
    dirs = 2 if bidirectional else 1
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    hidden = c0.shape[-1] if c0 is not None else h0.shape[-1]
    state = h0.shape[-1]
    proj = kind == "lstm" and state != hidden
    per = _weights_per(has_biases, proj)
    if len(params) != num_layers * dirs * per:
        ctx.fail(f"got {len(params)} weights; expected {num_layers * dirs * per}")
    if steps == 0 or batch == 0:
        ctx.fail("on an empty sequence is not supported")
    out_dtype = ctx.out(0).dtype
    return _Rnn(
        kind=kind,
        steps=steps,
        batch=batch,
        hidden=hidden,
        state=state,
        dirs=dirs,
        has_biases=has_biases,
        proj=proj,
        batch_first=batch_first,
        acc=acc_dtype(out_dtype),
        precision=ctx.policy.conv(out_dtype),  # cuDNN RNNs follow cudnn.allow_tf32
    )


class _Direction:
    """Emits the statements of one direction of one layer into the layer's open kernel (loop
    ``t < T``): the initial state, the gate pre-activations, the cell, the outputs."""

    def __init__(self, ctx: LoweringContext, rnn: _Rnn, layer: int, d: int) -> None:
        self.ctx = ctx
        self.rnn = rnn
        self.d = d
        self.slot = layer * rnn.dirs + d  # slot in params and in h0/c0/h_n/c_n
        self.tag = f"l{layer}{'_reverse' if d else ''}"
        t = Affine.of("t")
        self.step = t if d == 0 else t * -1 + (rnn.steps - 1)  # the sequence position t'
        self.next = t + 1  # the state leaving step t
        self.bh = [("b", rnn.batch), ("p", rnn.state)]  # over the state (proj_size wide)
        self.bj = [("b", rnn.batch), ("j", rnn.hidden)]  # over the hidden units
        self.bn = [("b", rnn.batch), ("n", rnn.g_rows)]  # over the stacked gates

    # -- helpers ---------------------------------------------------------------------------

    def local(self, stem: str, shape: tuple[int, ...]) -> T:
        """Kernel-local storage of this direction, in the accumulation dtype."""
        return self.ctx.local(f"{self.tag}_{stem}", shape, self.rnn.acc)

    def seq(self, col: AffineLike) -> list[AffineLike]:
        """Index of ``[t', b, col]`` in a sequence tensor (``[b, t', col]`` batch first)."""
        return ["b", self.step, col] if self.rnn.batch_first else [self.step, "b", col]

    def first(self) -> list[Guard]:
        """Guard: only the first step."""
        return [Guard(Affine.of("t"), 0, 1)]

    def last(self) -> list[Guard]:
        """Guard: only the last step."""
        return [Guard(Affine.of("t"), self.rnn.steps - 1, self.rnn.steps)]

    def gate(self, g: T, row: int) -> Expr:
        """Gate ``row`` (i, f, g, o for an LSTM) of the pre-activations ``g`` at step t."""
        return self.ctx.load(g, ["t", "b", Affine.of("j") + row * self.rnn.hidden])

    # -- steps -----------------------------------------------------------------------------

    def initial_state(self, h0: T, c0: T | None) -> tuple[T, T | None]:
        """The state storage indexed by step (``h[t]`` enters step ``t``), with ``h[0]`` (and
        an LSTM's ``c[0]``) copied from ``h0``/``c0`` at the first step."""
        ctx, rnn = self.ctx, self.rnn
        h = self.local("h", (rnn.steps + 1, rnn.batch, rnn.state))
        h0_ = ctx.load(h0, [self.slot, "b", "p"], rnn.acc)
        ctx.statement(self.bh, h, [0, "b", "p"], h0_, guards=self.first())
        if c0 is None:
            return h, None
        c = self.local("c", (rnn.steps + 1, rnn.batch, rnn.hidden))
        c0_ = ctx.load(c0, [self.slot, "b", "j"], rnn.acc)
        ctx.statement(self.bj, c, [0, "b", "j"], c0_, guards=self.first())
        return h, c

    def bias_starts(self, w: _Weights) -> tuple[Expr | None, Expr | None]:
        """The accumulators' start values (input side, hidden side): the biases. A GRU keeps
        ``b_ih`` and ``b_hh`` apart (its n gate needs ``W_hn·h + b_hn`` alone); the others
        start one accumulator from ``b_ih + b_hh``, computed once at the first step."""
        ctx, rnn = self.ctx, self.rnn
        if w.b_ih is None or w.b_hh is None:
            return None, None
        b_ih, b_hh = ctx.load(w.b_ih, ["n"], rnn.acc), ctx.load(w.b_hh, ["n"], rnn.acc)
        if rnn.kind == "gru":
            return b_ih, b_hh
        bias = self.local("bias", (rnn.g_rows,))
        ctx.statement(
            [("n", rnn.g_rows)], bias, ["n"], call("add", b_ih, b_hh), guards=self.first()
        )
        return ctx.load(bias, ["n"]), None

    def pre_activations(self, layer_in: T, h: T, w: _Weights) -> tuple[T, T]:
        """The gate pre-activations ``gi = b + W_ih·x[t']`` and ``gh = W_hh·h[t]`` (one
        accumulator ``gi`` for LSTM/RNN, where ``gh`` is ``gi``; two for a GRU), on tensor
        cores."""
        ctx, rnn = self.ctx, self.rnn
        gi = self.local("gates", (rnn.steps, rnn.batch, rnn.g_rows))
        gh = (
            self.local("hidden_gates", (rnn.steps, rnn.batch, rnn.g_rows))
            if rnn.kind == "gru"
            else gi
        )
        init_i, init_h = self.bias_starts(w)
        xi = ctx.load(layer_in, self.seq("i"))
        hk = ctx.load(h, ["t", "b", "k"])
        for target, init, operand, weight, k, extent, onto in (
            (gi, init_i, xi, w.w_ih, "i", layer_in.shape[-1], False),
            (gh, init_h, hk, w.w_hh, "k", rnn.state, gh is gi),
        ):
            accumulate = onto  # LSTM/RNN: W_hh·h accumulates onto W_ih·x
            if init is not None:
                ctx.statement(self.bn, target, ["t", "b", "n"], init)
                accumulate = True
            product = call("mul", operand, ctx.load(weight, ["n", k]))
            ctx.statement(
                [*self.bn, (k, extent, True)],
                target,
                ["t", "b", "n"],
                product,
                reduce="sum",
                accumulate=accumulate,
                precision=rnn.precision,
            )
        return gi, gh

    def lstm_cell(self, h: T, c: T, gi: T, w_hr: T | None) -> None:
        """``c[t+1] = σ(i)·tanh(g) + σ(f)·c[t]``; ``h[t+1] = σ(o)·tanh(c[t+1])``, projected by
        ``W_hr`` (a contraction over the hidden units) when the LSTM has a proj_size."""
        ctx, rnn, nxt = self.ctx, self.rnn, self.next
        sig = self.sigmoid
        new_c = call(
            "add",
            call("mul", sig(self.gate(gi, 0)), call("tanh", self.gate(gi, 2))),
            call("mul", sig(self.gate(gi, 1)), ctx.load(c, ["t", "b", "j"])),
        )
        ctx.statement(self.bj, c, [nxt, "b", "j"], new_c)
        new_h = call("mul", sig(self.gate(gi, 3)), call("tanh", ctx.load(c, [nxt, "b", "j"])))
        if w_hr is None:
            ctx.statement(self.bj, h, [nxt, "b", "j"], new_h)
            return
        hc = self.local("cell_out", (rnn.steps, rnn.batch, rnn.hidden))
        ctx.statement(self.bj, hc, ["t", "b", "j"], new_h)
        product = call("mul", ctx.load(hc, ["t", "b", "j"]), ctx.load(w_hr, ["p", "j"]))
        ctx.statement(
            [*self.bh, ("j", rnn.hidden, True)],
            h,
            [nxt, "b", "p"],
            product,
            reduce="sum",
            precision=rnn.precision,
        )

    def gru_cell(self, h: T, gi: T, gh: T) -> None:
        """``n = tanh(gi_n + σ(gi_r + gh_r)·gh_n)``; ``h[t+1] = n + σ(gi_z + gh_z)·(h[t] - n)``."""
        sig, gate = self.sigmoid, self.gate
        r = sig(call("add", gate(gi, 0), gate(gh, 0)))
        z = sig(call("add", gate(gi, 1), gate(gh, 1)))
        n = call("tanh", call("add", gate(gi, 2), call("mul", r, gate(gh, 2))))
        hj = self.ctx.load(h, ["t", "b", "j"])
        new_h = call("add", n, call("mul", z, call("sub", hj, n)))
        self.ctx.statement(self.bj, h, [self.next, "b", "j"], new_h)

    def rnn_cell(self, h: T, gi: T) -> None:
        """``h[t+1] = tanh(g)`` or ``relu(g)``."""
        act = "tanh" if self.rnn.kind == "rnn_tanh" else "relu"
        self.ctx.statement(self.bj, h, [self.next, "b", "j"], call(act, self.gate(gi, 0)))

    @staticmethod
    def sigmoid(e: Expr) -> Expr:
        return call("sigmoid", e)

    def outputs(self, h: T, c: T | None, y: T, h_n: T, c_n: T | None) -> None:
        """The sequence output every step (this direction's columns of ``y[t']``), the final
        state ``h_n`` (and ``c_n``) at the last step."""
        ctx, rnn, nxt = self.ctx, self.rnn, self.next
        hp = cast(ctx.load(h, [nxt, "b", "p"]), rnn.acc, y.dtype)
        ctx.statement(self.bh, y, self.seq(Affine.of("p") + self.d * rnn.state), hp)
        ctx.statement(self.bh, h_n, [self.slot, "b", "p"], hp, guards=self.last())
        if c_n is not None and c is not None:
            cj = cast(ctx.load(c, [nxt, "b", "j"]), rnn.acc, c_n.dtype)
            ctx.statement(self.bj, c_n, [self.slot, "b", "j"], cj, guards=self.last())

    def emit(
        self, layer_in: T, y: T, params: list[T], h0: T, c0: T | None, h_n: T, c_n: T | None
    ) -> None:
        """All of this direction's statements, in order."""
        w = _Weights.of(params, self.rnn, self.slot)
        h, c = self.initial_state(h0, c0)
        gi, gh = self.pre_activations(layer_in, h, w)
        if self.rnn.kind == "lstm":
            assert c is not None
            self.lstm_cell(h, c, gi, w.w_hr)
        elif self.rnn.kind == "gru":
            self.gru_cell(h, gi, gh)
        else:
            self.rnn_cell(h, gi)
        self.outputs(h, c, y, h_n, c_n)


def _layer_output(ctx: LoweringContext, layer: int, num_layers: int, out: T) -> T:
    """Where a layer writes its output sequence: the call's output for the last layer, a
    DRAM tensor between layers otherwise (cuDNN's standard algorithm passes it so)."""
    if layer == num_layers - 1:
        return out
    name = ctx.builder.tensor(f"{ctx.node.name}_l{layer}_output", out.shape, out.dtype)
    return T(name, out.shape, out.dtype)


@lowering(
    solar_ops.lstm.default,
    solar_ops.gru.default,
    solar_ops.rnn_tanh.default,
    solar_ops.rnn_relu.default,
)
def recurrent(
    ctx: LoweringContext,
    x: T,
    hx: T | list[T],
    params: list[T],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> None:
    """One kernel per layer, looped over time, both directions in it (module docstring)."""
    lstm = ctx.op.overloadpacket.__name__ == "lstm"
    h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)  # type: ignore[index]
    assert isinstance(h0, T)
    rnn = _read_call(
        ctx, x, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional, batch_first
    )
    out, h_n = ctx.out(0), ctx.out(1)
    c_n = ctx.out(2) if lstm else None
    layer_in = x
    for layer in range(num_layers):
        y = _layer_output(ctx, layer, num_layers, out)
        ctx.begin_kernel(loops=[("t", rnn.steps)])
        for d in range(rnn.dirs):
            _Direction(ctx, rnn, layer, d).emit(layer_in, y, params, h0, c0, h_n, c_n)
        layer_in = y
