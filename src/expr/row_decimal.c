/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exact decimals for the row engine, modelled on java.math.BigDecimal: a
 * sign, a magnitude in base 2^32 limbs and a scale. Every operation is the
 * schoolbook one (bit-by-bit long division included): plainly right, which
 * is what an oracle needs; the only shortcuts are skipping limbs that are
 * zero and working nine decimal digits at a time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/value_text.h"
#include "expr/row_internal.h"

/* 10^0 .. 10^38: every precision a decimal type can have */
static const unsigned __int128 pow10_u128[39] = {
    (unsigned __int128)1ull,
    (unsigned __int128)10ull,
    (unsigned __int128)100ull,
    (unsigned __int128)1000ull,
    (unsigned __int128)10000ull,
    (unsigned __int128)100000ull,
    (unsigned __int128)1000000ull,
    (unsigned __int128)10000000ull,
    (unsigned __int128)100000000ull,
    (unsigned __int128)1000000000ull,
    (unsigned __int128)10000000000ull,
    (unsigned __int128)100000000000ull,
    (unsigned __int128)1000000000000ull,
    (unsigned __int128)10000000000000ull,
    (unsigned __int128)100000000000000ull,
    (unsigned __int128)1000000000000000ull,
    (unsigned __int128)10000000000000000ull,
    (unsigned __int128)100000000000000000ull,
    (unsigned __int128)1000000000000000000ull,
    (unsigned __int128)10000000000000000000ull,
    (unsigned __int128)10000000000000000000ull * 10ull,
    (unsigned __int128)10000000000000000000ull * 100ull,
    (unsigned __int128)10000000000000000000ull * 1000ull,
    (unsigned __int128)10000000000000000000ull * 10000ull,
    (unsigned __int128)10000000000000000000ull * 100000ull,
    (unsigned __int128)10000000000000000000ull * 1000000ull,
    (unsigned __int128)10000000000000000000ull * 10000000ull,
    (unsigned __int128)10000000000000000000ull * 100000000ull,
    (unsigned __int128)10000000000000000000ull * 1000000000ull,
    (unsigned __int128)10000000000000000000ull * 10000000000ull,
    (unsigned __int128)10000000000000000000ull * 100000000000ull,
    (unsigned __int128)10000000000000000000ull * 1000000000000ull,
    (unsigned __int128)10000000000000000000ull * 10000000000000ull,
    (unsigned __int128)10000000000000000000ull * 100000000000000ull,
    (unsigned __int128)10000000000000000000ull * 1000000000000000ull,
    (unsigned __int128)10000000000000000000ull * 10000000000000000ull,
    (unsigned __int128)10000000000000000000ull * 100000000000000000ull,
    (unsigned __int128)10000000000000000000ull * 1000000000000000000ull,
    (unsigned __int128)10000000000000000000ull * 10000000000000000000ull,
};

static bool m_zero(const uint32_t *a) {
    for (int i = 0; i < RD_LIMBS; i++)
        if (a[i])
            return false;
    return true;
}

