"""The survival function of the two-sided one-sample Kolmogorov-Smirnov statistic D_n, without scipy.stats.

A port of the SF path of `scipy.stats._ksstats._kolmogn` (SciPy, BSD-3-Clause; Simard & L'Ecuyer 2011:
the Ruben-Gambino ends, the Durbin matrix of Marsaglia, Tsang and Wang, Pomeranz's recursion, the
Pelz-Good series and 2 * scipy.special.smirnov), with the same numpy operations in the same order, so
`kolmogorov_sf(d, n)` equals `scipy.stats.kstwo.sf(d, n)` to the bit (`tests/checks/test_kolmogorov.py`).
Importing scipy.stats costs 0.5-1 CPU s; a drift check that tests a small sample needs this one function.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

_E128 = 128
_EP128 = np.ldexp(np.longdouble(1), _E128)
_EM128 = np.ldexp(np.longdouble(1), -_E128)
_SQRT2PI = np.sqrt(2 * np.pi)
_LOG_2PI = np.log(2 * np.pi)
_MIN_LOG = -708
_SQRT3 = np.sqrt(3)
_PI_SQUARED = np.pi**2
_PI_FOUR = np.pi**4
_PI_SIX = np.pi**6
# Stirling coefficients B_{2j} / (2j) / (2j - 1) for j = 8, ..., 1 (B the Bernoulli numbers).
_STIRLING_COEFFS = [
    -2.955065359477124183e-2,
    6.4102564102564102564e-3,
    -1.9175269175269175269e-3,
    8.4175084175084175084e-4,
    -5.952380952380952381e-4,
    7.9365079365079365079e-4,
    -2.7777777777777777778e-3,
    8.3333333333333333333e-2,
]


def _clip(p: Any) -> Any:
    """A probability clipped to [0, 1], in its own precision (a rescaled one is a long double)."""
    return np.clip(p, 0.0, 1.0)


def _log_nfactorial_div_n_pow_n(n: int) -> float:
    """log(n! / n**n) by Stirling's series, n log n removed first against cancellation."""
    rn = 1.0 / n
    return np.log(n) / 2 - n + _LOG_2PI / 2 + rn * np.polyval(_STIRLING_COEFFS, rn / n)


def _durbin_cdf(n: int, d: Any) -> Any:
    """Pr(D_n <= d) by the Durbin matrix (Marsaglia, Tsang and Wang 2003): the k-th diagonal entry of
    H^n scaled by n! / n**n, intermediate powers rescaled by 2**128."""
    if d >= 1.0:
        return 1.0
    nd = n * d
    if nd <= 0.5:
        return 0.0
    k = int(np.ceil(nd))
    h = k - nd
    m = 2 * k - 1
    H = np.zeros([m, m])
    intm = np.arange(1, m + 1)
    v = 1.0 - h**intm
    w = np.empty(m)
    fac = 1.0
    for j in intm:
        w[j - 1] = fac
        fac /= j
        v[j - 1] *= fac
    tt = max(2.0 * h - 1.0, 0.0) ** m - 2 * h**m
    v[-1] = (1.0 + tt) * fac
    for i in range(1, m):
        H[i - 1 :, i] = w[: m - i + 1]
    H[:, 0] = v
    H[-1, :] = np.flip(v, axis=0)
    power = np.eye(np.shape(H)[0])
    remaining, exponent, h_exponent = n, 0, 0
    while remaining > 0:
        if remaining % 2:
            power = np.matmul(power, H)
            exponent += h_exponent
        H = np.matmul(H, H)
        h_exponent *= 2
        if np.abs(H[k - 1, k - 1]) > _EP128:
            H /= _EP128
            h_exponent += _E128
        remaining = remaining // 2
    p = power[k - 1, k - 1]
    for i in range(1, n + 1):
        p = i * p / n
        if np.abs(p) < _EM128:
            p *= _EP128
            exponent -= _E128
    if exponent != 0:
        p = np.ldexp(p, exponent)
    return _clip(p)


