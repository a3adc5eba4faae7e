/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exact decimal arithmetic on 128-bit unscaled values, following Spark's
 * Decimal class (sql/catalyst/.../types/Decimal.scala), which delegates to
 * java.math.BigDecimal:
 *
 *   a + b, a - b   exact at scale max(sa, sb)
 *   a * b          exact product rounded to 38 significant digits, HALF_UP
 *                  (MathContext(38, HALF_UP))
 *   a / b          quotient at scale 38, HALF_UP (divide(b, 38, HALF_UP))
 *
 * and then, as every decimal-typed expression does, toPrecision(p, s,
 * ROUND_HALF_UP): rescale to the result scale rounding half away from zero,
 * and report overflow when the value needs more than p digits. Intermediate
 * values can need up to ~380 bits (a 38-digit dividend shifted by 76 digits),
 * so the slow paths use a small fixed-size unsigned bignum (8 x 64-bit words)
 * with a sign kept aside; the fast paths stay in __int128.
 */
#ifndef EM_EXPR_DECIMAL_H
#define EM_EXPR_DECIMAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/types.h"

typedef unsigned __int128 em_u128;

extern const em_i128 em_dec_pow10_table[39];

/* 10^k for 0 <= k <= 38 (k is clamped to that range: callers never ask for
 * more, since 10^39 does not fit in 128 bits). */
static inline em_i128 em_dec_pow10(int k) {
    return em_dec_pow10_table[k < 0 ? 0 : (k > 38 ? 38 : k)];
}
/* |v| < 10^precision. */
static inline bool em_dec_fits(em_i128 v, int precision) {
    if (precision >= 39)
        return true;
    em_i128 p = em_dec_pow10(precision);
    return v < p && v > -p;
}
/* Number of decimal digits of |v| (1 for 0). */
int em_dec_digits(em_i128 v);

/*
 * Rescales v from scale `from` to scale `to`, HALF_UP when digits are
 * dropped. Returns false when the result does not fit in `precision` digits
 * (precision 0 means only "fits in 128 bits").
 */
bool em_dec_rescale(em_i128 v, int from, int to, int precision, em_i128 *out);

/* The arithmetic operators; each returns false on overflow of the result
 * type (precision rp, scale rs). Division by zero is the caller's check. */
bool em_dec_add(em_i128 a, int sa, em_i128 b, int sb, bool subtract, int rp, int rs, em_i128 *out);
bool em_dec_mul(em_i128 a, int sa, em_i128 b, int sb, int rp, int rs, em_i128 *out);
bool em_dec_div(em_i128 a, int sa, em_i128 b, int sb, int rp, int rs, em_i128 *out);
/* Java BigDecimal.remainder: sign of the dividend, exact at scale max(sa,sb). */
bool em_dec_rem(em_i128 a, int sa, em_i128 b, int sb, int rp, int rs, em_i128 *out);

/* Compares a (scale sa) with b (scale sb) by value: -1, 0, 1. */
int em_dec_cmp(em_i128 a, int sa, em_i128 b, int sb);

/* Parses Java BigDecimal syntax ([+-]digits[.digits][(e|E)[+-]digits], also
 * ".5" and "5.") and converts to scale `scale` with HALF_UP; false when the
 * text is not a number or the value does not fit `precision` digits.
 * *bad_syntax tells the two apart. */
bool em_dec_parse(const char *p, int64_t n, int precision, int scale, em_i128 *out,
                  bool *bad_syntax);
/* The double closest to v / 10^scale (correctly rounded, like
 * BigDecimal.doubleValue). */
double em_dec_to_double(em_i128 v, int scale);
/* Decimal from a double as Spark's Decimal(Double) does: through the
 * shortest decimal text of the double, then HALF_UP to (precision, scale).
 * False for NaN/infinity or overflow. */
bool em_dec_from_double(double d, int precision, int scale, em_i128 *out);

#endif