static int m_cmp(const uint32_t *a, const uint32_t *b) {
    for (int i = RD_LIMBS - 1; i >= 0; i--)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

static void m_add(uint32_t *a, const uint32_t *b) {
    uint64_t carry = 0;
    for (int i = 0; i < RD_LIMBS; i++) {
        uint64_t s = (uint64_t)a[i] + b[i] + carry;
        a[i] = (uint32_t)s;
        carry = s >> 32;
    }
}

/* a -= b, a >= b */
static void m_sub(uint32_t *a, const uint32_t *b) {
    int64_t borrow = 0;
    for (int i = 0; i < RD_LIMBS; i++) {
        int64_t d = (int64_t)a[i] - b[i] - borrow;
        borrow = d < 0;
        a[i] = (uint32_t)(d + (borrow ? ((int64_t)1 << 32) : 0));
    }
}

static int m_used(const uint32_t *a);

/* a *= k; only the limbs in use and the carry out of them change */
static void m_mul_small(uint32_t *a, uint32_t k) {
    uint64_t carry = 0;
    int n = m_used(a);
    for (int i = 0; i < RD_LIMBS && (i < n || carry); i++) {
        uint64_t p = (uint64_t)a[i] * k + carry;
        a[i] = (uint32_t)p;
        carry = p >> 32;
    }
}

/* Limbs in use: the highest non-zero limb + 1 (0 for zero). */
static int m_used(const uint32_t *a) {
    int n = RD_LIMBS;
    while (n > 0 && a[n - 1] == 0)
        n--;
    return n;
}

static uint32_t m_div_small(uint32_t *a, uint32_t k) {
    uint64_t rem = 0;
    for (int i = m_used(a) - 1; i >= 0; i--) {
        uint64_t cur = (rem << 32) | a[i];
        a[i] = (uint32_t)(cur / k);
        rem = cur % k;
    }
    return (uint32_t)rem;
}

static void m_mul(const uint32_t *a, const uint32_t *b, uint32_t *out) {
    uint32_t r[RD_LIMBS] = {0};
    int na = m_used(a), nb = m_used(b);
    for (int i = 0; i < na; i++) {
        uint64_t carry = 0;
        if (!a[i])
            continue;
        for (int j = 0; i + j < RD_LIMBS && (j < nb || carry); j++) {
            uint64_t p = (uint64_t)a[i] * b[j] + r[i + j] + carry;
            r[i + j] = (uint32_t)p;
            carry = p >> 32;
        }
    }
    memcpy(out, r, sizeof r);
}

/* a <<= 1 over the first n limbs, shifting in `bit`. */
static void m_shl1(uint32_t *a, int n, uint32_t bit) {
    for (int i = n - 1; i > 0; i--)
        a[i] = (a[i] << 1) | (a[i - 1] >> 31);
    a[0] = (a[0] << 1) | bit;
}

/* q = a / b, r = a % b, b != 0. A divisor of one limb divides limb by
 * limb; a wider one runs restoring division, one bit of a at a time from
 * its highest set bit (the remainder stays below b, so it needs at most
 * b's limbs plus one). */
static void m_divmod(const uint32_t *a, const uint32_t *b, uint32_t *q, uint32_t *r) {
    uint32_t qq[RD_LIMBS] = {0}, rr[RD_LIMBS] = {0};
    int nb = m_used(b);
    if (nb <= 1) {
        memcpy(qq, a, sizeof qq);
        rr[0] = m_div_small(qq, b[0]);
    } else {
        int width = nb + 1 < RD_LIMBS ? nb + 1 : RD_LIMBS;
        for (int bit = m_used(a) * 32 - 1; bit >= 0; bit--) {
            m_shl1(rr, width, (a[bit / 32] >> (bit % 32)) & 1);
            if (m_cmp(rr, b) >= 0) {
                m_sub(rr, b);
                qq[bit / 32] |= 1u << (bit % 32);
            }
        }
    }
    memcpy(q, qq, sizeof qq);
    memcpy(r, rr, sizeof rr);
}

static void m_pow10(uint32_t *a, int k) {
    memset(a, 0, sizeof(uint32_t) * RD_LIMBS);
    a[0] = 1;
    for (; k >= 9; k -= 9)
        m_mul_small(a, 1000000000u);
    for (; k > 0; k--)
        m_mul_small(a, 10);
}

/* a = a / 10^k truncated, nine digits at a time; true when a non-zero
 * remainder was dropped. */
static bool m_div_pow10(uint32_t *a, int k) {
    static const uint32_t p10[10] = {1,      10,      100,      1000,      10000,
                                     100000, 1000000, 10000000, 100000000, 1000000000};
    bool dropped = false;
    for (; k > 9; k -= 9)
        dropped |= m_div_small(a, p10[9]) != 0;
    dropped |= m_div_small(a, p10[k]) != 0;
    return dropped;
}

/* a = a / 10^k rounded on the magnitude: HALF_UP looks only at the first
 * dropped digit; HALF_EVEN also at the rest and at the last kept digit. */
static void m_div_pow10_round(uint32_t *a, int k, bool half_even) {
    bool rest = m_div_pow10(a, k - 1);
    uint32_t first_dropped = m_div_small(a, 10);
    bool up = first_dropped >= 5;
    if (half_even && first_dropped == 5 && !rest)
        up = a[0] & 1;
    if (up) {
        uint32_t one[RD_LIMBS] = {1};
        m_add(a, one);
    }
}

void em_rdec_from_i128(rdec *x, em_i128 v, int scale) {
    memset(x, 0, sizeof *x);
    x->scale = scale;
    x->neg = v < 0;
    unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    for (int i = 0; i < 4; i++) {
        x->mag[i] = (uint32_t)u;
        u >>= 32;
    }
}

bool em_rdec_is_zero(const rdec *x) { return m_zero(x->mag); }

int em_rdec_digits(const rdec *x) {
    static const uint64_t p10[20] = {1ull,
                                     10ull,
                                     100ull,
                                     1000ull,
                                     10000ull,
                                     100000ull,
                                     1000000ull,
                                     10000000ull,
                                     100000000ull,
                                     1000000000ull,
                                     10000000000ull,
                                     100000000000ull,
                                     1000000000000ull,
                                     10000000000000ull,
                                     100000000000000ull,
                                     1000000000000000ull,
                                     10000000000000000ull,
                                     100000000000000000ull,
                                     1000000000000000000ull,
                                     10000000000000000000ull};
    uint32_t t[RD_LIMBS];
    memcpy(t, x->mag, sizeof t);
    int n = 0;
    /* nine digits at a time down to 64 bits, then a table */
    while (m_used(t) > 2) {
        m_div_small(t, 1000000000u);
        n += 9;
    }
    uint64_t v = (uint64_t)t[1] << 32 | t[0];
    int d = 1;
    while (d < 20 && v >= p10[d])
        d++;
    return n + d;
}

void em_rdec_rescale(rdec *x, int scale) { em_rdec_rescale_mode(x, scale, false); }

void em_rdec_rescale_mode(rdec *x, int scale, bool half_even) {
    if (scale > x->scale) {
        int k = scale - x->scale;
        for (; k >= 9; k -= 9)
            m_mul_small(x->mag, 1000000000u);
        for (; k > 0; k--)
            m_mul_small(x->mag, 10);
    } else if (scale < x->scale) {
        m_div_pow10_round(x->mag, x->scale - scale, half_even);
    }
    x->scale = scale;
    if (m_zero(x->mag))
        x->neg = false;
}

void em_rdec_round_digits(rdec *x, int digits) {
    if (digits == 38 && m_used(x->mag) <= 3)
        return; /* below 2^96 < 10^38 */
    int d = em_rdec_digits(x);
    if (d > digits) {
        em_rdec_rescale(x, x->scale - (d - digits));
        /* 99..9 rounded up gains a digit: BigDecimal drops one more (a zero) */
        if (em_rdec_digits(x) > digits)
            em_rdec_rescale(x, x->scale - 1);
    }
}

bool em_rdec_fits_i128(em_i128 v, int p) {
    unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    return u < pow10_u128[p];
}

bool em_rdec_to_precision(const rdec *x, int p, int s, em_i128 *out) {
    rdec t = *x;
    em_rdec_rescale(&t, s);
    if (m_used(t.mag) > 4)
        return false; /* beyond 128 bits: more than 38 digits */
    unsigned __int128 u = 0;
    for (int i = 3; i >= 0; i--)
        u = (u << 32) | t.mag[i];
    if (u >= pow10_u128[p])
        return false;
    *out = t.neg ? -(em_i128)u : (em_i128)u;
    return true;
}

void em_rdec_add(const rdec *a, const rdec *b, bool subtract, rdec *out) {
    rdec x = *a, y = *b;
    if (subtract)
        y.neg = !y.neg;
    int s = x.scale > y.scale ? x.scale : y.scale;
    em_rdec_rescale(&x, s);
    em_rdec_rescale(&y, s);
    if (subtract && em_rdec_is_zero(&y))
        y.neg = false;
    if (x.neg == y.neg) {
        m_add(x.mag, y.mag);
        *out = x;
    } else if (m_cmp(x.mag, y.mag) >= 0) {
        m_sub(x.mag, y.mag);
        *out = x;
    } else {
        m_sub(y.mag, x.mag);
        *out = y;
    }
    if (m_zero(out->mag))
        out->neg = false;
}

void em_rdec_mul(const rdec *a, const rdec *b, rdec *out) {
    rdec r;
    memset(&r, 0, sizeof r);
    m_mul(a->mag, b->mag, r.mag);
    r.scale = a->scale + b->scale;
    r.neg = a->neg != b->neg && !m_zero(r.mag);
    em_rdec_round_digits(&r, 38);
    *out = r;
}

void em_rdec_div(const rdec *a, const rdec *b, rdec *out) {
    /* a/b at scale 38: |a| * 10^(38 + sb) / (|b| * 10^sa), HALF_UP */
    uint32_t num[RD_LIMBS], den[RD_LIMBS], p[RD_LIMBS], q[RD_LIMBS], r[RD_LIMBS];
    int e_num = 38 + b->scale, e_den = a->scale;
    int common = e_num < e_den ? e_num : e_den;
    e_num -= common;
    e_den -= common;
    m_pow10(p, e_num);
    m_mul(a->mag, p, num);
    m_pow10(p, e_den);
    m_mul(b->mag, p, den);
    m_divmod(num, den, q, r);
    m_add(r, r);
    if (m_cmp(r, den) >= 0) {
        uint32_t one[RD_LIMBS] = {1};
        m_add(q, one);
    }
    memset(out, 0, sizeof *out);
    memcpy(out->mag, q, sizeof q);
    out->scale = 38;
    out->neg = a->neg != b->neg && !m_zero(q);
}

void em_rdec_rem(const rdec *a, const rdec *b, rdec *out) {
    rdec x = *a, y = *b;
    int s = x.scale > y.scale ? x.scale : y.scale;
    em_rdec_rescale(&x, s);
    em_rdec_rescale(&y, s);
    uint32_t q[RD_LIMBS];
    memset(out, 0, sizeof *out);
    m_divmod(x.mag, y.mag, q, out->mag);
    out->scale = s;
    out->neg = a->neg && !m_zero(out->mag);
    em_rdec_round_digits(out, 38);
}

int em_rdec_cmp(const rdec *a, const rdec *b) {
    rdec d;
    em_rdec_add(a, b, true, &d);
    if (em_rdec_is_zero(&d))
        return 0;
    return d.neg ? -1 : 1;
}

void em_rdec_plain(const rdec *x, char *buf, size_t cap) {
    char digits[200];
    int n = 0;
    uint32_t t[RD_LIMBS];
    memcpy(t, x->mag, sizeof t);
    do {
        digits[n++] = (char)('0' + m_div_small(t, 10));
    } while (!m_zero(t) && n < (int)sizeof digits);
    /* digits are reversed; lay out with the point `scale` from the right */
    char out[260];
    int o = 0;
    if (x->neg)
        out[o++] = '-';
    int s = x->scale;
    if (s <= 0) {
        for (int i = n - 1; i >= 0; i--)
            out[o++] = digits[i];
        for (int i = 0; i < -s && o < 250; i++)
            out[o++] = '0';
    } else {
        int int_digits = n - s;
        if (int_digits <= 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -int_digits && o < 250; i++)
                out[o++] = '0';
            for (int i = n - 1; i >= 0 && o < 258; i--)
                out[o++] = digits[i];
        } else {
            for (int i = n - 1; i >= 0 && o < 258; i--) {
                out[o++] = digits[i];
                if (i == s)
                    out[o++] = '.';
            }
        }
    }
    out[o] = '\0';
    snprintf(buf, cap, "%s", out);
}

bool em_rdec_parse(const char *p, int64_t n, rdec *out) {
    memset(out, 0, sizeof *out);
    int64_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    int digits = 0, frac = 0, sig = 0;
    bool dot = false;
    for (; i < n; i++) {
        char c = p[i];
        if (c == '.' && !dot) {
            dot = true;
            continue;
        }
        if (c < '0' || c > '9')
            break;
        digits++;
        if (dot)
            frac++;
        if (sig > 0 || c != '0')
            sig++;
        if (sig > 110)
            return false;
        m_mul_small(out->mag, 10);
        uint32_t d[RD_LIMBS] = {(uint32_t)(c - '0')};
        m_add(out->mag, d);
    }
    if (digits == 0)
        return false;
    int64_t exp = 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            eneg = p[i++] == '-';
        if (i >= n)
            return false;
        for (; i < n; i++) {
            if (p[i] < '0' || p[i] > '9')
                return false;
            exp = exp * 10 + (p[i] - '0');
            if (exp > 100000)
                return false;
        }
        if (eneg)
            exp = -exp;
    }
    if (i != n)
        return false;
    out->scale = (int)(frac - exp);
    out->neg = neg && !m_zero(out->mag);
    return true;
}

