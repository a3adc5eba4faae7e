/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exact decimal arithmetic (see decimal.h for the rules followed).
 *
 * Values are signed __int128 unscaled integers. Every operation works on the
 * magnitude and applies the sign at the end, because HALF_UP rounds half
 * away from zero and is therefore symmetric. When a magnitude may exceed 128
 * bits (products of two 38-digit values, dividends shifted by up to 76
 * digits) it is held in a `big`: eight little-endian 64-bit words, enough for
 * 10^115. Division of a big by a divisor below 2^127 runs bit by bit with a
 * 128-bit remainder, which cannot overflow because the remainder stays below
 * the divisor before each shift.
 */
#include "ember/value_text.h"
#include "expr/decimal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG_WORDS 8

typedef struct big {
    uint64_t w[BIG_WORDS];
} big;

static const em_u128 U64 = (em_u128)1 << 64;

const em_i128 em_dec_pow10_table[39] = {
    (em_i128)1ULL,
    (em_i128)10ULL,
    (em_i128)100ULL,
    (em_i128)1000ULL,
    (em_i128)10000ULL,
    (em_i128)100000ULL,
    (em_i128)1000000ULL,
    (em_i128)10000000ULL,
    (em_i128)100000000ULL,
    (em_i128)1000000000ULL,
    (em_i128)10000000000ULL,
    (em_i128)100000000000ULL,
    (em_i128)1000000000000ULL,
    (em_i128)10000000000000ULL,
    (em_i128)100000000000000ULL,
    (em_i128)1000000000000000ULL,
    (em_i128)10000000000000000ULL,
    (em_i128)100000000000000000ULL,
    (em_i128)1000000000000000000ULL,
    (em_i128)10000000000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10ULL,
    (em_i128)10000000000000000000ULL * (em_i128)100ULL,
    (em_i128)10000000000000000000ULL * (em_i128)1000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)100000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)1000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)100000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)1000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)100000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)1000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)100000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)1000000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10000000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)100000000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)1000000000000000000ULL,
    (em_i128)10000000000000000000ULL * (em_i128)10000000000000000000ULL};

static em_u128 pow10u(int k) { return (em_u128)em_dec_pow10(k); }

static em_u128 mag(em_i128 v) { return v < 0 ? (em_u128)0 - (em_u128)v : (em_u128)v; }

int em_dec_digits(em_i128 v) {
    em_u128 m = mag(v);
    int d = 1;
    while (d < 39 && m >= pow10u(d))
        d++;
    return d;
}

/* ---------------------------------------------------------------- bignum */

static void big_from(big *b, em_u128 v) {
    memset(b, 0, sizeof *b);
    b->w[0] = (uint64_t)v;
    b->w[1] = (uint64_t)(v >> 64);
}

static bool big_fits_u128(const big *b, em_u128 *out) {
    for (int i = 2; i < BIG_WORDS; i++)
        if (b->w[i])
            return false;
    *out = ((em_u128)b->w[1] << 64) | b->w[0];
    return true;
}

static bool big_is_zero(const big *b) {
    for (int i = 0; i < BIG_WORDS; i++)
        if (b->w[i])
            return false;
    return true;
}

/* b *= m (m < 2^64); the product must fit (callers bound their sizes). */
static void big_mul_small(big *b, uint64_t m) {
    em_u128 carry = 0;
    for (int i = 0; i < BIG_WORDS; i++) {
        em_u128 t = (em_u128)b->w[i] * m + carry;
        b->w[i] = (uint64_t)t;
        carry = t >> 64;
    }
}

static void big_mul_pow10(big *b, int k) {
    while (k > 0) {
        int step = k > 19 ? 19 : k;
        big_mul_small(b, (uint64_t)pow10u(step));
        k -= step;
    }
}

/* b = x * y for 128-bit magnitudes. */
static void big_mul_u128(big *b, em_u128 x, em_u128 y) {
    uint64_t xs[2] = {(uint64_t)x, (uint64_t)(x >> 64)};
    uint64_t ys[2] = {(uint64_t)y, (uint64_t)(y >> 64)};
    memset(b, 0, sizeof *b);
    for (int i = 0; i < 2; i++) {
        em_u128 carry = 0;
        for (int j = 0; j < 2; j++) {
            em_u128 t = (em_u128)xs[i] * ys[j] + b->w[i + j] + carry;
            b->w[i + j] = (uint64_t)t;
            carry = t >> 64;
        }
        b->w[i + 2] = (uint64_t)carry;
    }
}

static int big_top_bit(const big *b) {
    for (int i = BIG_WORDS - 1; i >= 0; i--)
        if (b->w[i])
            return i * 64 + 63 - __builtin_clzll(b->w[i]);
    return -1;
}

