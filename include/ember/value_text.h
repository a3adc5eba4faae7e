/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The canonical text of one value, as the CLI prints it and as interop tests
 * compare it with DuckDB and Polars, plus a growable string builder and JSON
 * and CSV escaping of that text.
 *
 * Format by type (null is not text: em_value_text reports it through a flag
 * and the caller decides how to show it):
 *   boolean          true | false
 *   integers         decimal digits, '-' for negatives: -128, 9223372036854775807
 *   float, double    the shortest decimal that reads back to the same value
 *                    (9 significant digits at most for float, 17 for double),
 *                    laid out as Python's repr does: fixed notation when the
 *                    decimal exponent is in [-4, 16), with ".0" on integral
 *                    values ("1.5", "100.0", "0.001", "-0.0"), otherwise
 *                    scientific with a signed two-digit-minimum exponent
 *                    ("1e+20", "1.5e-07"); "NaN", "Infinity", "-Infinity"
 *   decimal(p,s)     the unscaled value with the point inserted, exactly s
 *                    fractional digits and a leading "0" before the point:
 *                    "-0.05", "12.30", "12" when s = 0
 *   string           the raw UTF-8 bytes, unescaped
 *   binary           lowercase hex, two digits per byte: "00ff1a"
 *   date             YYYY-MM-DD, proleptic Gregorian; years below 1000 padded
 *                    to 4 digits ("0001-01-01"), negative years prefixed by '-'
 *                    ("-0044-03-15")
 *   timestamp(_ntz)  "YYYY-MM-DD HH:MM:SS" in UTC, followed by ".ffffff"
 *                    (always 6 digits) when the microseconds are non-zero
 *   void             always null
 */
#ifndef EM_VALUE_TEXT_H
#define EM_VALUE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember/column.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A growable, always NUL-terminated byte string. Zero-initialized is valid
 * (empty); data is owned and freed by em_strbuf_reset.
 *
 * Out-of-memory is sticky, as in SQLite's StrAccum: a failed append returns
 * the error, leaves the text as it was and sets `failed`, after which
 * further appends do nothing and return EM_ERR_NOMEM. So code that builds
 * a long text may ignore the appends' results and check em_strbuf_status()
 * once at the end (the string functions are therefore not must-check). */
typedef struct em_strbuf {
    char *data;  /* owned; NULL until the first append */
    size_t len;  /* bytes, excluding the terminating NUL */
    size_t cap;  /* bytes allocated */
    bool failed; /* an append ran out of memory; cleared by clear/reset */
} em_strbuf;

void em_strbuf_init(em_strbuf *sb);
void em_strbuf_reset(em_strbuf *sb);                /* frees */
static inline void em_strbuf_clear(em_strbuf *sb) { /* empties, keeps memory */
    sb->len = 0;
    sb->failed = false;
    if (sb->data)
        sb->data[0] = '\0';
}
/* The text ("" when nothing was appended yet). */
static inline const char *em_strbuf_cstr(const em_strbuf *sb) { return sb->data ? sb->data : ""; }
/* EM_ERR_NOMEM when some append failed since the last reset, else EM_OK. */
static inline em_status em_strbuf_status(const em_strbuf *sb) {
    return sb->failed ? EM_ERR_NOMEM : EM_OK;
}
em_status em_strbuf_reserve(em_strbuf *sb, size_t extra, em_error *err);
em_status em_strbuf_append(em_strbuf *sb, const void *p, size_t n, em_error *err);
em_status em_strbuf_appends(em_strbuf *sb, const char *s, em_error *err);
em_status em_strbuf_appendf(em_strbuf *sb, em_error *err, const char *fmt, ...) EM_PRINTF(3, 4);

/* Appends the canonical text of row `row` of c to out. When the value is
 * null, nothing is appended and *is_null is set (is_null may be NULL when
 * the caller knows the row is valid). */
em_status em_value_text(const em_column *c, int64_t row, em_strbuf *out, bool *is_null,
                        em_error *err) EM_MUST_CHECK;

/* The fewest significant digits of a finite v that read back as v (as a
 * float when is_float, which is never rounded twice), in printf's %e form
 * with the mantissa's trailing zeros dropped: "[-]d[.ddd]e[+-]XX". These are
 * the digits Java's Double.toString and Float.toString print (JDK 19 on). */
void em_shortest_e(double v, bool is_float, char *buf, size_t cap);
/* The same digits of |v| (finite, non-zero) without a point into digits
 * (room for 18: 17 digits and the NUL), and the decimal exponent of the
 * first one; returns how many digits. */
int em_shortest_digits(double v, bool is_float, char *digits, int *exp10);
/* Java's Double.toString / Float.toString of v (Spark's cast of a floating
 * value to a string): those digits, plain for 1e-3 <= |v| < 1e7 (at least
 * one fractional digit), otherwise d.dddE[-]x; NaN, Infinity, -0.0 as Java.
 * Into buf (32 bytes hold any); returns the length. */
int em_java_floating(double v, bool is_float, char *buf, size_t cap);

/* Scalar formatters behind em_value_text, for callers holding loose values. */
em_status em_text_double(em_strbuf *out, double v, em_error *err);
em_status em_text_float(em_strbuf *out, float v, em_error *err);
em_status em_text_decimal(em_strbuf *out, em_i128 unscaled, int scale, em_error *err);
em_status em_text_date(em_strbuf *out, int32_t days, em_error *err);
em_status em_text_timestamp(em_strbuf *out, int64_t micros, em_error *err);
/* Days since 1970-01-01 to a proleptic Gregorian civil date and back. */
void em_civil_from_days(int64_t days, int64_t *year, int *month, int *day);
int64_t em_days_from_civil(int64_t year, int month, int day);

/* Appends p[0..n) as a JSON string literal: quotes, \" \\ \b \f \n \r \t,
 * other control characters as \u00XX; bytes >= 0x80 are copied (UTF-8). */
em_status em_json_escape(em_strbuf *out, const char *p, size_t n, em_error *err);
/* Appends p[0..n) as one RFC 4180 CSV field: quoted (with "" for ") when it
 * contains the delimiter, a quote, CR or LF, or starts or ends with a
 * space; otherwise copied as is. */
em_status em_csv_escape(em_strbuf *out, const char *p, size_t n, char delim, em_error *err);
/* The value as a JSON value: null; true/false; integers, finite floats and
 * decimals as bare numbers; everything else (strings, binary hex, dates,
 * timestamps, NaN and infinities) as a JSON string of its canonical text. */
em_status em_value_json(const em_column *c, int64_t row, em_strbuf *out,
                        em_error *err) EM_MUST_CHECK;
/* The value as a CSV field: an empty field for null, "" for an empty string,
 * else the escaped text. */
em_status em_value_csv(const em_column *c, int64_t row, char delim, em_strbuf *out,
                       em_error *err) EM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif
