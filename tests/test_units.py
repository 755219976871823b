"""Compute-time lower bound: op classes on physical units, max over units, SFU emulation."""

import pytest

from solar.backend.units import SFU_EMULATION_FLOPS, NoUnitError, compute_time, rate_for
from solar.hw import load_spec

H100 = load_spec("H100")
A100 = load_spec("A100")


def test_classes_sharing_a_unit_add_up():
    n = 1e12
    t = compute_time({"tc_bf16": n, "tc_tf32": n}, H100)
    assert t.bound_by == "tensor"
    assert t.seconds == pytest.approx(n / H100.peak("tc_bf16") + n / H100.peak("tc_tf32"))


def test_different_units_overlap_max_not_sum():
    t = compute_time({"tc_bf16": 1e12, "cuda_fp32": 1e10}, H100)
    assert t.seconds == pytest.approx(
        max(1e12 / H100.peak("tc_bf16"), 1e10 / H100.peak("cuda_fp32"))
    )


def test_sfu_work_is_balanced_with_fma_emulation():
    n = 1e9
    t = compute_time({"sfu": n}, H100)
    t_sfu = n / H100.peak("sfu")
    t_emul = n * SFU_EMULATION_FLOPS / H100.peak("cuda_fp32")
    # optimum of max((1-f) t_sfu, f t_emul): f = t_sfu / (t_sfu + t_emul)
    expected = t_sfu * t_emul / (t_sfu + t_emul)
    assert t.seconds == pytest.approx(expected, rel=1e-12)
    assert t.seconds < t_sfu


def test_fallback_and_missing_units():
    assert rate_for("tc_fp8", A100) == "tc_fp16"  # A100 has no fp8 tensor cores
    assert rate_for("tc_fp64", H100) == "tc_fp64"
    with pytest.raises(NoUnitError, match="tc_nope"):
        compute_time({"tc_nope": 1}, H100)


def test_empty_is_zero():
    assert compute_time({}, H100).seconds == 0.0
