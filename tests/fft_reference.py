"""An instrumented numpy FFT, the second oracle of solar/ir/fft_counts.py: it runs the very
plan the dynamic program chose for n (split radix, Winograd 3/5/7/9, direct, Cooley-Tukey,
Good-Thomas, Rader, Bluestein), recursively, and counts every real add and multiply it
performs; a tabulated Winograd module (11, 13, 17, 19) computes the DFT and adds the table's
count. tests/test_fft_counts.py holds its outputs to numpy.fft and its counts to the
module's."""

from __future__ import annotations

import math

import numpy as np

from solar.ir import fft_counts as fc


# ------------------------------------------------------------- counted primitives
# Every helper works on a batch of rows (axis 0) and returns (value, real flops of ONE row).
def add(a, b):
    return a + b, 2 * a[0].size


def sub(a, b):
    return a - b, 2 * a[0].size


def mul_real(c: float, a):  # real constant x complex: 2 multiplies
    return c * a.real + 1j * (c * a.imag), 2 * a[0].size


def mul_imag(s: float, a):  # (i s) x (x + i y) = -s y + i s x: 2 multiplies, a sign flip
    return -(s * a.imag) + 1j * (s * a.real), 2 * a[0].size


# real values (the real-data versions, tests/fft_reference_real.py): 1 flop an operation
def radd(a, b):
    return a + b, a[0].size


def rsub(a, b):
    return a - b, a[0].size


def rmul(c: float, a):
    return c * a, a[0].size


def mul_twiddle(z, e: np.ndarray, n: int):
    """z * w_n^e (w_n = exp(-2 pi i / n)), elementwise over the last axis; each exponent
    classified by integer arithmetic and multiplied the cheapest way: +-1, +-i (sign flips and
    a swap, 0 flops), (+-1 +- i)/sqrt 2 (2 adds, 2 multiplies), else 4 multiplies + 2 adds."""
    out, flops = np.empty_like(z), 0
    c = math.sqrt(0.5)
    for idx, ei in enumerate(e.ravel().tolist()):
        a, b = z[..., idx].real, z[..., idx].imag
        ei %= n
        if (4 * ei) % n == 0:  # w = (-i)^(4 ei / n)
            q = (4 * ei) // n
            re, im = [(a, b), (b, -a), (-a, -b), (-b, a)][q]
        elif (8 * ei) % n == 0:  # w = c (sr + i si), sr, si = +-1
            ang = -2 * math.pi * ei / n
            sr, si = round(math.cos(ang) / c), round(math.sin(ang) / c)
            re, im = c * (sr * a - si * b), c * (sr * b + si * a)
            flops += 4
        else:
            ang = -2 * math.pi * ei / n
            wr, wi = math.cos(ang), math.sin(ang)
            re, im = wr * a - wi * b, wr * b + wi * a
            flops += 6
        out[..., idx] = re + 1j * im
    return out, flops


def mul_general(z, w: np.ndarray):  # complex x complex constant: 4 multiplies + 2 adds each
    re = w.real * z.real - w.imag * z.imag
    im = w.real * z.imag + w.imag * z.real
    return re + 1j * im, 6 * z[0].size


# ------------------------------------------------------------- the plans, executed
def fft(x: np.ndarray, plan: fc.Plan | None = None) -> tuple[np.ndarray, int]:
    """DFT of every row of x (shape (B, n)) by ``plan`` (default: the module's); returns the
    result and the real flops of one row."""
    n = x.shape[1]
    plan = plan or fc.complex_plan(n)
    assert plan.n == n
    run = {
        "split_radix": _split_radix,
        "winograd": _winograd,
        "winograd_table": _winograd_table,
        "direct": _direct,
        "cooley_tukey": _cooley_tukey,
        "prime_factor": _prime_factor,
        "rader": _rader,
        "bluestein": _bluestein,
    }[plan.kind]
    return run(x, *plan.parts)


def ifft_unnormalized(x):  # conj(DFT(conj x)): the conjugations are sign flips, free
    y, flops = fft(np.conj(x))
    return np.conj(y), flops


