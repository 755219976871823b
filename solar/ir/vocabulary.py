"""The IR's shared vocabulary as enums: op classes, einsum-graph node kinds, tensor roles.

Each is a :class:`~enum.StrEnum`: a member *is* its string (``OpClass.TC_BF16 == "tc_bf16"``,
the same hash, the same JSON), so records, dict keys and files keep the strings they always
had, while code asks the enum what a value means (``OpClass(k).multiply_adds``) instead of
testing spellings (``k.startswith(("tc_", "cuda_"))``).
"""

from __future__ import annotations

from enum import StrEnum


class Word(StrEnum):
    """A member of the vocabulary: its string, also when printed inside a dict or a list
    (``{'cuda_fp32': 32768}``, as a bound's ``flops`` always printed)."""

    def __repr__(self) -> str:
        return repr(self.value)


class OpClass(Word):
    """What an operation runs as: tensor-core matrix flops (``tc_*``), CUDA-core flops
    (``cuda_*``) of a dtype, or special-function instructions (``sfu``)."""

    TC_FP64 = "tc_fp64"
    TC_TF32 = "tc_tf32"
    TC_BF16 = "tc_bf16"
    TC_FP16 = "tc_fp16"
    TC_FP8 = "tc_fp8"
    TC_INT8 = "tc_int8"
    TC_FP4 = "tc_fp4"
    CUDA_FP64 = "cuda_fp64"
    CUDA_FP32 = "cuda_fp32"
    CUDA_FP16 = "cuda_fp16"
    CUDA_BF16 = "cuda_bf16"
    CUDA_INT32 = "cuda_int32"
    SFU = "sfu"

    @property
    def tensor_core(self) -> bool:
        """Matrix flops on the tensor cores."""
        return self.value.startswith("tc_")

    @property
    def multiply_adds(self) -> bool:
        """Counted as flops (an FMA is two): tensor-core and CUDA-core classes, not the SFU."""
        return self is not OpClass.SFU


class OpKind(Word):
    """The einsum-graph node kind of a statement (:func:`solar.ir.cost.statement_kind`)."""

    CONTRACTION = "contraction"
    REDUCTION = "reduction"
    MAP = "map"  # some arithmetic
    COPY = "copy"  # loads and casts only
    GATHER = "gather"
    SCATTER = "scatter"
    SCAN = "scan"
    EXTERN = "extern"


class Role(Word):
    """What a tensor is to the program: graph inputs, weights and constants live in DRAM
    before it runs, outputs after; intermediates move between kernels; locals stay inside
    one kernel."""

    INPUT = "input"
    WEIGHT = "weight"
    CONSTANT = "constant"
    OUTPUT = "output"
    INTERMEDIATE = "intermediate"
    LOCAL = "local"

    @property
    def resident(self) -> bool:
        """In DRAM before the program runs (an input, weight or constant)."""
        return self in (Role.INPUT, Role.WEIGHT, Role.CONSTANT)
