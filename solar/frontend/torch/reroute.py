"""Library calls whose CUDA implementation launches a different sequence of kernels than the
CPU/meta trace records: while tracing, each is replaced by that CUDA sequence.

``make_fx`` on fake CPU/meta tensors records what the CPU would run. For the calls below CUDA
runs something else, so recording the CPU sequence would charge kernels eager CUDA never
launches (or miss the tensor cores it uses):

==========================================  ==================================================
rerouted call                               what eager CUDA launches (so what is traced)
==========================================  ==================================================
``torch.dropout`` (``F.dropout``,           ``native_dropout``: ONE fused kernel writing the
``nn.Dropout``) in train mode, 0 < p < 1    output and the bool mask (the CPU records
                                            ``empty_like, bernoulli_, div_, mul``)
``torch._VF.lstm_cell`` (``nn.LSTMCell``)   ``mm`` (input), ``mm`` (hidden) and ONE fused
``torch._VF.gru_cell`` (``nn.GRUCell``)     cell kernel (``_thnn_fused_lstm_cell`` /
                                            ``_thnn_fused_gru_cell``): ``solar.lstm_cell`` /
                                            ``solar.gru_cell``, see :mod:`.ops.cells`
``torch._native_multi_head_attention``      the eval fast path of ``nn.MultiheadAttention``:
                                            without a mask and weights, head dim % 8 == 0:
                                            ``addmm`` (QKV), ONE fused attention kernel,
                                            ``addmm`` (out); else the math path: ``mm`` (QKV),
                                            ``_transform_bias_rescale_qkv``, ``bmm``,
                                            ``_masked_softmax`` (a mask) or a softmax in
                                            place over the scores (none), ``bmm``, a 0213
                                            copy, ``addmm``
``copy.deepcopy`` of a tensor               ONE copy kernel (``clone``): fake tensors have no
(``Tensor.__deepcopy__``)                   storage for the CPU's storage copy
``torch._transformer_encoder_layer_fwd``    the eval fast path of ``nn.TransformerEncoder
                                            Layer``: the attention above, ``add_``,
                                            ``layer_norm``, ``_addmm_activation`` (GEMM with a
                                            ReLU/GELU epilogue), ``addmm``, ``add_``,
                                            ``layer_norm``
==========================================  ==================================================

The eval fast paths themselves are taken while tracing exactly when eager would take them:
``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` refuse them under ``make_fx`` and
under any torch-function mode (solar's interception is one), so :func:`fast_path_gates` makes
those two checks answer as they would in eager. The trace runs under ``torch.no_grad()``: a
model in eval mode is traced as inference, which is when eager takes the fast path.

Each row names the attributes the library reaches the call through (patched for the trace
only, like :data:`solar.frontend.torch.fused.FUSED_OPS`) and the replacement.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import disable_fake_tensor_cache

from solar.frontend.torch.provenance import caller_source
from solar.frontend.torch.registry import UnsupportedOperatorError

# ------------------------------------------------------------------------ the cell kernels

_LIB = torch.library.Library("solar", "FRAGMENT")  # noqa: TOR901


def _lstm_cell_math(igates, hgates, cx, b_ih=None, b_hh=None):
    g = igates + hgates
    if b_ih is not None:
        g = g + b_ih
    if b_hh is not None:
        g = g + b_hh
    i, f, c, o = g.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(c)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def _gru_cell_math(igates, hgates, hx, b_ih=None, b_hh=None):
    if b_ih is not None:
        igates = igates + b_ih
    if b_hh is not None:
        hgates = hgates + b_hh
    ir, iz, in_ = igates.chunk(3, 1)
    hr, hz, hn = hgates.chunk(3, 1)
    r = torch.sigmoid(ir + hr)
    z = torch.sigmoid(iz + hz)
    n = torch.tanh(in_ + r * hn)
    return n + z * (hx - n)


_CELL_ARGS = "Tensor input_gates, Tensor hidden_gates, Tensor {state}, Tensor? input_bias=None, "
_CELL_ARGS += "Tensor? hidden_bias=None"
_LIB.define(f"lstm_cell({_CELL_ARGS.format(state='cx')}) -> (Tensor hy, Tensor cy)")
_LIB.define(f"gru_cell({_CELL_ARGS.format(state='hx')}) -> Tensor")
_LIB.impl("lstm_cell", _lstm_cell_math, "CompositeExplicitAutograd")
_LIB.impl("gru_cell", _gru_cell_math, "CompositeExplicitAutograd")


@torch.library.register_fake("solar::lstm_cell", lib=_LIB)
def _lstm_cell_fake(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    return cx.new_empty(cx.shape), cx.new_empty(cx.shape)


@torch.library.register_fake("solar::gru_cell", lib=_LIB)
def _gru_cell_fake(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    return hx.new_empty(hx.shape)


# ------------------------------------------------------------------------ the replacements


def _dropout(original: Callable, input, p, train):  # noqa: A002
    """CUDA's ``at::dropout``: the fused kernel when training with 0 < p < 1 and a non-empty
    input (``is_fused_kernel_acceptable``), else the original."""
    if train and 0 < p < 1 and input.numel() > 0:
        return torch.ops.aten.native_dropout(input, p, True)[0]
    return original(input, p, train)


def _lstm_cell(original: Callable, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """CUDA's ``LSTMCell``: two GEMMs without bias, then the fused cell kernel."""
    igates = torch.mm(input, w_ih.t())
    hgates = torch.mm(hx[0], w_hh.t())
    return tuple(torch.ops.solar.lstm_cell(igates, hgates, hx[1], b_ih, b_hh))


