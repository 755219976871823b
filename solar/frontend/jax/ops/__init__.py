"""Loop-nest definitions of jaxpr primitives, one module per family.

Importing this package registers every lowering in :data:`solar.frontend.jax.LOWERINGS`. To
add a primitive, add a row or a ``@lowering("<primitive>", kind=...)`` function to the family it
belongs to (or to your own module): it receives the lowering context, the operands and the
equation's parameters, and emits statements with ``ctx.statement``.

- ``elementwise``: arithmetic, transcendental, comparison and logical primitives (a table),
  select_n, clamp, integer_pow, round, convert_element_type, reduce_precision, identities
- ``contraction``: dot_general, conv_general_dilated (and the bias epilogue of a dot)
- ``reduction``: reduce_*, argmax/argmin, cumsum/cumprod/cummax/cummin/cumlogsumexp,
  reduce_window_* (pooling), reduce/reduce_window with a simple body
- ``shape``: views (broadcast_in_dim, reshape, transpose, squeeze, expand_dims, slice, split,
  dynamic_slice), rev, pad, concatenate, iota, dynamic_update_slice, gather/scatter with known
  indices
- ``control``: jit/pjit, closed_call, remat, custom_jvp_call, custom_vjp_call (inlined), scan,
  while, cond
- ``dims``: dim_as_value (a symbolic size read as a value), the primitives that use known
  values only as values
- ``complex``: complex, real, imag, conj, abs of complex arrays
- ``spectral``: fft (jnp.fft), one cuFFT kernel
- ``linalg``: lu, cholesky, triangular_solve, qr, eigh, svd, lu_pivots_to_permutation,
  custom_linear_solve
- ``random``: PRNG keys and random bits (threefry2x32, random_bits, random_wrap, ...)
- ``unsupported``: primitives with a stated reason (sort, top_k, random bits, ...)
"""

from solar.frontend.jax.ops import (  # noqa: F401  (registration side effects)
    complex,  # imports elementwise first: its abs (complex operands) wins
    contraction,
    control,
    dims,
    elementwise,
    linalg,
    random,
    reduction,
    shape,
    spectral,
    unsupported,
)
