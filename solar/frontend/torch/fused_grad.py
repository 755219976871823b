"""Backward of the library calls :mod:`.fused` keeps as one node, for training steps.

Eager CUDA differentiates ``F.scaled_dot_product_attention`` with ONE attention-backward op
(``_scaled_dot_product_flash_attention_backward``, ``_efficient_attention_backward`` or
cuDNN's), and ``torch.rms_norm`` with one ``_fused_rms_norm_backward``. While a training step is
traced the forward calls are ``torch.ops.solar.sdpa`` / ``.rms_norm`` (see :mod:`.fused`); this
module gives them autograd formulas whose backward is one ``torch.ops.solar.sdpa_backward`` /
``.rms_norm_backward`` node (lowered in :mod:`.ops.fused_backward`). Their eager kernels
differentiate the original functions with autograd, so a traced graph still runs on real
tensors. The recurrent ops (``solar.lstm``, ...) have no backward here: a step through them is
refused by autograd.
"""

from __future__ import annotations

import torch

from solar.frontend.torch.fused import FUSED_OPS, NAMESPACE

_BY_NAME = {row.name: row for row in FUSED_OPS}


def _sdpa_backward_eager(
    grad, query, key, value, out, attn_mask, dropout_p, is_causal, scale, enable_gqa
):  # noqa: E501
    fn = _BY_NAME["sdpa"].function
    with torch.enable_grad():
        q, k, v = (t.detach().requires_grad_(True) for t in (query, key, value))
        o = fn(q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        return tuple(torch.autograd.grad(o, (q, k, v), grad))


def _sdpa_backward_fake(
    grad, query, key, value, out, attn_mask, dropout_p, is_causal, scale, enable_gqa
):  # noqa: E501
    return torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)


def _rms_norm_backward_eager(grad, input, normalized_shape, weight, eps):  # noqa: A002
    fn = _BY_NAME["rms_norm"].function
    with torch.enable_grad():
        x = input.detach().requires_grad_(True)
        w = weight.detach().requires_grad_(True) if weight is not None else None
        y = fn(x, normalized_shape, w, eps)
        wanted = (x, w) if w is not None else (x,)
        grads = torch.autograd.grad(y, wanted, grad)
    gw = grads[1] if w is not None else input.new_empty((0,))
    return grads[0], gw


def _rms_norm_backward_fake(grad, input, normalized_shape, weight, eps):  # noqa: A002
    gw = torch.empty_like(weight) if weight is not None else input.new_empty((0,))
    return torch.empty_like(input), gw


def _register() -> torch.library.Library:
    lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # noqa: TOR901
    lib.define(
        "sdpa_backward(Tensor grad, Tensor query, Tensor key, Tensor value, Tensor out, "
        "Tensor? attn_mask, float dropout_p, bool is_causal, float? scale, bool enable_gqa) "
        "-> (Tensor, Tensor, Tensor)"
    )
    lib.define(
        "rms_norm_backward(Tensor grad, Tensor input, SymInt[] normalized_shape, Tensor? weight, "
        "float? eps) -> (Tensor, Tensor)"
    )
    for name, eager, fake in (
        ("sdpa_backward", _sdpa_backward_eager, _sdpa_backward_fake),
        ("rms_norm_backward", _rms_norm_backward_eager, _rms_norm_backward_fake),
    ):
        lib.impl(name, eager, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{NAMESPACE}::{name}", fake, lib=lib)

    def sdpa_setup(ctx, inputs, output, keyword_only_inputs=None):
        q, k, v, mask, dropout_p, is_causal = (*inputs, None, 0.0, False)[:6]
        ctx.save_for_backward(q, k, v, output, mask)
        kw = keyword_only_inputs or {}
        ctx.args = (dropout_p, is_causal, kw.get("scale"), bool(kw.get("enable_gqa", False)))

    def sdpa_backward(ctx, grad):
        q, k, v, out, mask = ctx.saved_tensors
        dropout_p, is_causal, scale, enable_gqa = ctx.args
        ops = getattr(torch.ops, NAMESPACE)
        dq, dk, dv = ops.sdpa_backward(
            grad, q, k, v, out, mask, dropout_p, is_causal, scale, enable_gqa
        )
        return (
            (dq, dk, dv, None, None, None)[: ctx.n_inputs]
            if hasattr(ctx, "n_inputs")
            else (
                dq,
                dk,
                dv,
                None,
                None,
                None,
            )
        )

    def rms_setup(ctx, inputs, output):
        x, shape, weight, eps = (*inputs, None, None)[:4]
        ctx.save_for_backward(x, weight)
        ctx.args = (list(shape), eps)

    def rms_backward(ctx, grad):
        x, weight = ctx.saved_tensors
        shape, eps = ctx.args
        gi, gw = getattr(torch.ops, NAMESPACE).rms_norm_backward(grad, x, shape, weight, eps)
        return gi, None, (gw if weight is not None else None), None

    torch.library.register_autograd(
        f"{NAMESPACE}::sdpa", sdpa_backward, setup_context=sdpa_setup, lib=lib
    )  # noqa: E501
    torch.library.register_autograd(
        f"{NAMESPACE}::rms_norm", rms_backward, setup_context=rms_setup, lib=lib
    )  # noqa: E501
    return lib


_LIBRARY = _register()