def _pomeranz_bounds(i: int, n: int, ll: int, ceilf: int, roundf: int) -> tuple[int, int]:
    """The first and last non-zero entries of row i of Pomeranz's recursion."""
    if i == 0:
        j1, j2 = -ll - ceilf - 1, ll + ceilf - 1
    else:
        ip1div2, ip1mod2 = divmod(i + 1, 2)
        if ip1mod2 == 0:
            if ip1div2 == n + 1:
                j1, j2 = n - ll - ceilf - 1, n + ll + ceilf - 1
            else:
                j1, j2 = ip1div2 - 1 - ll - roundf - 1, ip1div2 + ll - 1 + ceilf - 1
        else:
            j1, j2 = ip1div2 - 1 - ll - 1, ip1div2 + ll + roundf - 1
    return max(j1 + 2, 0), min(j2, n)


def _pomeranz_cdf(n: int, x: np.ndarray) -> Any:
    """Pr(D_n <= x) by Pomeranz's recursion (1974): two rows of Poisson-like convolutions, rescaled."""
    t = n * x
    ll = int(np.floor(t))
    f = 1.0 * (t - ll)
    g = min(f, 1.0 - f)
    ceilf = 1 if f > 0 else 0
    roundf = 1 if f > 0.5 else 0
    powers = 2 * (ll + 1)
    gpower, twogpower, onem2gpower = np.empty(powers), np.empty(powers), np.empty(powers)
    gpower[0] = twogpower[0] = onem2gpower[0] = 1.0
    exponent = 0
    g_over_n, two_g_over_n, one_minus_two_g_over_n = g / n, 2 * g / n, (1 - 2 * g) / n
    for m in range(1, powers):
        gpower[m] = gpower[m - 1] * g_over_n / m
        twogpower[m] = twogpower[m - 1] * two_g_over_n / m
        onem2gpower[m] = onem2gpower[m - 1] * one_minus_two_g_over_n / m
    V0, V1 = np.zeros([powers]), np.zeros([powers])
    V1[0] = 1
    V0s, V1s = 0, 0
    j1, j2 = _pomeranz_bounds(0, n, ll, ceilf, roundf)
    for i in range(1, 2 * n + 2):
        k1 = j1
        V0, V1 = V1, V0
        V0s, V1s = V1s, V0s
        V1.fill(0.0)
        j1, j2 = _pomeranz_bounds(i, n, ll, ceilf, roundf)
        pwrs = gpower if i == 1 or i == 2 * n + 1 else twogpower if i % 2 else onem2gpower
        ln2 = j2 - k1 + 1
        if ln2 > 0:
            conv = np.convolve(V0[k1 - V0s : k1 - V0s + ln2], pwrs[:ln2])
            conv_start, conv_len = j1 - k1, j2 - j1 + 1
            V1[:conv_len] = conv[conv_start : conv_start + conv_len]
            if 0 < np.max(V1) < _EM128:
                V1 *= _EP128
                exponent -= _E128
            V1s = V0s + j1 - k1
    answer = V1[n - V1s]
    for m in range(1, n + 1):
        if np.abs(answer) > _EP128:
            answer *= _EM128
            exponent += _E128
        answer *= m
    if exponent != 0:
        answer = np.ldexp(answer, exponent)
    return _clip(answer)