def _gru_cell(original: Callable, input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """CUDA's ``GRUCell``: two GEMMs without bias, then the fused cell kernel."""
    igates = torch.mm(input, w_ih.t())
    hgates = torch.mm(hx, w_hh.t())
    return torch.ops.solar.gru_cell(igates, hgates, hx, b_ih, b_hh)


def _transform_bias_rescale_qkv(qkv: torch.Tensor, bias: torch.Tensor, heads: int):
    """``torch._transform_bias_rescale_qkv`` with the fake tensor cache off: eager returns
    q, k, v as three slices of one buffer (freed when all three are), as its fake kernel does;
    a cached fake returns three separate tensors, so every call after the first of a
    ``TransformerEncoder``'s layers would be traced with another layout (and a symbolic trace,
    which the cache bypasses, with the first's)."""
    mode = getattr(qkv, "fake_mode", None)
    with disable_fake_tensor_cache(mode) if mode is not None else nullcontext():
        return torch._transform_bias_rescale_qkv(qkv, bias, heads)


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """``(B, T, H*d)`` -> ``(B, H, T, d)`` (a view)."""
    b, t, e = x.shape
    return x.view(b, t, heads, e // heads).transpose(1, 2)


def _mha(
    original: Callable,
    query,
    key,
    value,
    embed_dim,
    num_head,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    mask=None,
    need_weights=True,
    average_attn_weights=True,
    mask_type=None,
):
    """``native_multi_head_attention_cuda`` (aten/src/ATen/native/transformers/cuda/
    attention.cu), for dense batched inputs."""
    if query.is_nested or query.dim() != 3:
        return original(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                        proj_weight, proj_bias, mask, need_weights, average_attn_weights,
                        mask_type)  # fmt: skip
    b, t, d = query.shape
    head_dim = d // num_head
    same = query is key and key is value
    if same and head_dim % 8 == 0 and not need_weights and mask is None:
        qkv = F.linear(query, qkv_weight, qkv_bias)
        q, k, v = (_heads(c, num_head) for c in qkv.chunk(3, -1))
        y = F.scaled_dot_product_attention(q, k, v, None, 0.0, False)
        return F.linear(y.transpose(1, 2).reshape(b, t, d), proj_weight, proj_bias), None
    if same:
        qkv = torch.matmul(query, qkv_weight.t())
    else:
        ws = qkv_weight.chunk(3, 0)
        qkv = torch.cat([torch.matmul(x, w.t()) for x, w in zip((query, key, value), ws)], -1)
    q, k, v = _transform_bias_rescale_qkv(qkv, qkv_bias, num_head)
    scores = torch.matmul(q, k.transpose(-2, -1))
    if mask is None:  # in place, as the CUDA kernel does (_softmax_out(scores, scores))
        probs = torch.ops.aten._softmax.out(scores, -1, False, out=scores)
    else:
        probs = torch._masked_softmax(scores, mask.bool(), scores.dim() - 1, mask_type)
    ctx = torch.matmul(probs, v)
    merged = ctx.permute(0, 2, 1, 3).contiguous().view(b, t, d)  # transform_0213
    proj = F.linear(merged, proj_weight, proj_bias)
    if not need_weights:
        return proj, None
    if average_attn_weights:
        probs = probs.sum(1) / num_head
    return proj, probs


def _ffn_linear(x: torch.Tensor, weight, bias, use_gelu: bool | None) -> torch.Tensor:
    """``linear_for_ffn``: ``addmm`` (or ``_addmm_activation`` with a ReLU/GELU epilogue) on
    the ``(B*T, E)`` view."""
    b, t, e = x.shape
    flat = x.reshape(b * t, e)
    if use_gelu is None:
        out = torch.addmm(bias, flat, weight.t())
    else:
        out = torch._addmm_activation(bias, flat, weight.t(), use_gelu=use_gelu)
    return out.view(b, t, -1)


def _encoder_layer(
    original: Callable,
    src,
    embed_dim,
    num_heads,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    use_gelu,
    norm_first,
    eps,
    norm_weight_1,
    norm_bias_1,
    norm_weight_2,
    norm_bias_2,
    ffn_weight_1,
    ffn_bias_1,
    ffn_weight_2,
    ffn_bias_2,
    mask=None,
    mask_type=None,
):
    """``transformer_encoder_layer_forward`` (aten/src/ATen/native/transformers/
    transformer.cpp) for a dense batched input."""
    if src.is_nested or src.dim() != 3 or src.numel() == 0:
        return original(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                        proj_bias, use_gelu, norm_first, eps, norm_weight_1, norm_bias_1,
                        norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2,
                        ffn_bias_2, mask, mask_type)  # fmt: skip

    def norm(x, w, b):
        return F.layer_norm(x, (embed_dim,), w, b, eps)

    x = norm(src, norm_weight_1, norm_bias_1) if norm_first else src
    x = _mha(None, x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
             mask, False, True, mask_type)[0]  # fmt: skip
    x.add_(src)
    if not norm_first:
        x = norm(x, norm_weight_1, norm_bias_1)
    residual = x
    if norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    x = _ffn_linear(x, ffn_weight_1, ffn_bias_1, bool(use_gelu))
    x = _ffn_linear(x, ffn_weight_2, ffn_bias_2, None)
    x.add_(residual)
    if not norm_first:
        x = norm(x, norm_weight_2, norm_bias_2)
    return x


def _nested_from_mask(original: Callable, *args, **kwargs):
    """``nn.TransformerEncoder`` (``enable_nested_tensor=True``, eval, a padding mask) checks
    the mask to run the layers on nested tensors: the work then depends on the mask's
    values, which a static trace cannot follow."""
    raise UnsupportedOperatorError(
        "aten._nested_tensor_from_mask_left_aligned",
        caller_source(),
        "is nn.TransformerEncoder turning a padded batch into nested tensors (the work then "
        "depends on the mask's values); build it with enable_nested_tensor=False to bound the "
        "padded batch",
    )


# ------------------------------------------------------------------------ deep copies


def _deepcopy(original: Callable[..., object], tensor: torch.Tensor, memo: dict) -> object:
    """``copy.deepcopy`` of a traced tensor (transformers' looped models copy their cache
    layers): ONE copy kernel, as CUDA copies the storage device to device. A fake tensor has
    no storage for ``Tensor.__deepcopy__`` to copy, so the copy is traced as ``clone``."""
    from torch._subclasses.fake_tensor import is_fake

    if not is_fake(tensor):
        return original(tensor, memo)
    if id(tensor) not in memo:
        copy = tensor.clone()
        if tensor.requires_grad and tensor.is_leaf:
            copy = copy.detach().requires_grad_()
        memo[id(tensor)] = copy
    return memo[id(tensor)]


# ------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Rerouted:
    """A call replaced while tracing: ``replace(original, *args, **kwargs)`` runs what CUDA
    runs; ``attributes`` are where the library reaches the call (the first one's value at
    import is the original function)."""

    name: str
    attributes: tuple[tuple[object, str], ...]
    replace: Callable[..., object]
    why: str


REROUTED: list[Rerouted] = [
    Rerouted(
        "dropout",
        ((torch._VF, "dropout"),),
        _dropout,
        "CUDA runs train-mode dropout as one fused kernel (native_dropout)",
    ),
    Rerouted(
        "lstm_cell",
        ((torch._VF, "lstm_cell"),),
        _lstm_cell,
        "CUDA runs two GEMMs and one fused cell kernel",
    ),
    Rerouted(
        "gru_cell",
        ((torch._VF, "gru_cell"),),
        _gru_cell,
        "CUDA runs two GEMMs and one fused cell kernel",
    ),
    Rerouted(
        "_native_multi_head_attention",
        ((torch, "_native_multi_head_attention"),),
        _mha,
        "nn.MultiheadAttention's eval fast path as CUDA runs it",
    ),
    Rerouted(
        "_transformer_encoder_layer_fwd",
        ((torch, "_transformer_encoder_layer_fwd"),),
        _encoder_layer,
        "nn.TransformerEncoderLayer's eval fast path as CUDA runs it",
    ),
    Rerouted(
        "__deepcopy__",
        ((torch.Tensor, "__deepcopy__"),),
        _deepcopy,
        "a deep copy of a tensor is one copy kernel (fake tensors have no storage to copy)",
    ),
    Rerouted(
        "_nested_tensor_from_mask_left_aligned",
        ((torch, "_nested_tensor_from_mask_left_aligned"),),
        _nested_from_mask,
        "a data-dependent switch to nested tensors: refused with a way out",
    ),
]

_ORIGINALS: dict[str, Callable[..., object]] = {
    row.name: getattr(*row.attributes[0]) for row in REROUTED
}
_BY_FUNCTION: dict[object, Rerouted] = {_ORIGINALS[row.name]: row for row in REROUTED}


def rerouted(fn: object) -> Callable[..., object] | None:
    """The tracing replacement of torch function ``fn`` (called with its arguments), if any."""
    try:
        row = _BY_FUNCTION.get(fn)
    except TypeError:
        return None
    if row is None:
        return None
    original = _ORIGINALS[row.name]
    return lambda *args, **kwargs: row.replace(original, *args, **kwargs)


# ------------------------------------------------------------------------ the eager gates


def _fast_path_codes() -> set[object]:
    from torch.nn.modules.activation import MultiheadAttention
    from torch.nn.modules.transformer import TransformerEncoderLayer

    # not TransformerEncoder.forward: its check decides to convert a padded batch to nested
    # tensors, which cannot be traced; the batch stays dense (see the report's notes)
    return {MultiheadAttention.forward.__code__, TransformerEncoderLayer.forward.__code__}


_DEFAULT_TORCH_FUNCTIONS = {
    torch._C._disabled_torch_function_impl,
    torch.Tensor.__torch_function__.__func__,  # type: ignore[attr-defined]
}


def _eager_has_torch_function(original: Callable[[object], bool]) -> Callable[[object], bool]:
    """``has_torch_function`` as eager answers it for the fast-path checks of
    ``nn.MultiheadAttention``/``nn.TransformerEncoderLayer``: only a tensor subclass with its
    own ``__torch_function__`` counts (solar's interception mode does not). Every other caller
    gets the original."""
    codes = _fast_path_codes()

    def has_torch_function(args) -> bool:
        if sys._getframe(1).f_code not in codes:
            return original(args)
        for a in args:
            impl = getattr(type(a), "__torch_function__", None)
            impl = getattr(impl, "__func__", impl)
            if isinstance(a, torch.Tensor) and impl not in _DEFAULT_TORCH_FUNCTIONS:
                return True
        return False

    return has_torch_function


_MISSING = object()


@contextmanager
def patched(items: list[tuple[object, str, object]]) -> Iterator[None]:
    """Set ``owner.attr = value`` for each item, and put everything back afterwards."""
    saved = [(owner, attr, vars(owner).get(attr, _MISSING)) for owner, attr, _ in items]
    try:
        for owner, attr, value in items:
            setattr(owner, attr, value)
        yield
    finally:
        for owner, attr, value in saved:
            if value is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, value)


def _wrapper(row: Rerouted) -> Callable[..., object]:
    original = _ORIGINALS[row.name]

    def call(*args: object, **kwargs: object) -> object:
        return row.replace(original, *args, **kwargs)

    call.__name__ = call.__qualname__ = getattr(original, "__name__", row.name)
    return call


def reroute_items() -> list[tuple[object, str, object]]:
    """What :func:`patched` sets while tracing: every row's attributes, and the two fast-path
    gates (``torch.overrides.has_torch_function`` for the fast-path checks only, and
    ``nn.MultiheadAttention``'s make_fx check)."""
    import torch.nn.modules.activation as activation

    items: list[tuple[object, str, object]] = [
        (owner, attr, _wrapper(row)) for row in REROUTED for owner, attr in row.attributes
    ]
    items.append(
        (torch.overrides, "has_torch_function", _eager_has_torch_function(_HAS_TORCH_FUNCTION))
    )
    if hasattr(activation, "_is_make_fx_tracing"):
        items.append((activation, "_is_make_fx_tracing", lambda: False))
    return items


_HAS_TORCH_FUNCTION = torch.overrides.has_torch_function
