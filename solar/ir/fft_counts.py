"""Real-flop counts of one n-point DFT for every length n >= 1: the cheapest algorithm of a
stated family (issue 24), found by a memoized dynamic program over the divisors of n.

The family (complex data; every count is the exact number of real additions and
multiplications of the algorithm as written, an FMA being 2; constants are precomputed):

- ``split_radix``, n = 2^k: ``4 n log2 n - 6 n + 8`` (Yavne 1968; Duhamel & Hollmann 1984).
- ``winograd``, n = 3, 5, 7, 9: Winograd's small-DFT modules (S. Winograd, "On computing the
  discrete Fourier transform", Math. Comp. 32(141), 1978; the counts as tabulated by Silverman,
  IEEE Trans. ASSP 25(2), 1977, and by Burrus & Selesnick, "Winograd's Short DFT
  Algorithms", in C. S. Burrus, "Fast Fourier Transforms", Connexions, 2008): real multiplies
  + real adds 4 + 12, 10 + 34, 16 + 72, 20 + 84, each executed with exactly these operations
  by tests/test_fft_counts.py; its 8 and 16 equal split radix.
- ``winograd_table``, n = 11, 13, 17, 19: the same table's larger modules (H. Johnson and
  C. S. Burrus, "Large DFT modules: 11, 13, 17, 19, and 25", Rice University report 8105,
  1981): 40 + 168, 40 + 188, 70 + 314, 76 + 372. Not executed here (their constants are not
  rebuilt): they are in the family because they are the smallest published counts for those
  lengths, and leaving them out could put the count above an algorithm a library runs.
- ``direct``, odd n: the DFT by definition with the conjugate-pair symmetry
  (x_j +- x_{n-j} formed once, every output pair X_k, X_{n-k} from one real and one imaginary
  sum): ``2 (n^2 - 1)`` (n = 7: 60 adds + 36 multiplies, FFTW's ``n1_7`` codelet count).
- ``cooley_tukey``, n = n1 n2: n2 transforms of n1, the twiddles w_n^(j2 k1) (1 <= j2 < n2,
  1 <= k1 < n1; j2 k1 = 0 gives w^0 = 1 and is not multiplied), n1 transforms of n2. A twiddle
  costs 0 when it is +-1 or +-i (4 j2 k1 divisible by n: a swap and sign flips, which fold into
  the adds that follow, as in the split-radix count), 4 when it is (+-1 +- i)/sqrt 2 (8 j2 k1
  divisible by n: 2 adds, 2 multiplies), 6 otherwise (4 multiplies, 2 adds).
- ``prime_factor`` (Good-Thomas), n = n1 n2 with gcd(n1, n2) = 1: n2 C(n1) + n1 C(n2), no
  twiddles (index maps only).
- ``rader``, n = p prime: the cyclic convolution of length p - 1 by two (p-1)-point DFTs and
  p - 1 pointwise products with the precomputed transform of the kernel, of which index 0
  (-1/(p-1)) and index (p-1)/2 (a Gauss sum over p-1: real or imaginary) cost 2; x_0 is added
  once, into the index-0 product: ``2 C(p-1) + 6 p - 10`` (C. M. Rader, Proc. IEEE 56, 1968).
- ``bluestein``, any n: the chirp-z transform through power-of-two DFTs of length
  M >= 2n - 1, every chirp but w^0 multiplied in general form: ``2 C(M) + 6 M + 12 (n - 1)``
  (L. Bluestein, 1970).

C(n) is the minimum over this family; powers of two are always split radix (the published
count, unchanged). It is the best *known* count of these algorithms, not a proven minimum.

Real data (r2c, and c2r, its transposed algorithm up to the diagonal scaling of the half
spectrum, folded like 1/n: the same multiplies, and adds differing by outputs - inputs = 0):
``R(n) = C(n)/2 - 2 floor((n-1)/2)``. For n = 2^k this
is the real-data split radix ``2 n log2 n - 4 n + 6`` (Sorensen et al., 1987); for plans of
Winograd, direct, prime-factor and odd-length Cooley-Tukey nodes it is the count of their
real-data versions (only the Hermitian half of the outputs; docs/counting.md derives it, the
tests execute them). For plans with a tabulated Winograd, Rader, Bluestein or even-length
Cooley-Tukey node it is
an estimate by the same relation, below any real-data algorithm whose doubling (two real
transforms combined into one complex one, 4 adds per conjugate pair) is not below C(n).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache

#: entries of each memo table below (by length or factorization: a program has a few lengths,
#: the dynamic program visits their divisors)
_MEMO = 4096

WINOGRAD: dict[int, int] = {3: 4 + 12, 5: 10 + 34, 7: 16 + 72, 9: 20 + 84}  # multiplies + adds
WINOGRAD_TABLE: dict[int, int] = {11: 40 + 168, 13: 40 + 188, 17: 70 + 314, 19: 76 + 372}


@dataclass(frozen=True)
class Plan:
    """How C(n) is reached: ``kind`` (a family member above), the length, its real flops and
    the sub-lengths (n1, n2 for cooley_tukey / prime_factor; p - 1 for rader; M for
    bluestein)."""

    kind: str
    n: int
    flops: int
    parts: tuple[int, ...] = ()


@lru_cache(maxsize=_MEMO)
def factorize(n: int) -> tuple[tuple[int, int], ...]:
    """Prime factorization of n >= 1 as ((p, e), ...), by trial division."""
    out, m, p = [], n, 2
    while p * p <= m:
        if m % p == 0:
            e = 0
            while m % p == 0:
                m, e = m // p, e + 1
            out.append((p, e))
        p += 1 if p == 2 else 2
    if m > 1:
        out.append((m, 1))
    return tuple(out)


def _factor_scaled(n: int, num: int, den: int) -> tuple[tuple[int, int], ...]:
    """Factorization of n * num / den (an integer) from n's: avoids a trial division of it."""
    exps = dict(factorize(n))
    for p, e in factorize(num):
        exps[p] = exps.get(p, 0) + e
    for p, e in factorize(den):
        exps[p] -= e
    return tuple(sorted((p, e) for p, e in exps.items() if e))