/* q = n / d, *rem = n % d, for 0 < d < 2^127. */
static void big_divmod(const big *n, em_u128 d, big *q, em_u128 *rem) {
    memset(q, 0, sizeof *q);
    em_u128 r = 0;
    if (d < U64) {
        /* word-wise long division: each partial dividend stays below d * 2^64 */
        for (int i = BIG_WORDS - 1; i >= 0; i--) {
            em_u128 cur = (r << 64) | n->w[i];
            q->w[i] = (uint64_t)(cur / d);
            r = cur % d;
        }
        *rem = r;
        return;
    }
    for (int bit = big_top_bit(n); bit >= 0; bit--) {
        r = (r << 1) | ((n->w[bit / 64] >> (bit % 64)) & 1);
        if (r >= d) {
            r -= d;
            q->w[bit / 64] |= (uint64_t)1 << (bit % 64);
        }
    }
    *rem = r;
}

/* n / d rounded HALF_UP (magnitudes). */
static void big_div_round(const big *n, em_u128 d, big *q) {
    em_u128 r;
    big_divmod(n, d, q, &r);
    if (r >= d - r) { /* 2r >= d without overflowing */
        em_u128 carry = 1;
        for (int i = 0; i < BIG_WORDS && carry; i++) {
            em_u128 t = (em_u128)q->w[i] + carry;
            q->w[i] = (uint64_t)t;
            carry = t >> 64;
        }
    }
}

/* Divides by 10^k with HALF_UP, k possibly above 38. HALF_UP only looks at
 * the first dropped digit, so truncate by 10^(k-1) in chunks (truncations
 * compose exactly) and decide on the last digit. */
static void big_div_pow10_round(big *b, int k) {
    if (k <= 0)
        return;
    em_u128 small;
    if (k <= 38 && big_fits_u128(b, &small)) {
        /* the common case: one division, in 64 bits when both fit */
        em_u128 p = pow10u(k), q, r;
        if ((small >> 64) == 0 && k <= 19) {
            uint64_t s64 = (uint64_t)small, p64 = (uint64_t)p;
            q = s64 / p64;
            r = s64 % p64;
        } else {
            q = small / p;
            r = small % p;
        }
        big_from(b, q + (r >= p - r)); /* HALF_UP: r >= p / 2 */
        return;
    }
    int rest = k - 1;
    while (rest > 0) {
        int step = rest > 38 ? 38 : rest;
        big q;
        em_u128 r;
        big_divmod(b, pow10u(step), &q, &r);
        *b = q;
        rest -= step;
    }
    big q;
    big_div_round(b, 10, &q);
    *b = q;
}

/* Number of decimal digits of a big (1 for 0). */
static int big_digits(const big *b) {
    em_u128 small;
    if (big_fits_u128(b, &small)) {
        int d = 1;
        while (d < 39 && small >= pow10u(d))
            d++;
        return d;
    }
    big t = *b;
    int d = 0;
    em_u128 r;
    big q;
    while (!big_fits_u128(&t, &small)) {
        big_divmod(&t, pow10u(19), &q, &r);
        t = q;
        d += 19;
    }
    int s = 1;
    while (s < 39 && small >= pow10u(s))
        s++;
    return d + s;
}

/* Applies sign and checks the result precision. */
static bool big_finish(const big *m, bool neg, int rp, em_i128 *out) {
    em_u128 v;
    if (!big_fits_u128(m, &v) || v > (em_u128)(((em_u128)1 << 127) - 1))
        return false;
    em_i128 r = neg ? -(em_i128)v : (em_i128)v;
    if (rp > 0 && !em_dec_fits(r, rp))
        return false;
    *out = r;
    return true;
}

/* Rescales a magnitude from scale `from` to `to` (HALF_UP when lowering). */
static void big_rescale(big *m, int from, int to) {
    if (to > from)
        big_mul_pow10(m, to - from);
    else if (to < from)
        big_div_pow10_round(m, from - to);
}

/* ---------------------------------------------------------------- operations */

bool em_dec_rescale(em_i128 v, int from, int to, int precision, em_i128 *out) {
    if (from == to) {
        if (precision > 0 && !em_dec_fits(v, precision))
            return false;
        *out = v;
        return true;
    }
    big m;
    big_from(&m, mag(v));
    big_rescale(&m, from, to);
    return big_finish(&m, v < 0, precision, out);
}

