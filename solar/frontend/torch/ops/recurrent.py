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

from collections.abc import Sequence

import torch

from solar.frontend.torch import fused  # noqa: F401  (defines torch.ops.solar.*)
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.common import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine, AffineLike
from solar.ir.program import Guard
from solar.ir.scalar import Expr, call

solar_ops = torch.ops.solar
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


class _Layer:
    """Emits the statements of one layer (one kernel, open in the builder) for one
    direction."""

    def __init__(self, ctx: LoweringContext, steps: int, batch_first: bool) -> None:
        self.ctx = ctx
        self.steps = steps
        self.batch_first = batch_first

    def emit(
        self,
        dims: Sequence[tuple],
        out: T,
        index: Sequence[AffineLike],
        expr: Expr,
        *,
        reduce: str | None = None,
        accumulate: bool = False,
        precision: str | None = None,
        guards: Sequence[Guard] = (),
    ) -> None:
        self.ctx.statement(
            dims,
            out,
            index,
            expr,
            reduce=reduce,
            accumulate=accumulate,
            precision=precision,
            guards=guards,
        )

    def seq(self, step: Affine, col: AffineLike) -> list[AffineLike]:
        """Index of ``[step, b, col]`` in a sequence tensor (``[b, step, col]`` batch first)."""
        return ["b", step, col] if self.batch_first else [step, "b", col]

    def first(self) -> list[Guard]:
        return [Guard(Affine.of("t"), 0, 1)]

    def last(self) -> list[Guard]:
        return [Guard(Affine.of("t"), self.steps - 1, self.steps)]


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
    kind = ctx.op.overloadpacket.__name__
    if train and dropout and num_layers > 1:
        ctx.fail(
            f"with dropout={dropout} in training mode is random; call .eval() (or dropout=0) "
            "before tracing"
        )
    lstm = kind == "lstm"
    h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)  # type: ignore[index]
    assert isinstance(h0, T)
    if x.ndim != 3 or h0.ndim != 3:
        ctx.fail(f"needs a 3-dim input and state, got {x.shape} and {h0.shape}")
    dirs = 2 if bidirectional else 1
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    hidden = c0.shape[-1] if c0 is not None else h0.shape[-1]
    state = h0.shape[-1]  # proj_size for a projected LSTM, else hidden
    proj = lstm and state != hidden
    per = 2 + 2 * bool(has_biases) + int(proj)
    if len(params) != num_layers * dirs * per:
        ctx.fail(f"got {len(params)} weights; expected {num_layers * dirs * per}")
    if steps == 0 or batch == 0:
        ctx.fail("on an empty sequence is not supported")
    out, h_n = ctx.out(0), ctx.out(1)
    c_n = ctx.out(2) if lstm else None
    acc = acc_dtype(out.dtype)
    precision = ctx.policy.conv(out.dtype)  # cuDNN RNNs follow torch.backends.cudnn.allow_tf32
    g_rows = GATES[kind] * hidden
    layer_in = x
    for layer in range(num_layers):
        if layer == num_layers - 1:
            y = out
        else:
            name = ctx.builder.tensor(f"{ctx.node.name}_l{layer}_output", out.shape, out.dtype)
            y = T(name, out.shape, out.dtype)
        ctx.begin_kernel(loops=[("t", steps)])
        em = _Layer(ctx, steps, batch_first)
        for d in range(dirs):
            w = params[(layer * dirs + d) * per : (layer * dirs + d + 1) * per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if proj else None
            step = Affine.of("t") if d == 0 else Affine.of("t") * -1 + (steps - 1)
            tag = f"l{layer}{'_reverse' if d else ''}"
            sl = layer * dirs + d  # slot in h0/c0/h_n/c_n
            next_ = Affine.of("t") + 1

            def local(stem: str, shape: tuple[int, ...], tag: str = tag) -> T:
                return ctx.local(f"{tag}_{stem}", shape, acc)

            h = local("h", (steps + 1, batch, state))  # h[t] is the state entering step t
            bh, bj, bn = (
                [("b", batch), ("p", state)],
                [("b", batch), ("j", hidden)],
                [
                    ("b", batch),
                    ("n", g_rows),
                ],
            )
            # -- t == 0: the initial state and the combined bias
            h0_ = ctx.load(h0, [sl, "b", "p"], acc)
            em.emit(bh, h, [0, "b", "p"], h0_, guards=em.first())
            c = None
            if c0 is not None:
                c = local("c", (steps + 1, batch, hidden))
                c0_ = ctx.load(c0, [sl, "b", "j"], acc)
                em.emit(bj, c, [0, "b", "j"], c0_, guards=em.first())
            gi = local("gates", (steps, batch, g_rows))
            gh = local("hidden_gates", (steps, batch, g_rows)) if kind == "gru" else gi
            init_i = init_h = None
            if b_ih is not None and b_hh is not None:
                if kind == "gru":  # r, z, n need W_hn·h + b_hn apart: two accumulators
                    init_i, init_h = ctx.load(b_ih, ["n"], acc), ctx.load(b_hh, ["n"], acc)
                else:
                    bias = local("bias", (g_rows,))
                    both = call("add", ctx.load(b_ih, ["n"], acc), ctx.load(b_hh, ["n"], acc))
                    em.emit([("n", g_rows)], bias, ["n"], both, guards=em.first())
                    init_i = ctx.load(bias, ["n"])
            # -- gate pre-activations
            xi = ctx.load(layer_in, em.seq(step, "i"))
            hk = ctx.load(h, ["t", "b", "k"])
            for target, init, operand, weight, k, extent, onto in (
                (gi, init_i, xi, w_ih, "i", layer_in.shape[-1], False),
                (gh, init_h, hk, w_hh, "k", state, gh is gi),
            ):
                accumulate = onto  # LSTM/RNN: W_hh·h accumulates onto W_ih·x
                if init is not None:
                    em.emit(bn, target, ["t", "b", "n"], init)
                    accumulate = True
                product = call("mul", operand, ctx.load(weight, ["n", k]))
                em.emit(
                    [*bn, (k, extent, True)],
                    target,
                    ["t", "b", "n"],
                    product,
                    reduce="sum",
                    accumulate=accumulate,
                    precision=precision,
                )

            # -- the cell
            def gate(g: T, row: int) -> Expr:
                return ctx.load(g, ["t", "b", Affine.of("j") + row * hidden])

            def sigmoid(e: Expr) -> Expr:
                return call("sigmoid", e)

            if lstm:
                assert c is not None
                cj = ctx.load(c, ["t", "b", "j"])
                new_c = call(
                    "add",
                    call("mul", sigmoid(gate(gi, 0)), call("tanh", gate(gi, 2))),
                    call("mul", sigmoid(gate(gi, 1)), cj),
                )
                em.emit(bj, c, [next_, "b", "j"], new_c)
                new_h = call(
                    "mul", sigmoid(gate(gi, 3)), call("tanh", ctx.load(c, [next_, "b", "j"]))
                )
                if w_hr is None:
                    em.emit(bj, h, [next_, "b", "j"], new_h)
                else:
                    hc = local("cell_out", (steps, batch, hidden))
                    em.emit(bj, hc, ["t", "b", "j"], new_h)
                    product = call("mul", ctx.load(hc, ["t", "b", "j"]), ctx.load(w_hr, ["p", "j"]))
                    em.emit(
                        [*bh, ("j", hidden, True)],
                        h,
                        [next_, "b", "p"],
                        product,
                        reduce="sum",
                        precision=precision,
                    )
            elif kind == "gru":
                r = sigmoid(call("add", gate(gi, 0), gate(gh, 0)))
                z = sigmoid(call("add", gate(gi, 1), gate(gh, 1)))
                n = call("tanh", call("add", gate(gi, 2), call("mul", r, gate(gh, 2))))
                hj = ctx.load(h, ["t", "b", "j"])
                new_h = call("add", n, call("mul", z, call("sub", hj, n)))
                em.emit(bj, h, [next_, "b", "j"], new_h)
            else:
                act = "tanh" if kind == "rnn_tanh" else "relu"
                em.emit(bj, h, [next_, "b", "j"], call(act, gate(gi, 0)))
            # -- outputs: the sequence every step, the final state at the last step
            hp = cast(ctx.load(h, [next_, "b", "p"]), acc, out.dtype)
            em.emit(bh, y, em.seq(step, Affine.of("p") + d * state), hp)
            em.emit(bh, h_n, [sl, "b", "p"], hp, guards=em.last())
            if c_n is not None and c is not None:
                cj = cast(ctx.load(c, [next_, "b", "j"]), acc, c_n.dtype)
                em.emit(bj, c_n, [sl, "b", "j"], cj, guards=em.last())
        layer_in = y
