"""Loop-nest definitions of aten operators, one module per family.

Importing this package registers every lowering in :data:`solar.frontend.torch.LOWERINGS`.
To add an operator, add a row or a ``@lowering(torch.ops.aten.<op>.<overload>)`` function to
the family it belongs to (or to your own module): it receives the lowering context and the
operator's schema arguments, and emits statements with ``ctx.statement``.

- ``elementwise``: pointwise arithmetic, activations, comparisons (a table), triu/tril
- ``creation``: full/zeros/ones/fill, arange, empty, scalar_tensor
- ``matmul``: mm, bmm, mv, dot, vdot, addmm, baddbmm, addmv, addbmm
- ``reduction``: sum, mean, prod, amax/amin, max/min (full and ``dim``), argmax/argmin
- ``logical_reduction``: any, all (full, dim, dims)
- ``softmax``: _softmax, _log_softmax
- ``normalization``: layer/batch (native, cuDNN, legit variants)/group norm, _fused_rms_norm
- ``activation``: celu, softshrink, hardshrink, threshold, prelu, rrelu (eval), log_sigmoid,
  glu (more rows of the elementwise table)
- ``norms``: logsumexp, linalg_vector_norm / norm (every p), ``_cdist_forward``,
  ``_weight_norm_interface`` and its backward
- ``loss``: mse, huber, smooth_l1, soft_margin, binary_cross_entropy (with logits)
- ``shape``: flip, roll, repeat, rot90, constant/reflection/replication padding
- ``conv``: convolution (direct and transposed, 1-3D, groups, bias)
- ``pool``: max/avg pooling (2D/3D, with indices), adaptive avg/max pooling
- ``views``: views (generic, free), clone/_to_copy/copy_, cat, stack
- ``view_copies``: the ``<view>_copy`` forms (one copy kernel each), ``as_strided_`` (free),
  ``as_strided_scatter``
- ``grid_sample``: ``grid_sampler_2d``/``3d`` (bilinear, nearest; zeros, border, reflection)
  and ``affine_grid_generator``
- ``grid_sample_backward``: ``grid_sampler_2d_backward`` (input gradient scattered to the
  corners, grid gradient from the corner differences)
- ``im2col``: ``im2col`` (``F.unfold``) and ``col2im`` (``F.fold``)
- ``attention``: ``solar.sdpa`` (intercepted ``scaled_dot_product_attention``, one kernel)
- ``recurrent``: ``solar.lstm``/``gru``/``rnn_tanh``/``rnn_relu`` (intercepted cuDNN RNNs)
- ``indexing``: gathers and scatters (embedding, index_select, gather, take,
  index.Tensor, scatter*, index_add/copy/fill; index_put's integer indices)
- ``nll``: nll_loss_forward, nll_loss2d_forward
- ``scan``: cumsum, cumprod, cummax, cummin, logcumsumexp
- ``search``: ``searchsorted``/``bucketize`` (a branchless binary search, ⌈log2(n+1)⌉ steps)
- ``dynamic``: data-dependent sizes (nonzero, boolean-mask indexing and writes (index_put
  with masks), masked_select, unique,
  bincount, histc, ``.item()``) at the size the trace took (``solar.frontend.torch.sizes``)
- ``grouped``: ``_grouped_mm`` (mixture-of-experts grouped GEMM, split by the routing)
- ``sort``: sort, topk, kthvalue, median, nanmedian (extern routines)
- ``random``: rand/randn/randint (and ``_like``), normal, bernoulli, uniform_/normal_/random_/
  exponential_, randperm, native_dropout (train-mode dropout as CUDA runs it)
- ``cells``: ``solar.lstm_cell``/``gru_cell`` (intercepted ``nn.LSTMCell``/``nn.GRUCell``: two
  GEMMs and CUDA's fused cell kernel)
- ``transformer``: the ``nn.MultiheadAttention``/``nn.TransformerEncoderLayer`` eval fast
  path (``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``) and
  ``_addmm_activation``, ``_transform_bias_rescale_qkv``
- ``backward``: the backward operators of a training step (``*_backward``, softmax/layer/batch
  norm backward, embedding/nll/max-pool gradient scatters, ``convolution_backward``)
- ``slice_scatter``: ``slice_backward``/``select_backward`` (zeros, the gradient into the
  slice) and ``slice_scatter``/``select_scatter``, each element written once
- ``activation_backward``: the pointwise backward of the other activations (elu, leaky_relu,
  hardtanh, mish, softplus, hardswish, hardsigmoid, log_sigmoid, shrinks) and losses (bce,
  huber, smooth_l1; ``sgn``)
- ``pool_backward``: ``avg_pool{2,3}d_backward``, ``_adaptive_avg_pool{2,3}d_backward`` (the
  forward's windows, each tap adding its share into the input position it read)
- ``cdist_backward``: ``_cdist_backward`` (every p, ATen's per-term formulas)
- ``embedding_bag_backward``: ``_embedding_bag_backward`` (sum, mean, max: scatter-adds into
  zeros) and ``_embedding_bag_per_sample_weights_backward``; ``bags``: embedding bags
  (sum, mean, max), regular ones as affine nests, with explicit offsets each id's bag
  recomputed from the offsets
- ``unique_dim``: ``unique(dim=)`` (stable sorts per slice element, least significant first;
  a data-dependent count of distinct slices)
- ``masked``: ``masked_scatter`` and ``masked_scatter_backward`` (the mask's prefix count)
- ``pdist``: ``_pdist_forward``/``_pdist_backward`` (the pairs ``j > i`` in a guarded nest,
  packed and unpacked through kernel-locals by index arithmetic)
- ``pad_backward``: ``reflection_pad{1,2,3}d_backward``, ``replication_pad{1,2,3}d_backward``
  (the forward's boxes, each output gradient added into its source)
- ``view_backward``: ``diagonal_backward`` (zeros off the diagonal, each element written
  once) and ``unfold_backward`` (overlapping windows added back)
- ``group_norm_backward``: ``native_group_norm_backward`` (one kernel)
- ``fused_backward``: ``solar.sdpa_backward`` (FlashAttention-style) and
  ``solar.rms_norm_backward``, the backward of the intercepted fused calls
- ``spectral``: ``_fft_r2c``/``_fft_c2r``/``_fft_c2c`` (``torch.fft``), one cuFFT kernel each
- ``linalg``: ``torch.linalg`` factorizations and solves, one cuSOLVER/cuBLAS kernel each
- ``complex``: complex construction and parts (``polar``, ``complex``, ``real``/``imag``...)
- ``bits``: shifts (``>>``, ``<<``, ``bitwise_{right,left}_shift``) and ``logaddexp``/``2``
- ``view_inplace``: in-place view operators (``unsqueeze_``, ``squeeze_``, ``transpose_``...)
- ``upsample``: ``upsample_nearest{1,2,3}d``, ``_upsample_nearest_exact{1,2,3}d``,
  ``upsample_linear1d``/``bilinear2d``/``trilinear3d``/``bicubic2d`` and their backward
  (``resample``: PyTorch's source-index arithmetic per dim, split into affine classes)
- ``optim``: ``_foreach_*`` and fused optimizers, one kernel per ``multi_tensor_apply`` launch
- ``sparse``: ``solar.sparse_mm``, a sparse x dense product in one kernel (sparse tensors are
  traced as their stored elements: ``solar.frontend.torch.sparse``)
"""

from solar.frontend.torch.ops import (  # noqa: F401  (registration side effects)
    activation,
    activation_backward,
    attention,
    backward,
    bags,
    bits,
    cdist_backward,
    cells,
    complex,  # imports elementwise first: its abs (complex operands) wins
    conv,
    creation,
    detection,
    dynamic,
    elementwise,
    embedding_bag_backward,
    fused_backward,
    grid_sample,
    grid_sample_backward,
    group_norm_backward,
    grouped,
    im2col,
    indexing,
    linalg,
    logical_reduction,
    loss,
    masked,
    matmul,
    nll,
    normalization,
    norms,
    optim,
    pad_backward,
    pdist,
    pool,
    pool_backward,
    random,
    recurrent,
    reduction,
    scan,
    search,
    shape,
    slice_scatter,
    softmax,
    sort,
    sparse,
    spectral,
    transformer,
    unique_dim,
    upsample,
    view_backward,
    view_copies,
    view_inplace,
    views,
)