def _pelz_good_cdf(n: int, x: np.ndarray) -> Any:
    """Pr(D_n <= x) by the Pelz-Good (1976) series in 1 / sqrt(n), via Jacobi theta functions."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    z = np.sqrt(n) * x
    zsquared, zthree, zfour, zsix = z**2, z**3, z**4, z**6
    qlog = -_PI_SQUARED / 8 / zsquared
    if qlog < _MIN_LOG:
        return 0.0
    q = np.exp(qlog)
    k1a, k1b = -zsquared, _PI_SQUARED / 4
    k2a = 6 * zsix + 2 * zfour
    k2b = (2 * zfour - 5 * zsquared) * _PI_SQUARED / 4
    k2c = _PI_FOUR * (1 - 2 * zsquared) / 16
    k3d = _PI_SIX * (5 - 30 * zsquared) / 64
    k3c = _PI_FOUR * (-60 * zsquared + 212 * zfour) / 16
    k3b = _PI_SQUARED * (135 * zfour - 96 * zsix) / 4
    k3a = -30 * zsix - 90 * z**8
    terms = np.zeros(4)
    maxk = int(np.ceil(16 * z / np.pi))
    for k in range(maxk, 0, -1):
        m = 2 * k - 1
        msquared, mfour, msix = m**2, m**4, m**6
        qpower = np.power(q, 8 * k)
        coeffs = np.array(
            [
                1.0,
                k1a + k1b * msquared,
                k2a + k2b * msquared + k2c * mfour,
                k3a + k3b * msquared + k3c * mfour + k3d * msix,
            ]
        )
        terms *= qpower
        terms += coeffs
    terms *= q
    terms *= _SQRT2PI
    terms /= np.array([z, 6 * zfour, 72 * z**7, 6480 * z**10])
    q = np.exp(-_PI_SQUARED / 2 / zsquared)
    ks = np.arange(maxk, 0, -1)
    ksquared = ks**2
    sqrt3z = _SQRT3 * z
    kspi = np.pi * ks
    qpowers = q**ksquared
    k2extra = np.sum(ksquared * qpowers)
    k2extra *= _PI_SQUARED * _SQRT2PI / (-36 * zthree)
    terms[2] += k2extra
    k3extra = np.sum((sqrt3z + kspi) * (sqrt3z - kspi) * ksquared * qpowers)
    k3extra *= _PI_SQUARED * _SQRT2PI / (216 * zsix)
    terms[3] += k3extra
    terms /= np.power(n * 1.0, np.arange(len(terms)) / 2.0)
    return sum(terms)


def kolmogorov_sf(statistic: float, n: int) -> float:
    """Pr(D_n > statistic) for a sample of n, as `scipy.stats.kstwo.sf(statistic, n)`: NaN for a NaN
    statistic or n < 1."""
    if n < 1 or math.isnan(statistic):
        return math.nan
    return float(_sf(np.asarray(statistic, dtype=np.float64), n))


def _sf(x: np.ndarray, n: int) -> Any:
    """The SF at a 0-d float64 array, as scipy receives it from its iterator (numpy's power of an
    array and of a scalar may differ in the last bit)."""
    if x >= 1.0:
        return 0.0
    if x <= 0.0:
        return 1.0
    t = n * x
    if t <= 1.0:  # Ruben-Gambino: 1/2n <= x <= 1/n
        if t <= 0.5:
            return 1.0
        if n <= 140:
            cdf = np.prod(np.arange(1, n + 1) * (1.0 / n) * (2 * t - 1))
        else:
            cdf = np.exp(_log_nfactorial_div_n_pow_n(n) + n * np.log(2 * t - 1))
        return _clip(1.0 - cdf)
    if t >= n - 1:  # Ruben-Gambino
        return _clip(2 * (1.0 - x) ** n)
    if x >= 0.5:  # exact: 2 * smirnov
        return _clip(2 * special.smirnov(n, x))
    nxsquared = t * x
    if n <= 140:
        if nxsquared <= 0.754693:
            return _clip(1.0 - _durbin_cdf(n, x))
        if nxsquared <= 4:
            return _clip(1.0 - _pomeranz_cdf(n, x))
        return _clip(2 * special.smirnov(n, x))  # Miller's approximation
    if nxsquared >= 370.0:
        return 0.0
    if nxsquared >= 2.2:
        return _clip(2 * special.smirnov(n, x))
    if nxsquared >= 18.0:
        cdf = 1.0
    elif n <= 100000 and n * x**1.5 <= 1.4:
        cdf = _durbin_cdf(n, x)
    else:
        cdf = _pelz_good_cdf(n, x)
    return _clip(1.0 - cdf)
