/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private helpers of the reference row engine (row_*.c): exact decimal
 * numbers as java.math.BigDecimal holds them (a signed magnitude of up to
 * 384 bits and a scale that may go negative), and the value conversions the
 * row evaluator and the row aggregates share. Nothing here is shared with
 * the vectorized engine (src/expr/{eval,values,scalar,decimal,agg}.c).
 */
#ifndef EM_EXPR_ROW_INTERNAL_H
#define EM_EXPR_ROW_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ember/datum.h"
#include "ember/value_text.h"

#define RD_LIMBS 12 /* 384 bits: more than 10^115 */

/* An exact decimal number: (neg ? -1 : 1) * mag * 10^-scale. */
typedef struct rdec {
    bool neg;
    int scale;
    uint32_t mag[RD_LIMBS]; /* little-endian base 2^32 */
} rdec;

void em_rdec_from_i128(rdec *x, em_i128 unscaled, int scale);
bool em_rdec_is_zero(const rdec *x);
/* Sets the scale to `scale`, rounding HALF_UP (half away from zero) when digits drop. */
void em_rdec_rescale(rdec *x, int scale);
/* The same with HALF_EVEN instead when half_even (bround). */
void em_rdec_rescale_mode(rdec *x, int scale, bool half_even);
/* java.math.MathContext(38, HALF_UP): at most 38 significant digits. */
void em_rdec_round_digits(rdec *x, int digits);
/* Number of decimal digits of the magnitude (0 has 1). */
int em_rdec_digits(const rdec *x);
/* |v| < 10^p (p <= 38): an unscaled value fits precision p. */
bool em_rdec_fits_i128(em_i128 v, int p);
/* Decimal.toPrecision(p, s, HALF_UP): false when it does not fit p digits. */
bool em_rdec_to_precision(const rdec *x, int p, int s, em_i128 *out);
/* Exact sum / difference; product / quotient / remainder as Spark's Decimal
 * computes them (product and remainder rounded to 38 digits, quotient to
 * scale 38, HALF_UP). Division by zero is the caller's concern. */
void em_rdec_add(const rdec *a, const rdec *b, bool subtract, rdec *out);
void em_rdec_mul(const rdec *a, const rdec *b, rdec *out);
void em_rdec_div(const rdec *a, const rdec *b, rdec *out);
void em_rdec_rem(const rdec *a, const rdec *b, rdec *out);
int em_rdec_cmp(const rdec *a, const rdec *b);
/* Decimal text "[-]digits[.digits]" (plain, exact) into buf (cap >= 140). */
void em_rdec_plain(const rdec *x, char *buf, size_t cap);
/* Parses java.math.BigDecimal's grammar (sign, digits, '.', exponent);
 * false on bad syntax or more digits than the number holds. */
bool em_rdec_parse(const char *p, int64_t n, rdec *out);

#endif