bool em_dec_add(em_i128 a, int sa, em_i128 b, int sb, bool subtract, int rp, int rs, em_i128 *out) {
    int s = sa > sb ? sa : sb;
    if (subtract)
        b = -b;
    /* aligned operands of at most 38 digits plus up to 38 digits of shift fit
     * 2^253; add in the signed bignum domain via two's complement of words. */
    big x, y;
    big_from(&x, mag(a));
    big_from(&y, mag(b));
    big_mul_pow10(&x, s - sa);
    big_mul_pow10(&y, s - sb);
    bool nx = a < 0, ny = b < 0;
    big r;
    bool neg;
    if (nx == ny) {
        em_u128 carry = 0;
        for (int i = 0; i < BIG_WORDS; i++) {
            em_u128 t = (em_u128)x.w[i] + y.w[i] + carry;
            r.w[i] = (uint64_t)t;
            carry = t >> 64;
        }
        neg = nx;
    } else {
        /* subtract the smaller magnitude from the larger */
        int c = 0;
        for (int i = BIG_WORDS - 1; i >= 0 && c == 0; i--)
            c = x.w[i] < y.w[i] ? -1 : x.w[i] > y.w[i];
        const big *hi = c >= 0 ? &x : &y, *lo = c >= 0 ? &y : &x;
        uint64_t borrow = 0;
        for (int i = 0; i < BIG_WORDS; i++) {
            uint64_t h = hi->w[i], l = lo->w[i];
            uint64_t d = h - l - borrow;
            borrow = (h < l) || (h - l < borrow);
            r.w[i] = d;
        }
        neg = c >= 0 ? nx : ny;
    }
    big_rescale(&r, s, rs);
    if (big_is_zero(&r))
        neg = false;
    return big_finish(&r, neg, rp, out);
}

bool em_dec_mul(em_i128 a, int sa, em_i128 b, int sb, int rp, int rs, em_i128 *out) {
    big m;
    big_mul_u128(&m, mag(a), mag(b));
    int s = sa + sb;
    /* MathContext(38, HALF_UP): round the exact product to 38 digits first */
    int d = big_digits(&m);
    if (d > EM_DECIMAL_MAX_PRECISION) {
        big_div_pow10_round(&m, d - EM_DECIMAL_MAX_PRECISION);
        s -= d - EM_DECIMAL_MAX_PRECISION;
        /* rounding 999.. up adds a digit; BigDecimal then drops one more */
        if (big_digits(&m) > EM_DECIMAL_MAX_PRECISION) {
            big_div_pow10_round(&m, 1);
            s -= 1;
        }
    }
    big_rescale(&m, s, rs);
    return big_finish(&m, (a < 0) != (b < 0) && !big_is_zero(&m), rp, out);
}

bool em_dec_div(em_i128 a, int sa, em_i128 b, int sb, int rp, int rs, em_i128 *out) {
    /* q38 = a / b at scale 38, HALF_UP: (|a| * 10^(38 - sa + sb)) / |b| */
    big n, q;
    big_from(&n, mag(a));
    int shift = EM_DECIMAL_MAX_PRECISION - sa + sb;
    em_u128 d = mag(b);
    if (shift >= 0) {
        big_mul_pow10(&n, shift);
    } else {
        /* only with a negative scale, which Spark disallows by default */
        big_from(&n, mag(a));
        big dd;
        big_from(&dd, d);
        big_mul_pow10(&dd, -shift);
        em_u128 dv;
        if (!big_fits_u128(&dd, &dv))
            return false;
        d = dv;
    }
    big_div_round(&n, d, &q);
    big_rescale(&q, EM_DECIMAL_MAX_PRECISION, rs);
    return big_finish(&q, (a < 0) != (b < 0) && !big_is_zero(&q), rp, out);
}

bool em_dec_rem(em_i128 a, int sa, em_i128 b, int sb, int rp, int rs, em_i128 *out) {
    int s = sa > sb ? sa : sb;
    big x, y, q;
    big_from(&x, mag(a));
    big_from(&y, mag(b));
    big_mul_pow10(&x, s - sa);
    big_mul_pow10(&y, s - sb);
    em_u128 d, r;
    if (!big_fits_u128(&y, &d) || d >= ((em_u128)1 << 127))
        return false;
    big_divmod(&x, d, &q, &r);
    big m;
    big_from(&m, r);
    big_rescale(&m, s, rs);
    return big_finish(&m, a < 0 && !big_is_zero(&m), rp, out);
}

