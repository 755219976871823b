"""Element types of the IR: names, byte sizes and kinds. Framework-neutral strings."""

from __future__ import annotations

ITEMSIZE: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float4_e2m1fn_x2": 1,  # two FP4 (e2m1) values packed in one byte: an element is a pair
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,  # a float32 real and imaginary part (issue 24)
    "complex128": 16,
    "uint32": 4,  # JAX PRNG keys and random bits
}

FLOAT = frozenset({"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"})
FLOAT |= {"float4_e2m1fn_x2"}  # packed FP4 pairs


# Complex tensors hold their real and imaginary parts in one element; arithmetic on them is
# counted in real operations (solar.ir.ops.COMPLEX_COST). uint32 (JAX's PRNG keys and random
# bits) is computed in int64 by the torch interpreter (torch's uint32 has no arithmetic),
# wrapped to 32 bits when written. The complex dtypes and the real dtype of their parts:
COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}


def is_complex(dtype: str) -> bool:
    return dtype in COMPLEX_PARTS


def real_part_dtype(dtype: str) -> str:
    """The dtype of ``real(x)``/``abs(x)`` for ``x`` of ``dtype`` (``dtype`` itself if real)."""
    return COMPLEX_PARTS.get(dtype, dtype)


def complex_dtype(dtype: str) -> str:
    """The complex dtype whose parts are ``dtype`` (complex64 for float32 and narrower)."""
    return "complex128" if dtype in ("float64", "complex128") else "complex64"


def itemsize(dtype: str) -> int:
    try:
        return ITEMSIZE[dtype]
    except KeyError:
        raise ValueError(
            f"dtype {dtype!r} is not expressible in the IR; supported: {', '.join(ITEMSIZE)}"
        ) from None


def is_float(dtype: str) -> bool:
    return dtype in FLOAT


def from_torch(dtype) -> str:
    """IR name of a torch dtype (``torch.float32`` -> ``"float32"``), from its printed name
    (torch is not imported; the reverse map is :mod:`solar.interp.torch.dtypes`)."""
    name = str(dtype).removeprefix("torch.")
    itemsize(name)
    return name
