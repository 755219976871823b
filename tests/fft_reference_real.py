"""The real-data versions of the plans of tests/fft_reference.py, instrumented the same way:
rfft(x) returns the half spectrum X_0..X_{n//2} and the real flops of one row."""

from __future__ import annotations

import math

import numpy as np
from fft_reference import add, fft, mul_twiddle, radd, rmul, rsub, sub, winograd79

from solar.ir import fft_counts as fc


# ------------------------------------------------------------- real data, executed
# rfft(x, plan) follows the real-data version of the complex plan for n and returns the half
# spectrum X_0..X_{n//2} and the real flops of one row. Real values cost 1 flop an add or a
# multiply; placing a real and an imaginary value side by side, or conjugating, costs 0.
def real_times_twiddle(a, e: np.ndarray, n: int):
    """Real a times w_n^e: 0 flops for +-1, +-i; 1 for (+-1 +- i)/sqrt 2 (c a, then signs);
    else 2 multiplies."""
    out, flops = np.empty(a.shape, complex), 0
    for idx, ei in enumerate(e.ravel().tolist()):
        ei %= n
        w = complex(np.exp(-2j * np.pi * ei / n))
        if (4 * ei) % n == 0:
            w = [1, -1j, -1, 1j][(4 * ei) // n]
        else:
            flops += 1 if (8 * ei) % n == 0 else 2
        out[..., idx] = a[..., idx] * w
    return out, flops


def half(x_full: np.ndarray) -> np.ndarray:
    return x_full[:, : x_full.shape[1] // 2 + 1]


def full(x_half: np.ndarray, n: int) -> np.ndarray:
    """The whole spectrum of a real signal from its half (conjugations: free)."""
    k = np.arange(n)
    idx = np.where(k <= n // 2, k, n - k)
    return np.where(k <= n // 2, x_half[:, idx], np.conj(x_half[:, idx]))


def rfft(x: np.ndarray, plan: fc.Plan | None = None) -> tuple[np.ndarray, int]:
    n = x.shape[1]
    plan = plan or fc.complex_plan(n)
    kind = plan.kind
    if kind == "split_radix":
        return _real_split_radix(x)
    if kind == "winograd":
        return _real_winograd(x)
    if kind in ("direct", "winograd_table"):  # a tabulated module: its real data run direct
        return _real_direct(x)
    if kind in ("prime_factor", "cooley_tukey"):
        return _real_two_factor(x, *plan.parts, pfa=kind == "prime_factor")
    y, flops = fft(x.astype(complex), plan)  # Rader, Bluestein: the complex plan on real data
    return half(y), flops


def _real_split_radix(x):
    n = x.shape[1]
    if n == 1:
        return x.astype(complex), 0
    if n == 2:
        (s, f1), (d, f2) = radd(x[:, :1], x[:, 1:]), rsub(x[:, :1], x[:, 1:])
        return np.concatenate([s, d], axis=1).astype(complex), f1 + f2
    u, fu = _real_split_radix(x[:, 0::2])  # U_0..U_{n/4}
    z, fz = _real_split_radix(x[:, 1::4])  # Z_0..Z_{n/8}
    z3, fz3 = _real_split_radix(x[:, 3::4])
    flops, q, out = fu + fz + fz3, n // 4, np.empty((x.shape[0], n // 2 + 1), complex)
    # k = 0: Z_0, Z'_0, U_0, U_{n/4} real: s, d, X_0 = U_0 + s, X_{n/2} = U_0 - s (4 flops)
    (s, f1), (d, f2) = radd(z[:, :1].real, z3[:, :1].real), rsub(z[:, :1].real, z3[:, :1].real)
    (a, f3), (b, f4) = radd(u[:, :1].real, s), rsub(u[:, :1].real, s)
    out[:, :1], out[:, 2 * q :] = a, b
    out[:, q : q + 1] = u[:, q : q + 1].real - 1j * d
    flops += f1 + f2 + f3 + f4
    if n >= 8:  # k = n/8: Z, Z' real there; s = c (z - z') - i c (z + z') (8 flops)
        e = n // 8
        c = math.sqrt(0.5)
        (p_, f1), (q_, f2) = (
            rsub(z[:, e:].real, z3[:, e:].real),
            radd(z[:, e:].real, z3[:, e:].real),
        )
        (cp, f3), (cq, f4) = rmul(c, p_), rmul(c, q_)
        s = cp - 1j * cq
        (a, f5), (b, f6) = add(u[:, e : e + 1], s), sub(u[:, e : e + 1], s)
        out[:, e : e + 1], out[:, 3 * e : 3 * e + 1] = a, np.conj(b)
        flops += f1 + f2 + f3 + f4 + f5 + f6
        for k in range(1, e):
            za, f1 = mul_twiddle(z[:, k : k + 1], np.array([k]), n)
            zb, f2 = mul_twiddle(z3[:, k : k + 1], np.array([3 * k]), n)
            (s, f3), (d, f4) = add(za, zb), sub(za, zb)
            (a, f5), (b, f6) = add(u[:, k : k + 1], s), sub(u[:, k : k + 1], s)
            uq = u[:, q - k : q - k + 1]
            (c1, f7), (c2, f8) = sub(np.conj(uq), 1j * d), add(uq, np.conj(1j * d))
            out[:, k : k + 1], out[:, 2 * q - k : 2 * q - k + 1] = a, np.conj(b)
            out[:, q + k : q + k + 1], out[:, q - k : q - k + 1] = c1, c2
            flops += f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8
    return out, flops


def _real_winograd(x):
    if x.shape[1] in (7, 9):
        return winograd79(x, real=True)
    n, col, flops = x.shape[1], [x[:, j : j + 1] for j in range(x.shape[1])], 0

    def do(r):
        nonlocal flops
        flops += r[1]
        return r[0]

    if n == 3:  # t, X0, x1 - x2, s (4 adds) + m1, m2 (2 multiplies); X1 = s - i m2': free
        u = 2 * math.pi / 3
        t = do(radd(col[1], col[2]))
        x0 = do(radd(col[0], t))
        m1 = do(rmul(math.cos(u) - 1, t))
        m2 = do(rmul(-math.sin(u), do(rsub(col[1], col[2]))))
        return np.concatenate([x0, do(radd(x0, m1)) + 1j * m2], axis=1), flops
    u = 2 * math.pi / 5
    c1, c2, s1, s2 = math.cos(u), math.cos(2 * u), math.sin(u), math.sin(2 * u)
    t1, t2 = do(radd(col[1], col[4])), do(radd(col[2], col[3]))
    t3, t4 = do(rsub(col[1], col[4])), do(rsub(col[2], col[3]))
    t5 = do(radd(t1, t2))
    x0 = do(radd(col[0], t5))
    m1 = do(rmul((c1 + c2) / 2 - 1, t5))
    m2 = do(rmul((c1 - c2) / 2, do(rsub(t1, t2))))
    m3 = do(rmul(-s2, do(radd(t3, t4))))  # imaginary parts, as coefficients of i
    m4 = do(rmul(-(s1 - s2), t3))
    m5 = do(rmul(-(s1 + s2), t4))
    sr = do(radd(x0, m1))
    r1, r2 = do(radd(sr, m2)), do(rsub(sr, m2))
    i1, i2 = do(radd(m3, m4)), do(rsub(m3, m5))
    return np.concatenate([x0, r1 + 1j * i1, r2 + 1j * i2], axis=1), flops


def _real_direct(x):
    n = x.shape[1]
    h, flops = (n - 1) // 2, 0
    t, f1 = radd(x[:, 1 : h + 1], x[:, n - 1 : h : -1])
    d, f2 = rsub(x[:, 1 : h + 1], x[:, n - 1 : h : -1])
    flops += f1 + f2
    out = np.empty((x.shape[0], h + 1), complex)
    acc = x[:, :1]
    for j in range(h):
        acc, f = radd(acc, t[:, j : j + 1])
        flops += f
    out[:, :1] = acc
    for k in range(1, h + 1):
        re, im = x[:, :1], None
        for j in range(1, h + 1):
            v, f = rmul(math.cos(2 * math.pi * j * k / n), t[:, j - 1 : j])
            re, g = radd(re, v)
            w, f2 = rmul(-math.sin(2 * math.pi * j * k / n), d[:, j - 1 : j])
            flops += f + g + f2
            if im is None:
                im = w
            else:
                im, g = radd(im, w)
                flops += g
        out[:, k : k + 1] = re + 1j * im
    return out, flops


def _real_two_factor(x, n1, n2, pfa: bool):
    """Prime factor or Cooley-Tukey on real data: n2 real DFTs of n1; of the n1 columns only
    k1 <= n1/2 (the others are conjugates); column 0 (and n1/2 for the prime factor) stays real
    and takes a real DFT of n2, the rest a complex one; Cooley-Tukey twiddles only on those."""
    b, n = x.shape[0], n1 * n2
    j1, j2 = np.arange(n1)[:, None], np.arange(n2)[None, :]
    idx = (n2 * j1 + n1 * j2) % n if pfa else n2 * j1 + j2
    a = x[:, idx].transpose(0, 2, 1).reshape(b * n2, n1)
    y, f1 = rfft(a)
    flops = n2 * f1
    y = y.reshape(b, n2, n1 // 2 + 1)  # [b, j2, k1]
    cols = []
    for k1 in range(n1 // 2 + 1):
        v = y[:, :, k1]
        real_col = k1 == 0 or (pfa and 2 * k1 == n1)
        if not pfa and k1:
            e = k1 * np.arange(n2)
            v, f = real_times_twiddle(v.real, e, n) if 2 * k1 == n1 else mul_twiddle(v, e, n)
            flops += f
        if real_col:
            r, f = rfft(np.ascontiguousarray(v.real))
            cols.append(full(r, n2))
        else:
            r, f = fft(v)
            cols.append(r)
        flops += f
    out = np.empty((b, n // 2 + 1), complex)
    for k in range(n // 2 + 1):
        k1, k2 = k % n1, (k % n2 if pfa else k // n1)
        if k1 <= n1 // 2:
            out[:, k] = cols[k1][:, k2]
        else:
            kk = n - k
            out[:, k] = np.conj(cols[kk % n1][:, kk % n2 if pfa else kk // n1])
    return out, flops


def real_exact(n: int) -> bool:
    """The plans whose real-data version costs exactly R(n) (module doc): no tabulated
    Winograd, Rader or Bluestein node, no Cooley-Tukey node of even length."""
    p = fc.complex_plan(n)
    if p.kind in ("winograd_table", "rader", "bluestein") or (
        p.kind == "cooley_tukey" and n % 2 == 0
    ):
        return False
    return p.kind not in ("prime_factor", "cooley_tukey") or all(real_exact(m) for m in p.parts)