def _split_radix(x):
    n = x.shape[1]
    if n == 1:
        return x.copy(), 0
    if n == 2:
        (s, f1), (d, f2) = add(x[:, :1], x[:, 1:]), sub(x[:, :1], x[:, 1:])
        return np.concatenate([s, d], axis=1), f1 + f2
    u, fu = _split_radix(x[:, 0::2])
    z, fz = _split_radix(x[:, 1::4])
    z3, fz3 = _split_radix(x[:, 3::4])
    k = np.arange(n // 4)
    zt, ft = mul_twiddle(z, k, n)
    z3t, ft3 = mul_twiddle(z3, 3 * k, n)
    flops = fu + fz + fz3 + ft + ft3
    s, f = add(zt, z3t)
    flops += f
    d, f = sub(zt, z3t)
    flops += f
    d = -1j * d  # free: a swap and a sign flip
    q = n // 4
    parts = []
    for op, lo, v in ((add, 0, s), (add, q, d), (sub, 0, s), (sub, q, d)):
        r, f = op(u[:, lo : lo + q], v)
        parts.append(r)
        flops += f
    return np.concatenate(parts, axis=1), flops


def _winograd(x):
    n = x.shape[1]
    if n in (7, 9):
        return winograd79(x, real=False)
    col = [x[:, j : j + 1] for j in range(n)]
    flops = 0

    def do(r):
        nonlocal flops
        flops += r[1]
        return r[0]

    if n == 3:  # t = x1 + x2, X0 = x0 + t, m1 = (cos u - 1) t, m2 = -i sin u (x1 - x2)
        u = 2 * math.pi / 3
        t = do(add(col[1], col[2]))
        x0 = do(add(col[0], t))
        m1 = do(mul_real(math.cos(u) - 1, t))
        m2 = do(mul_imag(-math.sin(u), do(sub(col[1], col[2]))))
        s = do(add(x0, m1))
        return np.concatenate([x0, do(add(s, m2)), do(sub(s, m2))], axis=1), flops
    assert n == 5
    u = 2 * math.pi / 5
    c1, c2, s1, s2 = math.cos(u), math.cos(2 * u), math.sin(u), math.sin(2 * u)
    t1, t2 = do(add(col[1], col[4])), do(add(col[2], col[3]))
    t3, t4 = do(sub(col[1], col[4])), do(sub(col[2], col[3]))
    t5 = do(add(t1, t2))
    x0 = do(add(col[0], t5))
    m1 = do(mul_real((c1 + c2) / 2 - 1, t5))
    m2 = do(mul_real((c1 - c2) / 2, do(sub(t1, t2))))
    # imaginary parts: I1 = a t3 + b t4, I2 = b t3 - a t4 with a = -i s1, b = -i s2
    m3 = do(mul_imag(-s2, do(add(t3, t4))))  # b (t3 + t4)
    m4 = do(mul_imag(-(s1 - s2), t3))  # (a - b) t3
    m5 = do(mul_imag(-(s1 + s2), t4))  # (a + b) t4
    sr = do(add(x0, m1))
    r1, r2 = do(add(sr, m2)), do(sub(sr, m2))
    i1, i2 = do(add(m3, m4)), do(sub(m3, m5))
    out = [x0, do(add(r1, i1)), do(add(r2, i2)), do(sub(r2, i2)), do(sub(r1, i1))]
    return np.concatenate(out, axis=1), flops


def _winograd_constants(n: int, g: int) -> dict:
    """Winograd's 7- and 9-point modules, derived here. With g a generator of the units mod n,
    the cosine part over the units is a 3-point cyclic convolution of u_a = t_{g^-a}
    (t_j = x_j + x_{n-j}) and the sine part a 3-point negacyclic one of u'_a = d_{g^-a}
    (d_j = x_j - x_{n-j}, d_{n-j} = -d_j). Each splits into a one-multiply component (the sum;
    the alternating sum), which for n = 7 is folded into X0 and for n = 9 is zero, and a
    three-multiply one with pre-adds (r1, r2, r1 + r2) and outputs q0, q1 of two products each
    (q2 = -q0 - q1, resp. q1 - q0). The multipliers (precomputed) solve the bilinear identity
    exactly."""
    js = [pow(g, -a, n) for a in range(3)]
    cosm = np.array([[math.cos(2 * math.pi * pow(g, m, n) * j / n) for j in js] for m in range(3)])
    sinm = np.array([[math.sin(2 * math.pi * pow(g, m, n) * j / n) for j in js] for m in range(3)])
    v = np.array([1.0, -1.0, 1.0])
    sin_quad = sinm - np.outer(sinm @ v, v) / 3
    parts = {
        "cos": (cosm - cosm.sum() / 9, [(1, -1, 0), (1, 0, -1)], [(0, -1, -1), (-1, 0, -1)]),
        "sin": (sin_quad, [(1, 1, 0), (0, 1, 1)], [(-1, 0, -1), (0, -1, 1)]),
    }
    out = {"js": js, "outs": [pow(g, m, n) for m in range(3)], "parts": {}}
    for name, (target, (r1, r2), post) in parts.items():
        rows = np.array([r1, r2, np.add(r1, r2)], float)
        c = np.array(post, float)
        basis = np.array([np.outer(c[:, i], rows[i]).ravel() for i in range(3)]).T
        mult = np.linalg.lstsq(basis, target[:2].ravel(), rcond=None)[0]
        assert np.abs(basis @ mult - target.ravel()[:6]).max() < 1e-12
        out["parts"][name] = ((r1, r2), post, mult.tolist())
    out["dc_cos"] = cosm.sum() / 9 - 1  # n = 7: -7/6, X0 + this x S = x0 - S/6; n = 9: unused
    out["dc_sin"] = (sinm @ v)[0] / 3  # n = 9: 0
    return out


WCONST = {7: _winograd_constants(7, 3), 9: _winograd_constants(9, 2)}
assert abs(WCONST[9]["dc_sin"]) < 1e-12 and abs(WCONST[9]["dc_cos"] + 1) < 1e-12


def winograd79(x, real: bool):
    """n = 7: 36 complex adds and 8 real/imaginary-constant products (72 + 16 = 88); n = 9:
    42 complex adds and 10 products (84 + 20 = 104). On real data the adds are real and the
    output combinations of a real and an imaginary value free (7: 30 + 8, 9: 34 + 10)."""
    n = x.shape[1]
    w = WCONST[n]
    plus, minus, mulr, muli = (radd, rsub, rmul, rmul) if real else (add, sub, mul_real, mul_imag)
    flops = 0

    def do(r):
        nonlocal flops
        flops += r[1]
        return r[0]

    def lin(coefs, vecs):  # sum of +-v with len - 1 adds; a leading sign flip is free
        terms = [(c, v) for c, v in zip(coefs, vecs) if c]
        acc = terms[0][1] if terms[0][0] > 0 else -terms[0][1]
        for c, v in terms[1:]:
            acc = do(plus(acc, v) if c > 0 else minus(acc, v))
        return acc

    def conv(name, vecs, signs, mul):  # the three-multiply component: q0, q1
        (r1, r2), post, mult = w["parts"][name]
        e1 = lin([r * s for r, s in zip(r1, signs)], vecs)
        e2 = lin([r * s for r, s in zip(r2, signs)], vecs)
        prods = [do(mul(m, e)) for m, e in zip(mult, (e1, e2, do(plus(e1, e2))))]
        return lin(post[0], prods), lin(post[1], prods)

    col = [x[:, j : j + 1] for j in range(n)]
    h = (n - 1) // 2
    t = {j: do(plus(col[j], col[n - j])) for j in range(1, h + 1)}
    d = {j: do(minus(col[j], col[n - j])) for j in range(1, h + 1)}
    u = [t[min(j, n - j)] for j in w["js"]]
    sg = [1 if j <= h else -1 for j in w["js"]]
    du = [d[min(j, n - j)] for j in w["js"]]
    half_out = np.empty((x.shape[0], h + 1), complex)
    out = np.empty_like(x)
    big_s = lin((1, 1, 1), u)  # the units' sum
    if n == 7:
        x0 = do(plus(col[0], big_s))
        a = do(plus(x0, do(mulr(w["dc_cos"], big_s))))  # x0 - S/6
        b = do(muli(-w["dc_sin"], lin([v * s for v, s in zip((1, -1, 1), sg)], du)))
    else:  # n = 9: y0 = x0 + t3; X0, X3, X6 a 3-point DFT of (y0, units' sums by class mod 3)
        r3 = math.sqrt(3) / 2
        y0 = do(plus(col[0], t[3]))
        x0 = do(plus(y0, big_s))
        e = do(plus(x0, do(mulr(-1.5, big_s))))  # y0 - S/2
        m2 = do(muli(-r3, lin((1, -1, 1), [d[1], d[2], d[4]])))  # -i (sqrt 3 / 2)(y1 - y2)
        if real:
            half_out[:, 3:4] = e + 1j * m2
        else:
            out[:, 3:4], out[:, 6:7] = do(plus(e, m2)), do(minus(e, m2))
        a = do(plus(col[0], do(mulr(-0.5, t[3]))))  # x0 + t3 cos(2 pi 3k/9)
        b = do(muli(-r3, d[3]))  # -i d3 sin(2 pi 3k/9), sign (1, -1, 1) over the outputs
    al, be = conv("cos", u, (1, 1, 1), mulr)
    re = [do(plus(a, al)), do(plus(a, be)), do(minus(a, do(plus(al, be))))]
    al, be = conv("sin", du, sg, lambda m, e: muli(-m, e))
    im = [do(plus(b, al)), do(minus(be, b)), do(plus(b, do(minus(be, al))))]
    if real:
        half_out[:, :1] = x0
        for k, r, i in zip(w["outs"], re, im):
            half_out[:, k : k + 1] = r + 1j * i
        return half_out, flops
    out[:, :1] = x0
    for k, r, i in zip(w["outs"], re, im):
        out[:, k : k + 1], out[:, n - k : n - k + 1] = do(plus(r, i)), do(minus(r, i))
    return out, flops


def _winograd_table(x):
    """A tabulated module (11, 13, 17, 19 points): its count is the published table's, not
    one executed here (its constants are not rebuilt); the transform itself is the DFT."""
    n = x.shape[1]
    k = np.arange(n)
    return x @ np.exp(-2j * np.pi * np.outer(k, k) / n), fc.WINOGRAD_TABLE[n]


def _direct(x):
    """Odd n, h = (n-1)/2: t_j = x_j + x_{n-j}, d_j = x_j - x_{n-j}; X0 = x0 + sum t_j;
    X_k, X_{n-k} = R_k +- I_k, R_k = x0 + sum cos(2 pi jk/n) t_j, I_k = -i sum sin(.) d_j."""
    n = x.shape[1]
    h, flops = (n - 1) // 2, 0
    t, f1 = add(x[:, 1 : h + 1], x[:, n - 1 : h : -1])
    d, f2 = sub(x[:, 1 : h + 1], x[:, n - 1 : h : -1])
    flops += f1 + f2
    out = np.empty_like(x)
    acc = x[:, :1]
    for j in range(h):
        acc, f = add(acc, t[:, j : j + 1])
        flops += f
    out[:, :1] = acc
    for k in range(1, h + 1):
        re, im = x[:, :1], None
        for j in range(1, h + 1):
            v, f = mul_real(math.cos(2 * math.pi * j * k / n), t[:, j - 1 : j])
            re, g = add(re, v)
            w, f2 = mul_imag(-math.sin(2 * math.pi * j * k / n), d[:, j - 1 : j])
            flops += f + g + f2
            if im is None:
                im = w
            else:
                im, g = add(im, w)
                flops += g
        (a, f1), (b, f2) = add(re, im), sub(re, im)
        out[:, k : k + 1], out[:, n - k : n - k + 1] = a, b
        flops += f1 + f2
    return out, flops


def _cooley_tukey(x, n1, n2):
    """x[n2 j1 + j2]: n2 DFTs of n1 over j1, twiddles w_n^(j2 k1), n1 DFTs of n2 over j2;
    X[k1 + n1 k2]."""
    b, n = x.shape[0], n1 * n2
    a = x.reshape(b, n1, n2).transpose(0, 2, 1).reshape(b * n2, n1)
    y, f1 = fft(a)
    y = y.reshape(b, n2, n1).transpose(0, 2, 1)  # [b, k1, j2]
    e = np.arange(n1)[:, None] * np.arange(n2)[None, :]
    y, ft = mul_twiddle(y.reshape(b, n), e.ravel(), n)
    z, f2 = fft(y.reshape(b * n1, n2))
    z = z.reshape(b, n1, n2)  # [b, k1, k2]
    return z.transpose(0, 2, 1).reshape(b, n), n2 * f1 + ft + n1 * f2


def _prime_factor(x, n1, n2):
    """Good-Thomas: x[(n2 j1 + n1 j2) mod n] is a 2-D n1 x n2 DFT (no twiddles); X[k] with
    k = k1 mod n1, k2 mod n2 (Chinese remainders)."""
    b, n = x.shape[0], n1 * n2
    j1, j2 = np.arange(n1)[:, None], np.arange(n2)[None, :]
    a = x[:, (n2 * j1 + n1 * j2) % n]  # [b, j1, j2]
    y, f1 = fft(a.transpose(0, 2, 1).reshape(b * n2, n1))
    y = y.reshape(b, n2, n1).transpose(0, 2, 1)  # [b, k1, j2]
    z, f2 = fft(y.reshape(b * n1, n2))
    z = z.reshape(b, n1, n2)  # [b, k1, k2]
    k = (j1 * n2 * pow(n2, -1, n1) + j2 * n1 * pow(n1, -1, n2)) % n
    out = np.empty_like(x)
    out[:, k.ravel()] = z.reshape(b, n)
    return out, n2 * f1 + n1 * f2


def _primitive_root(p: int) -> int:
    qs = [q for q, _ in fc.factorize(p - 1)]
    return next(g for g in range(2, p) if all(pow(g, (p - 1) // q, p) != 1 for q in qs))


def _rader(x, m):
    p = m + 1
    g = _primitive_root(p)
    perm = [pow(g, q, p) for q in range(m)]  # a_q = x[g^q]
    inv = [pow(g, -q, p) for q in range(m)]  # X[g^-q]
    kernel = np.exp(-2j * np.pi * np.array(inv) / p)  # b_q = w^(g^-q)
    big_b = np.fft.fft(kernel) / m  # precomputed constant
    a, fa = fft(x[:, perm])
    x0, f0 = add(x[:, :1], a[:, :1])
    h = m // 2
    assert abs(big_b[0] + 1 / m) < 1e-12 and min(abs(big_b[h].real), abs(big_b[h].imag)) < 1e-9
    d = np.empty_like(a)
    d0, fm0 = mul_real(big_b[0].real, a[:, :1])
    d[:, :1], fx = add(d0, x[:, :1])  # x0 enters every output through the inverse's index 0
    if abs(big_b[h].imag) < 1e-9:
        d[:, h : h + 1], fh = mul_real(big_b[h].real, a[:, h : h + 1])
    else:
        d[:, h : h + 1], fh = mul_imag(big_b[h].imag, a[:, h : h + 1])
    rest = [j for j in range(1, m) if j != h]
    flops = fa + f0 + fm0 + fx + fh
    if rest:
        d[:, rest], fr = mul_general(a[:, rest], big_b[rest])
        flops += fr
    c, fc_ = ifft_unnormalized(d)
    out = np.empty_like(x)
    out[:, :1] = x0
    out[:, inv] = c
    return out, flops + fc_


def _bluestein(x, m):
    n = x.shape[1]
    j = np.arange(n)
    chirp = np.exp(-1j * np.pi * (j * j % (2 * n)) / n)  # w^(j^2/2)
    kern = np.zeros(m, complex)
    kern[:n] = np.conj(chirp)
    kern[m - n + 1 :] = np.conj(chirp[1:])[::-1]
    big_b = np.fft.fft(kern) / m  # precomputed constant
    a = np.zeros((x.shape[0], m), complex)
    a[:, :1] = x[:, :1]  # chirp_0 = 1
    a[:, 1:n], f1 = mul_general(x[:, 1:], chirp[1:])
    big_a, f2 = fft(a)
    prod, f3 = mul_general(big_a, big_b)
    y, f4 = ifft_unnormalized(prod)
    out = np.empty_like(x)
    out[:, :1] = y[:, :1]
    out[:, 1:], f5 = mul_general(y[:, 1:n], chirp[1:])
    return out, f1 + f2 + f3 + f4 + f5