int em_dec_cmp(em_i128 a, int sa, em_i128 b, int sb) {
    if (sa == sb)
        return a < b ? -1 : a > b;
    if ((a < 0) != (b < 0) || a == 0 || b == 0) {
        int sgn_a = a < 0 ? -1 : a > 0, sgn_b = b < 0 ? -1 : b > 0;
        return sgn_a < sgn_b ? -1 : sgn_a > sgn_b;
    }
    int s = sa > sb ? sa : sb;
    big x, y;
    big_from(&x, mag(a));
    big_from(&y, mag(b));
    big_mul_pow10(&x, s - sa);
    big_mul_pow10(&y, s - sb);
    int c = 0;
    for (int i = BIG_WORDS - 1; i >= 0 && c == 0; i--)
        c = x.w[i] < y.w[i] ? -1 : x.w[i] > y.w[i];
    return a < 0 ? -c : c;
}

/* ---------------------------------------------------------------- text */

bool em_dec_parse(const char *p, int64_t n, int precision, int scale, em_i128 *out,
                  bool *bad_syntax) {
    *bad_syntax = true;
    int64_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    big m;
    big_from(&m, 0);
    int digits = 0, frac = 0, sig = 0;
    bool dot = false;
    int64_t dropped_scale = 0; /* digits beyond what the bignum needs to hold */
    bool sticky = false;
    for (; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9') {
            digits++;
            if (sig > 0 || c != '0')
                sig++;
            if (sig > 100) {
                /* far beyond any precision: keep magnitude via the scale */
                if (c != '0')
                    sticky = true;
                if (!dot)
                    dropped_scale--;
                continue;
            }
            big_mul_small(&m, 10);
            big t;
            big_from(&t, (em_u128)(c - '0'));
            em_u128 carry = 0;
            for (int w = 0; w < BIG_WORDS; w++) {
                em_u128 s = (em_u128)m.w[w] + t.w[w] + carry;
                m.w[w] = (uint64_t)s;
                carry = s >> 64;
            }
            if (dot)
                frac++;
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (digits == 0)
        return false;
    int64_t exp = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            eneg = p[i++] == '-';
        int64_t ed = 0;
        if (i >= n)
            return false;
        for (; i < n; i++) {
            if (p[i] < '0' || p[i] > '9')
                return false;
            if (exp < 1000000000)
                exp = exp * 10 + (p[i] - '0');
            ed++;
        }
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        return false;
    *bad_syntax = false;
    (void)sticky;
    /* value = m * 10^(exp - frac - dropped_scale) */
    int64_t cur_scale = (int64_t)frac - exp + dropped_scale;
    if (big_is_zero(&m)) {
        *out = 0;
        return true;
    }
    int64_t shift = scale - cur_scale;
    if (shift > 80)
        return false;
    if (shift < -200) {
        *out = 0;
        return true;
    }
    if (shift >= 0) {
        if (big_digits(&m) + shift > 80)
            return false;
        big_mul_pow10(&m, (int)shift);
    } else {
        big_div_pow10_round(&m, (int)-shift);
    }
    return big_finish(&m, neg && !big_is_zero(&m), precision, out);
}

double em_dec_to_double(em_i128 v, int scale) {
    if (scale == 0 && mag(v) < ((em_u128)1 << 53))
        return (double)v;
    /* strtod rounds correctly, matching BigDecimal.doubleValue */
    char buf[64];
    em_u128 m = mag(v);
    char digits[41];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m);
    int k = 0;
    if (v < 0)
        buf[k++] = '-';
    while (nd > 0)
        buf[k++] = digits[--nd];
    k += snprintf(buf + k, sizeof buf - (size_t)k, "e-%d", scale);
    return strtod(buf, NULL);
}

bool em_dec_from_double(double d, int precision, int scale, em_i128 *out) {
    if (!isfinite(d))
        return false;
    /* Most values need no text: the shortest digits of d lie within half an
     * ulp of d, so d * 10^scale rounds HALF_UP to the same integer unless its
     * fraction is within that error of one half. Below 2^40 the error
     * (a few ulps of the product, under 2^-11) is far inside the margin. */
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                                   1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
    if (scale >= 0 && scale <= 18) {
        double m = fabs(d * pow10[scale]);
        if (m < 1099511627776.0) {
            double whole = floor(m), frac = m - whole;
            if (fabs(frac - 0.5) > 1e-3) {
                em_i128 v = (em_i128)((int64_t)whole + (frac > 0.5));
                if (d < 0)
                    v = -v;
                if (precision > 0 && !em_dec_fits(v, precision))
                    return false;
                *out = v;
                return true;
            }
        }
    }
    /* shortest round-trip text, as Double.toString feeds BigDecimal */
    char buf[40];
    em_shortest_e(d, false, buf, sizeof buf);
    bool bad;
    return em_dec_parse(buf, (int64_t)strlen(buf), precision, scale, out, &bad);
}