@lru_cache(maxsize=_MEMO)
def _divisors(factors: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    divs = [1]
    for p, e in factors:
        divs = [d * p**i for d in divs for i in range(e + 1)]
    return tuple(sorted(divs))


def is_prime(n: int) -> bool:
    return n > 1 and factorize(n) == ((n, 1),)


def twiddle_flops(e: int, n: int) -> int:
    """Real flops of multiplying by w_n^e: 0 for +-1, +-i; 4 for (+-1 +- i)/sqrt 2; else 6."""
    if (4 * e) % n == 0:
        return 0
    return 4 if (8 * e) % n == 0 else 6


@lru_cache(maxsize=_MEMO)
def _cheap_products(n: int) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """The twiddle exponents t in [1, n) that are cheaper than 6 flops: j n / 4 (j = 1..3,
    +-1 and +-i: 6 saved) and j n / 8 (j odd: 4 flops, 2 saved), each with its saving and its
    divisors."""
    out = []
    for j in range(1, 8):
        if (j * n) % 8 == 0:
            t = j * n // 8
            out.append((t, 6 if j % 2 == 0 else 2, _divisors(_factor_scaled(n, j, 8))))
    return tuple(out)


def ct_twiddle_flops(n1: int, n2: int) -> int:
    """Real flops of the Cooley-Tukey twiddles of n = n1 n2: sum of :func:`twiddle_flops` of
    j2 k1 over 1 <= j2 < n2, 1 <= k1 < n1. The products lie in [1, n), so the cheap ones are
    exactly the :func:`_cheap_products` of n; the pairs with product t are the divisors j2 of
    t in [ceil(t / (n1 - 1)), n2 - 1]."""
    total = 6 * (n1 - 1) * (n2 - 1)
    for t, saving, divs in _cheap_products(n1 * n2):
        lo = -(-t // (n1 - 1))
        total -= saving * max(0, bisect_right(divs, n2 - 1) - bisect_left(divs, lo))
    return total


def split_radix_flops(n: int) -> int:
    """``4 n log2 n - 6 n + 8`` for n = 2^k >= 2 (0 for n = 1)."""
    k = n.bit_length() - 1
    return 0 if n == 1 else 4 * n * k - 6 * n + 8


def _bluestein_length(p: int) -> int:
    return 1 << (2 * p - 2).bit_length()  # the smallest power of two >= 2p - 1


_TIE_ORDER = (
    "split_radix",
    "winograd",
    "winograd_table",
    "direct",
    "prime_factor",
    "cooley_tukey",
    "rader",
)


@lru_cache(maxsize=_MEMO)
def complex_plan(n: int) -> Plan:
    """The cheapest plan of the family for a complex n-point DFT (ties: the simpler kind, in
    the order of the module doc)."""
    if n < 1:
        raise ValueError(f"FFT length {n}: must be >= 1 (a transform of no points has no count)")
    if n & (n - 1) == 0:
        return Plan("split_radix", n, split_radix_flops(n))
    m = _bluestein_length(n)
    cands = [Plan("bluestein", n, 2 * split_radix_flops(m) + 6 * m + 12 * (n - 1), (m,))]
    if n % 2:
        cands.append(Plan("direct", n, 2 * (n * n - 1)))
    if n in WINOGRAD:
        cands.append(Plan("winograd", n, WINOGRAD[n]))
    if n in WINOGRAD_TABLE:
        cands.append(Plan("winograd_table", n, WINOGRAD_TABLE[n]))
    if is_prime(n):
        cands.append(Plan("rader", n, 2 * complex_plan(n - 1).flops + 6 * n - 10, (n - 1,)))
    best = min(p.flops for p in cands)
    for n1 in _divisors(factorize(n)):
        if n1 == 1 or n1 * n1 > n:
            continue
        n2 = n // n1
        flops = n2 * complex_plan(n1).flops + n1 * complex_plan(n2).flops
        if flops > best:
            continue  # the twiddles only add: cannot win
        if math.gcd(n1, n2) == 1:
            cands.append(Plan("prime_factor", n, flops, (n1, n2)))
        else:
            cands.append(Plan("cooley_tukey", n, flops + ct_twiddle_flops(n1, n2), (n1, n2)))
        best = min(best, cands[-1].flops)
    return min(cands, key=lambda p: (p.flops, (*_TIE_ORDER, "bluestein").index(p.kind)))


def complex_dft_flops(n: int) -> int:
    """C(n): real flops of one complex n-point DFT by the cheapest plan of the family."""
    return complex_plan(n).flops


def real_dft_flops(n: int) -> int:
    """R(n) = C(n)/2 - 2 floor((n-1)/2): one real-input n-point DFT (half spectrum), or its
    inverse (see the module doc for where it is exact and where an estimate)."""
    if n <= 1:
        return 0
    return complex_dft_flops(n) // 2 - 2 * ((n - 1) // 2)
