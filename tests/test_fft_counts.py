"""FFT operation counts (solar/ir/fft_counts.py) against a second oracle: an instrumented
numpy FFT (tests/fft_reference.py, tests/fft_reference_real.py) that runs the very plan the
dynamic program chose for n, recursively, counting every real add and multiply it performs, and
whose output must equal numpy.fft to rounding; plus hand-derived counts."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from fft_reference import add, fft, mul_real, mul_twiddle, sub
from fft_reference_real import real_exact, rfft

from solar.ir import fft_counts as fc
from solar.ir.extern_spectral import complex_fft_flops, real_fft_flops

# ------------------------------------------------------------------------- the tests
SAMPLE = sorted(
    set(range(1, 65))
    | {67, 71, 73, 81, 96, 97, 100, 105, 120, 121, 125, 127, 128, 135, 143, 144, 150}
    | {162, 169, 180, 191, 193, 210, 225, 240, 243, 251, 256, 289, 300, 343, 359, 360, 384, 480}
    | {501}
)


def rows(n: int, seed: int = 0) -> np.ndarray:
    r = np.random.default_rng(seed + n)
    return r.standard_normal((2, n)) + 1j * r.standard_normal((2, n))


@pytest.mark.parametrize("n", SAMPLE)
def test_instrumented_plan_matches_numpy_and_count(n):
    x = rows(n)
    got, flops = fft(x)
    np.testing.assert_allclose(got, np.fft.fft(x), rtol=1e-9, atol=1e-9 * n)
    assert flops == fc.complex_dft_flops(n) == complex_fft_flops(n), fc.complex_plan(n)


def test_sample_covers_every_kind():
    kinds = {fc.complex_plan(n).kind for n in SAMPLE}
    assert kinds == {
        "split_radix",
        "winograd",
        "winograd_table",
        "direct",
        "cooley_tukey",
        "prime_factor",
        "rader",
        "bluestein",
    }


@pytest.mark.parametrize(
    "plan",
    [fc.Plan("rader", 5, 0, (4,)), fc.Plan("direct", 5, 0), fc.Plan("bluestein", 7, 0, (16,))]
    + [fc.Plan("direct", 7, 0), fc.Plan("rader", 7, 0, (6,)), fc.Plan("rader", 11, 0, (10,))]
    + [fc.Plan("cooley_tukey", 9, 0, (3, 3)), fc.Plan("direct", 9, 0)]
    + [fc.Plan("cooley_tukey", 12, 0, (2, 6)), fc.Plan("cooley_tukey", 16, 0, (4, 4))]
    + [fc.Plan("cooley_tukey", 32, 0, (2, 16)), fc.Plan("cooley_tukey", 24, 0, (4, 6))],
)
def test_losing_plans_cost_what_the_dp_charged_them(plan):
    """Plans the DP rejected also run correctly, at the count the DP compared them at."""
    x = rows(plan.n, 7)
    got, flops = fft(x, plan)
    np.testing.assert_allclose(got, np.fft.fft(x), rtol=1e-9, atol=1e-9)
    n, k = plan.n, plan.kind
    if k == "cooley_tukey":
        n1, n2 = plan.parts
        want = n2 * fc.complex_dft_flops(n1) + n1 * fc.complex_dft_flops(n2)
        want += fc.ct_twiddle_flops(n1, n2)
    else:
        want = {
            "rader": 2 * fc.complex_dft_flops(n - 1) + 6 * n - 10,
            "direct": 2 * (n * n - 1),
            "bluestein": 2 * fc.split_radix_flops(16) + 6 * 16 + 12 * (n - 1),
        }[k]
    assert flops == want >= fc.complex_dft_flops(n)


def test_hand_derived_counts():
    # n = 3 (Winograd): t = x1+x2, X0 = x0+t, x1-x2, s = X0 + m1, X1,2 = s +- m2: 6 complex
    # adds (12) + m1 = (cos u - 1) t, m2 = -i sin u (x1-x2): 2 real x complex (4) = 16
    assert fc.complex_dft_flops(3) == 16
    # n = 5 (Winograd): 17 complex adds (34) + 5 real/imaginary-constant products (10) = 44
    assert fc.complex_dft_flops(5) == 44
    # n = 6 = 2 x 3, Good-Thomas: 3 two-point DFTs (3 x 4) + 2 three-point (2 x 16) = 44
    assert fc.complex_dft_flops(6) == 44
    # n = 12 = 3 x 4, Good-Thomas: 4 x 16 + 3 x 16 = 112 (Cooley-Tukey 2 x 6: 6x4 + 2x44 +
    # twiddles w12^k1, k1 = 1..5: k1 = 3 is -i (0), the other four 6 each = 24 -> 136)
    assert fc.complex_dft_flops(12) == 112
    assert fc.ct_twiddle_flops(2, 6) == 24
    # n = 15 = 3 x 5, Good-Thomas: 5 x 16 + 3 x 44 = 212
    assert fc.complex_dft_flops(15) == 212
    # n = 7, Winograd (winograd79): complex adds t_j, d_j 6; S = sum t_j 2; X0 1; s0 = X0 -
    # 7/6 S 1; cosine part 3 pre + 6 post; sine part 3 pre + 2 (alternating sum) + 6 post;
    # X_k, X_{7-k} 6: 36 complex adds (72) + 8 products by real or imaginary constants (16) = 88.
    # The direct DFT with conjugate pairs, h = 3: t_j, d_j 6 complex adds (12); X0 3 adds (6);
    # per k = 1..3: 3 cos-products (6) + 3 adds (6), 3 sin-products (6) + 2 adds (4), X_k and
    # X_{7-k} (4) = 26; total 12 + 6 + 78 = 96 (FFTW's n1_7: 60 adds + 36 multiplies);
    # Rader: 2 C(6) + 6 x 7 - 10 = 120
    assert fc.complex_dft_flops(7) == 88
    assert fc.real_dft_flops(7) == 88 // 2 - 6  # real: 30 adds + 8 multiplies
    # n = 11, the tabulated Winograd module: 40 multiplies + 168 adds = 208 (direct: h = 5,
    # 8h^2 + 8h = 240; Rader 2 C(10) + 56 = 2 x 108 + 56 = 272)
    assert fc.complex_dft_flops(11) == 208
    # n = 13, the tabulated module: 40 + 188 = 228 (Rader: 2 C(12) + 6 x 13 - 10 = 292;
    # direct 2 (169 - 1) = 336); n = 17: 70 + 314 = 384; n = 19: 76 + 372 = 448
    assert fc.complex_dft_flops(13) == 228
    assert (fc.complex_dft_flops(17), fc.complex_dft_flops(19)) == (384, 448)
    # n = 32, split radix 4 x 32 x 5 - 6 x 32 + 8 = 456
    assert fc.complex_dft_flops(32) == 456
    # n = 9, Winograd (winograd79): complex adds t_j, d_j (j = 1..4) 8; S = t1 + t2 + t4 2;
    # D = d1 - d2 + d4 2; y0 = x0 + t3 1; X0 1; e = X0 - 3/2 S 1; X3, X6 = e +- m2 2;
    # a = x0 - t3/2 1; cosine part 3 pre + 6 post; sine part 3 pre + 6 post; X_k, X_{9-k} 6:
    # 42 complex adds (84) + 10 real/imaginary-constant products (20) = 104. Cooley-Tukey
    # 3 x 3: 3 x 16 + 3 x 16 + 4 twiddles w9^(1,2,2,4) x 6 = 120
    assert fc.complex_dft_flops(9) == 104
    assert fc.real_dft_flops(9) == 104 // 2 - 8  # real: 34 adds + 10 multiplies


@pytest.mark.parametrize("n", SAMPLE)
def test_instrumented_real_plan_matches_numpy_and_count(n):
    x = np.random.default_rng(n).standard_normal((2, n))
    got, flops = rfft(x)
    np.testing.assert_allclose(got, np.fft.rfft(x), rtol=1e-9, atol=1e-9 * n)
    if real_exact(n):
        assert flops == fc.real_dft_flops(n) == real_fft_flops(n)
    else:  # an estimate: at or below the real-data algorithm executed here
        assert flops >= fc.real_dft_flops(n)


def test_real_counts():
    for k in range(1, 21):  # the published real-data split radix, unchanged
        n = 2**k
        assert fc.real_dft_flops(n) == real_fft_flops(n) == 2 * n * k - 4 * n + 6
    # real 3: t = x1+x2, X0 = x0+t, x1-x2, s = X0 + m1 (4 adds) + m1, m2 (2 multiplies) = 6
    assert real_fft_flops(3) == 6
    # real 6 = 2 x 3 Good-Thomas: 3 real 2-point (3 x 2) + 2 real 3-point (2 x 6) = 18
    assert real_fft_flops(6) == 18
    # real 12 = 4 x 3: 3 real 4-point (18) + columns k1 = 0, 2 real 3-point (12) + the
    # conjugate pair k1 = 1, 3 one complex 3-point (16) = 46
    assert real_fft_flops(12) == 46
    # real 15 = 3 x 5: 5 real 3-point (30) + 1 real 5-point (18) + 1 complex 5-point (44) = 92
    assert real_fft_flops(15) == 92


@pytest.mark.parametrize("n", [6, 10, 12, 18, 20, 24, 30, 36, 48, 60, 100, 26, 34, 62])
def test_real_count_is_below_the_half_length_complex_algorithm(n):
    """r2c for even n as a complex n/2-point DFT of x_even + i x_odd plus the split of the
    half spectrum, instrumented: it matches numpy.fft.rfft and costs at least R(n)."""
    m = n // 2
    x = np.random.default_rng(n).standard_normal((2, n))
    z, flops = fft(x[:, 0::2] + 1j * x[:, 1::2])
    out = np.empty((2, m + 1), complex)
    out[:, :1] = (z[:, 0].real + z[:, 0].imag)[:, None]  # X0 = Re Z0 + Im Z0
    out[:, m:] = (z[:, 0].real - z[:, 0].imag)[:, None]  # X_m = Re Z0 - Im Z0
    flops += 2
    for k in range(1, m // 2 + 1):
        zk, zm = z[:, k : k + 1], np.conj(z[:, m - k : m - k + 1])
        if 2 * k == m:  # X_{m/2} = conj Z_{m/2}: free
            out[:, k : k + 1] = np.conj(zk)
            continue
        (e, f1), (o, f2) = add(zk, zm), sub(zk, zm)
        he, f3 = mul_real(0.5, e)
        # (-i/2) w^k O: 0 < k < n/4, so w^k is never +-1, +-i and the constant -i w^k / 2
        # costs what w^k does (the factor is folded into the precomputed constant)
        t, f4 = mul_twiddle(o, np.array([k]), n)
        t = -0.5j * t
        (a, f5), (b, f6) = add(he, t), sub(he, t)
        out[:, k : k + 1], out[:, m - k : m - k + 1] = a, np.conj(b)
        flops += f1 + f2 + f3 + f4 + f5 + f6
    np.testing.assert_allclose(out, np.fft.rfft(x), rtol=1e-9, atol=1e-9 * n)
    assert real_fft_flops(n) <= flops


def test_counts_take_milliseconds():
    """Cold caches; 8648640 = 2^6 3^3 5 7 11 13 (448 divisors) is the slowest below 10^7."""
    fc.complex_plan.cache_clear()
    fc.factorize.cache_clear()
    t = time.perf_counter()
    for n in (10**7 - 1, 9999991, 2**23 * 3 // 2, 5**10, 10**7 + 19, 8648640):
        assert complex_fft_flops(n) > 0
    assert time.perf_counter() - t < 1.0


def test_counts_are_even():
    """Every member's count is even (real and imaginary parts alike), so R(n) = C(n)/2 - ...
    divides exactly."""
    assert all(fc.complex_dft_flops(n) % 2 == 0 for n in range(1, 3000))


def test_powers_of_two_stay_split_radix():
    """No Cooley-Tukey split of 2^k beats the published split-radix count (kept unchanged)."""
    for k in range(2, 21):
        n = 2**k
        for k1 in range(1, k):
            n1, n2 = 2**k1, 2 ** (k - k1)
            split = n2 * fc.split_radix_flops(n1) + n1 * fc.split_radix_flops(n2)
            assert split + fc.ct_twiddle_flops(n1, n2) >= fc.split_radix_flops(n)


def _twiddles_enumerated(n1: int, n2: int) -> int:
    return sum(fc.twiddle_flops(j2 * k1, n1 * n2) for j2 in range(1, n2) for k1 in range(1, n1))


def test_twiddle_count_matches_enumeration():
    """The divisor counting of the cheap twiddles against enumerating every twiddle."""
    pairs = [(a, b) for a in range(2, 41) for b in range(2, 41)]
    rng = np.random.default_rng(0)
    pairs += [tuple(int(v) for v in rng.choice([8, 12, 16, 24, 48, 64, 96, 120], 2))]
    pairs += [(int(2 ** rng.integers(1, 8)) * int(rng.integers(1, 40)), 2**7) for _ in range(30)]
    for n1, n2 in pairs:
        assert fc.ct_twiddle_flops(n1, n2) == _twiddles_enumerated(n1, n2), (n1, n2)


def test_dp_is_the_minimum_over_the_family():
    """The pruned dynamic program against an unpruned recursion over every member."""
    best: dict[int, int] = {1: 0}
    for n in range(2, 1500):
        if n & (n - 1) == 0:
            best[n] = fc.split_radix_flops(n)
            continue
        m = 1 << (2 * n - 2).bit_length()
        c = [2 * fc.split_radix_flops(m) + 6 * m + 12 * (n - 1)]
        c += [2 * (n * n - 1)] if n % 2 else []
        c += [fc.WINOGRAD[n]] if n in fc.WINOGRAD else []
        c += [fc.WINOGRAD_TABLE[n]] if n in fc.WINOGRAD_TABLE else []
        c += [2 * best[n - 1] + 6 * n - 10] if fc.is_prime(n) else []
        for n1 in range(2, n):
            if n % n1 == 0:
                n2 = n // n1
                tw = 0 if math.gcd(n1, n2) == 1 else _twiddles_enumerated(n1, n2)
                c.append(n2 * best[n1] + n1 * best[n2] + tw)
        best[n] = min(c)
        assert fc.complex_dft_flops(n) == best[n], n


def test_bad_length():
    with pytest.raises(ValueError, match="FFT length 0"):
        fc.complex_plan(0)
