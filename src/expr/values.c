/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scalar values and the conversions between them: reading and writing one
 * row of a register, literal text, Spark's casts (Cast.scala) and Spark's
 * ordering of values.
 *
 * Casts follow Spark's two modes. Non-ANSI (LEGACY): integral narrowing wraps
 * like Java's primitive casts, double to integral saturates (NaN to 0), text
 * that does not parse gives null, and decimal overflow gives null. ANSI:
 * every one of those raises an error naming the expression instead
 * (EM_ERR_OVERFLOW for values out of range, EM_ERR_INVALID for text that
 * does not parse). Decimal rounding is always HALF_UP.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ember/value_text.h"
#include "expr/internal.h"

bool em_ex_type_is_integral(em_type t) {
    return t.id == EM_TYPE_BYTE || t.id == EM_TYPE_SHORT || t.id == EM_TYPE_INT ||
           t.id == EM_TYPE_LONG;
}

bool em_ex_type_is_numeric(em_type t) {
    return em_ex_type_is_integral(t) || t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE ||
           t.id == EM_TYPE_DECIMAL;
}

/* ---------------------------------------------------------------- rows */

void em_ex_get(const em_column *c, int64_t row, ex_value *v) {
    memset(v, 0, sizeof *v);
    if (c->type.id == EM_TYPE_NULL || !em_column_is_valid(c, row)) {
        v->null = true;
        return;
    }
    const uint8_t *p = c->values->data;
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
        v->i = em_bit_get(p, row);
        break;
    case EM_TYPE_BYTE:
        v->i = ((const int8_t *)p)[row];
        break;
    case EM_TYPE_SHORT:
        v->i = ((const int16_t *)p)[row];
        break;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        v->i = ((const int32_t *)p)[row];
        break;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        v->i = ((const int64_t *)p)[row];
        break;
    case EM_TYPE_FLOAT:
        v->d = ((const float *)p)[row];
        break;
    case EM_TYPE_DOUBLE:
        v->d = ((const double *)p)[row];
        break;
    case EM_TYPE_DECIMAL:
        memcpy(&v->dec, p + row * 16, 16);
        break;
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *off = (const int32_t *)p;
        v->s = c->data ? (const char *)c->data->data + off[row] : "";
        v->len = off[row + 1] - off[row];
        break;
    }
    default:
        v->null = true;
    }
}

void em_ex_put_fixed(em_column *c, int64_t row, const ex_value *v) {
    uint8_t *p = c->values ? c->values->data : NULL;
    if (v->null || c->type.id == EM_TYPE_NULL) {
        em_bit_clear(c->validity->data, row);
        return;
    }
    em_bit_set(c->validity->data, row);
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
        em_bit_put(p, row, v->i != 0);
        break;
    case EM_TYPE_BYTE:
        ((int8_t *)p)[row] = (int8_t)v->i;
        break;
    case EM_TYPE_SHORT:
        ((int16_t *)p)[row] = (int16_t)v->i;
        break;
    case EM_TYPE_INT:
    case EM_TYPE_DATE:
        ((int32_t *)p)[row] = (int32_t)v->i;
        break;
    case EM_TYPE_LONG:
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        ((int64_t *)p)[row] = v->i;
        break;
    case EM_TYPE_FLOAT:
        ((float *)p)[row] = (float)v->d;
        break;
    case EM_TYPE_DOUBLE:
        ((double *)p)[row] = v->d;
        break;
    case EM_TYPE_DECIMAL:
        memcpy(p + row * 16, &v->dec, 16);
        break;
    default:
        break;
    }
}

em_status em_ex_col_alloc(em_column *c, em_type type, int64_t n, em_pool *pool, em_error *err) {
    EM_TRY(em_column_init(c, type, n, pool, err));
    if (!c->validity) { /* the NULL type comes with one */
        em_status st = em_buffer_create(pool, em_bitmap_bytes(n), &c->validity, err);
        if (st != EM_OK) {
            em_column_reset(c);
            return st;
        }
    }
    if (em_bitmap_bytes(n) > 0)
        memset(c->validity->data, 0, (size_t)em_bitmap_bytes(n));
    c->validity->size = em_bitmap_bytes(n);
    if (type.id == EM_TYPE_NULL)
        c->length = n;
    if (!em_type_is_varlen(type) && type.id != EM_TYPE_NULL) {
        int w = em_type_width(type);
        int64_t bytes = type.id == EM_TYPE_BOOLEAN ? em_bitmap_bytes(n) : n * w;
        if (bytes > 0)
            memset(c->values->data, 0, (size_t)bytes);
        c->values->size = bytes;
        c->length = n;
    }
    c->null_count = -1;
    return EM_OK;
}

em_status em_ex_strw_put(ex_strw *w, int64_t row, const char *p, int32_t len, bool null,
                      em_error *err) {
    em_column *c = w->col;
    if (w->next < row) { /* rows the selection skipped */
        EM_TRY(em_column_append_nulls(c, row - w->next, err));
        w->next = row;
    }
    if (null)
        EM_TRY(em_column_append_null(c, err));
    else
        EM_TRY(em_column_append_bytes(c, p, len, err));
    w->next++;
    return EM_OK;
}

em_status em_ex_strw_finish(ex_strw *w, int64_t n_rows, em_error *err) {
    if (w->next < n_rows) {
        EM_TRY(em_column_append_nulls(w->col, n_rows - w->next, err));
        w->next = n_rows;
    }
    w->col->null_count = -1;
    return EM_OK;
}

/* ---------------------------------------------------------------- ordering */

static int cmp_double(double a, double b) {
    /* Spark's SQLOrderingUtil.compareDoubles: equal values (incl. 0.0 and
     * -0.0) are equal, NaN equals NaN and sorts above everything */
    if (a == b)
        return 0;
    bool na = isnan(a), nb = isnan(b);
    if (na || nb)
        return na && nb ? 0 : (na ? 1 : -1);
    return a < b ? -1 : 1;
}

int em_ex_compare(const ex_value *a, em_type ta, const ex_value *b, em_type tb) {
    switch (ta.id) {
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE:
        return cmp_double(a->d, b->d);
    case EM_TYPE_DECIMAL:
        return em_dec_cmp(a->dec, ta.scale, b->dec, tb.id == EM_TYPE_DECIMAL ? tb.scale : 0);
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        int32_t n = a->len < b->len ? a->len : b->len;
        int c = n > 0 ? memcmp(a->s, b->s, (size_t)n) : 0;
        if (c != 0)
            return c < 0 ? -1 : 1;
        return a->len < b->len ? -1 : a->len > b->len;
    }
    default:
        return a->i < b->i ? -1 : a->i > b->i;
    }
}

/* ---------------------------------------------------------------- text parsing */

static bool is_ws(char c) { return (unsigned char)c <= ' '; }

static void trim_ws(const char **p, int64_t *n) {
    while (*n > 0 && is_ws((*p)[0])) {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && is_ws((*p)[*n - 1]))
        (*n)--;
}

/* UTF8String.toLong: [+-]digits[.digits]; the fraction is dropped. */
static bool parse_long(const char *p, int64_t n, int64_t *out) {
    int64_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    if (i >= n)
        return false;
    /* accumulate negatively so that INT64_MIN parses */
    int64_t v = 0;
    bool any = false;
    for (; i < n && p[i] != '.'; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        int d = p[i] - '0';
        if (v < (INT64_MIN + d) / 10)
            return false;
        v = v * 10 - d;
        any = true;
    }
    if (i < n) { /* '.' then digits only */
        i++;
        for (; i < n; i++)
            if (p[i] < '0' || p[i] > '9')
                return false;
    }
    if (!any && n - (neg ? 1 : 0) <= 1)
        return false;
    if (!neg) {
        if (v == INT64_MIN)
            return false;
        v = -v;
    }
    *out = v;
    return true;
}

static bool parse_double_text(const char *p, int64_t n, double *out) {
    char buf[128];
    if (n <= 0 || n >= (int64_t)sizeof buf)
        return false;
    memcpy(buf, p, (size_t)n);
    buf[n] = '\0';
    const char *s = buf;
    bool neg = false;
    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        s++;
    }
    if (!strcasecmp(s, "inf") || !strcasecmp(s, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (!strcasecmp(s, "nan")) {
        if (buf[0] == '+' || buf[0] == '-')
            return false;
        *out = NAN;
        return true;
    }
    /* Java's grammar: digits, '.', exponent; no hex, no "infinity" spellings
     * beyond the ones above; a trailing d/D/f/F is allowed */
    size_t len = strlen(buf);
    if (len > 0 && strchr("dDfF", buf[len - 1]))
        buf[--len] = '\0';
    for (const char *q = buf; *q; q++)
        if (!strchr("0123456789+-.eE", *q))
            return false;
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || *end != '\0')
        return false;
    *out = v;
    return true;
}

bool em_ex_parse_date(const char *p, int64_t n, int32_t *days) {
    trim_ws(&p, &n);
    int64_t i = 0;
    bool neg = false;
    if (i < n && (p[i] == '+' || p[i] == '-'))
        neg = p[i++] == '-';
    int64_t seg[3] = {0, 1, 1};
    int nseg = 0;
    while (nseg < 3) {
        int digits = 0;
        int64_t v = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9') {
            v = v * 10 + (p[i] - '0');
            if (++digits > 7)
                return false;
            i++;
        }
        if (nseg == 0 ? (digits < 4 || digits > 7) : (digits < 1 || digits > 2))
            return false;
        seg[nseg++] = v;
        if (i >= n)
            break;
        if (nseg < 3 && p[i] == '-') {
            i++;
            continue;
        }
        if (nseg == 3 && (p[i] == ' ' || p[i] == 'T'))
            break; /* the time part is ignored */
        return false;
    }
    if (nseg < 3 && i < n)
        return false;
    int64_t y = neg ? -seg[0] : seg[0];
    int m = (int)seg[1], d = (int)seg[2];
    if (m < 1 || m > 12 || d < 1)
        return false;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[m - 1] + (m == 2 && leap))
        return false;
    int64_t v = em_days_from_civil(y, m, d);
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    *days = (int32_t)v;
    return true;
}

/* Up to `max` digits at p[*i]; false when there are none. */
static bool read_digits(const char *p, int64_t n, int64_t *i, int max, int *v) {
    int k = 0;
    *v = 0;
    while (*i < n && k < max && p[*i] >= '0' && p[*i] <= '9') {
        *v = *v * 10 + (p[*i] - '0');
        (*i)++;
        k++;
    }
    return k > 0;
}

/* A zone as Spark's getZoneId reads the fixed ones: Z, UTC/GMT/UT alone or
 * followed by an offset, and +h, +hh, +hh:mm, +hhmm. Region ids (Europe/Paris)
 * are left to the zone database: *unsupported is set for them. */
static bool parse_zone_offset(const char *p, int64_t n, int64_t *seconds, bool *unsupported) {
    *seconds = 0;
    int64_t i = 0;
    if (n == 1 && (p[0] == 'Z' || p[0] == 'z'))
        return true;
    static const char *const prefixes[] = {"UTC", "GMT", "UT"};
    for (int k = 0; k < 3; k++) {
        size_t pl = strlen(prefixes[k]);
        if ((size_t)n >= pl && strncasecmp(p, prefixes[k], pl) == 0) {
            i = (int64_t)pl;
            break;
        }
    }
    if (i == n)
        return true;
    if (p[i] != '+' && p[i] != '-') {
        *unsupported = true;
        return false;
    }
    int sign = p[i++] == '-' ? -1 : 1, h, m = 0;
    int64_t h_at = i;
    if (!read_digits(p, n, &i, 2, &h))
        return false;
    if (i < n && p[i] == ':')
        i++;
    if (i < n && !read_digits(p, n, &i, 2, &m))
        return false;
    if (i != n || h > 18 || m > 59 || (i - h_at == 3 && p[h_at + 2] != ':'))
        return false;
    *seconds = sign * (h * 3600 + m * 60);
    return true;
}

bool em_ex_parse_timestamp(const char *p, int64_t n, bool with_zone, const em_tz *tz,
                        int64_t *micros, bool *no_zone_db) {
    *no_zone_db = false;
    bool region = false, have_zone = false;
    trim_ws(&p, &n);
    int64_t date_len = 0;
    while (date_len < n && p[date_len] != ' ' && p[date_len] != 'T')
        date_len++;
    int32_t days;
    if (!em_ex_parse_date(p, date_len, &days))
        return false;
    int64_t i = date_len + (date_len < n), zone_s = 0;
    int h = 0, m = 0, sec = 0;
    int64_t frac = 0;
    if (i < n) {
        if (!read_digits(p, n, &i, 2, &h) || i >= n || p[i++] != ':' ||
            !read_digits(p, n, &i, 2, &m))
            return false;
        if (i < n && p[i] == ':') {
            i++;
            if (!read_digits(p, n, &i, 2, &sec))
                return false;
            /* a fraction of up to nine digits, cut to microseconds */
            if (i < n && p[i] == '.') {
                int64_t from = ++i;
                int nanos_part;
                if (read_digits(p, n, &i, 9, &nanos_part)) {
                    if (i < n && p[i] >= '0' && p[i] <= '9')
                        return false;
                    static const int scale[] = {1, 100000000, 10000000, 1000000, 100000,
                                                10000,    1000,      100,      10,      1};
                    frac = (int64_t)nanos_part * scale[i - from] / 1000;
                }
            }
        }
        while (i < n && p[i] == ' ')
            i++;
        /* a TIMESTAMP_NTZ takes no zone at all */
        if (i < n && !with_zone)
            return false;
        if (i < n && !parse_zone_offset(p + i, n - i, &zone_s, &region)) {
            if (!region)
                return false;
            /* a region id: Spark's getZoneId of the rest; an unknown one is invalid */
            char id[128];
            em_error zerr = {0};
            if (n - i >= (int64_t)sizeof id)
                return false;
            memcpy(id, p + i, (size_t)(n - i));
            id[n - i] = '\0';
            if (em_tz_find(id, &tz, &zerr) != EM_OK) {
                *no_zone_db = zerr.code == EM_ERR_IO;
                return false;
            }
        }
        have_zone = i < n;
    }
    if (h > 23 || m > 59 || sec > 59)
        return false;
    int64_t local = ((int64_t)days * 86400 + h * 3600 + m * 60 + sec) * 1000000 + frac;
    if (have_zone && !region)
        *micros = local - zone_s * 1000000;
    else
        *micros = tz ? em_tz_local_to_utc_us(tz, local) : local;
    return true;
}

static int bool_text(const char *p, int64_t n) {
    static const char *const yes[] = {"t", "true", "y", "yes", "1"};
    static const char *const no[] = {"f", "false", "n", "no", "0"};
    for (int i = 0; i < 5; i++) {
        if ((int64_t)strlen(yes[i]) == n && !strncasecmp(p, yes[i], (size_t)n))
            return 1;
        if ((int64_t)strlen(no[i]) == n && !strncasecmp(p, no[i], (size_t)n))
            return 0;
    }
    return -1;
}

/* ---------------------------------------------------------------- to text */

/* java.math.BigDecimal.toString, which Spark's Cast uses for decimals
 * (Decimal.toString): plain unless the adjusted exponent is below -6, then
 * scientific ("0E-20", "5E-18", "1.5E-7"). */
static em_status java_decimal_text(em_strbuf *out, em_i128 v, int scale, em_error *err) {
    unsigned __int128 m =
        v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
    char digits[48];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m);
    int adjusted = nd - 1 - scale;
    if (adjusted >= -6)
        return em_text_decimal(out, v, scale, err);
    if (v < 0)
        EM_TRY(em_strbuf_append(out, "-", 1, err));
    EM_TRY(em_strbuf_append(out, &digits[nd - 1], 1, err));
    if (nd > 1) {
        EM_TRY(em_strbuf_append(out, ".", 1, err));
        for (int i = nd - 2; i >= 0; i--)
            EM_TRY(em_strbuf_append(out, &digits[i], 1, err));
    }
    return em_strbuf_appendf(out, err, "E%d", adjusted);
}

/* ---------------------------------------------------------------- casts */

static em_status cast_fail(bool ansi, bool overflow, const char *what, em_type to, ex_value *out,
                           em_error *err) {
    if (!ansi) {
        out->null = true;
        return EM_OK;
    }
    char tn[32];
    em_type_format(to, tn, sizeof tn);
    /* a decimal target fails in Decimal.toPrecision, with its own class */
    if (overflow && to.id == EM_TYPE_DECIMAL)
        return EM_FAIL(err, EM_ERR_OVERFLOW,
                       "[NUMERIC_VALUE_OUT_OF_RANGE] value cannot be represented as Decimal(%d, "
                       "%d) in %s (set spark.sql.ansi.enabled=false to get null)",
                       to.precision, to.scale, what);
    if (overflow)
        return EM_FAIL(err, EM_ERR_OVERFLOW,
                       "[CAST_OVERFLOW] value out of range for %s in %s (set "
                       "spark.sql.ansi.enabled=false to get null)",
                       tn, what);
    return EM_FAIL(err, EM_ERR_INVALID,
                   "[CAST_INVALID_INPUT] value cannot be cast to %s in %s (set "
                   "spark.sql.ansi.enabled=false to get null)",
                   tn, what);
}

/* Spark's SQL name of an integral type and the suffix its literals print with
 * (toSQLValue: 5L, 5S, 5Y). */
static const char *int_sql_name(em_type_id t, const char **suffix) {
    *suffix = t == EM_TYPE_LONG ? "L" : t == EM_TYPE_SHORT ? "S" : t == EM_TYPE_BYTE ? "Y" : "";
    return t == EM_TYPE_LONG    ? "BIGINT"
           : t == EM_TYPE_SHORT ? "SMALLINT"
           : t == EM_TYPE_BYTE  ? "TINYINT"
                                : "INT";
}

/* An integral value out of the range of a narrower integral type, in ANSI
 * mode: Spark's own CAST_OVERFLOW message, word for word, so that the plugin
 * raises Spark's exception with its parameters (em_spark_error). */
static em_status int_cast_overflow(int64_t v, em_type_id from, em_type_id to, const char *what,
                                   em_error *err) {
    const char *suffix, *unused;
    const char *src = int_sql_name(from, &suffix), *dst = int_sql_name(to, &unused);
    return EM_FAIL(err, EM_ERR_OVERFLOW,
                   "[CAST_OVERFLOW] The value %lld%s of the type \"%s\" cannot be cast to \"%s\" "
                   "due to an overflow. Use `try_cast` to tolerate overflow and return NULL "
                   "instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass "
                   "this error. (%s)",
                   (long long)v, suffix, src, dst, what);
}

static bool int_range(em_type_id t, int64_t v) {
    switch (t) {
    case EM_TYPE_BYTE:
        return v >= INT8_MIN && v <= INT8_MAX;
    case EM_TYPE_SHORT:
        return v >= INT16_MIN && v <= INT16_MAX;
    case EM_TYPE_INT:
        return v >= INT32_MIN && v <= INT32_MAX;
    default:
        return true;
    }
}

static int64_t int_wrap(em_type_id t, int64_t v) {
    switch (t) {
    case EM_TYPE_BYTE:
        return (int8_t)v;
    case EM_TYPE_SHORT:
        return (int16_t)v;
    case EM_TYPE_INT:
        return (int32_t)v;
    default:
        return v;
    }
}

/* Java's (long) d: NaN -> 0, saturating. */
static int64_t java_d2l(double d) {
    if (isnan(d))
        return 0;
    if (d >= 9223372036854775807.0)
        return INT64_MAX;
    if (d <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)d;
}

static int32_t java_d2i(double d) {
    if (isnan(d))
        return 0;
    if (d >= 2147483647.0)
        return INT32_MAX;
    if (d <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)d;
}

/* Cast to string formats with Spark's formatters, not the canonical text:
 * the year pattern uuuu signs a year of more than four digits (+10183-...),
 * and the timestamp fraction keeps no trailing zeros (00:00:01.5). */
static em_status cast_datetime_text(em_strbuf *b, size_t start, bool timestamp, em_error *err) {
    if (timestamp) {
        char *dot = memchr(b->data + start, '.', b->len - start);
        if (dot) {
            while (b->len > start && b->data[b->len - 1] == '0')
                b->len--;
            b->data[b->len] = '\0';
        }
    }
    size_t year_digits = 0;
    while (start + year_digits < b->len && b->data[start + year_digits] >= '0' &&
           b->data[start + year_digits] <= '9')
        year_digits++;
    if (year_digits > 4) {
        EM_TRY(em_strbuf_append(b, "+", 1, err));
        memmove(b->data + start + 1, b->data + start, b->len - 1 - start);
        b->data[start] = '+';
    }
    return EM_OK;
}

em_status em_ex_cast_value(const ex_value *in, em_type from, em_type to, bool ansi, const char *what,
                        ex_value *out, em_strbuf *scratch, em_error *err) {
    return em_ex_cast_value_tz(in, from, to, NULL, ansi, what, out, scratch, err);
}

/* Spark's Cast reads a TIMESTAMP (an instant) as local date-time in the
 * session zone wherever it meets a zone-less type; TIMESTAMP_NTZ and DATE
 * are local already. */
static int64_t local_us(const em_tz *tz, em_type_id f, int64_t us) {
    return tz && f == EM_TYPE_TIMESTAMP ? em_tz_utc_to_local_us(tz, us) : us;
}

em_status em_ex_cast_value_tz(const ex_value *in, em_type from, em_type to, const em_tz *tz,
                           bool ansi, const char *what, ex_value *out, em_strbuf *scratch,
                           em_error *err) {
    memset(out, 0, sizeof *out);
    if (in->null || from.id == EM_TYPE_NULL) {
        out->null = true;
        return EM_OK;
    }
    if (em_type_equal(from, to)) {
        *out = *in;
        return EM_OK;
    }
    em_type_id f = from.id, t = to.id;
    bool fint = em_ex_type_is_integral(from) || f == EM_TYPE_BOOLEAN;
    bool ffloat = f == EM_TYPE_FLOAT || f == EM_TYPE_DOUBLE;
    bool fstr = f == EM_TYPE_STRING;

    if (t == EM_TYPE_STRING) {
        int64_t start = (int64_t)scratch->len;
        switch (f) {
        case EM_TYPE_BOOLEAN:
            EM_TRY(em_strbuf_appends(scratch, in->i ? "true" : "false", err));
            break;
        case EM_TYPE_BYTE:
        case EM_TYPE_SHORT:
        case EM_TYPE_INT:
        case EM_TYPE_LONG:
            EM_TRY(em_strbuf_appendf(scratch, err, "%lld", (long long)in->i));
            break;
        case EM_TYPE_FLOAT:
        case EM_TYPE_DOUBLE: {
            char text[32];
            int k = em_java_floating(in->d, f == EM_TYPE_FLOAT, text, sizeof text);
            EM_TRY(em_strbuf_append(scratch, text, (size_t)k, err));
            break;
        }
        case EM_TYPE_DECIMAL:
            EM_TRY(java_decimal_text(scratch, in->dec, from.scale, err));
            break;
        case EM_TYPE_DATE:
        case EM_TYPE_TIMESTAMP:
        case EM_TYPE_TIMESTAMP_NTZ: {
            size_t text_at = scratch->len;
            if (f == EM_TYPE_DATE)
                EM_TRY(em_text_date(scratch, (int32_t)in->i, err));
            else
                EM_TRY(em_text_timestamp(scratch, local_us(tz, f, in->i), err));
            EM_TRY(cast_datetime_text(scratch, text_at, f != EM_TYPE_DATE, err));
            break;
        }
        case EM_TYPE_BINARY:
            EM_TRY(em_strbuf_append(scratch, in->s, (size_t)in->len, err));
            break;
        default:
            return EM_FAIL(err, EM_ERR_UNSUPPORTED, "cast to string from this type in %s", what);
        }
        /* the scratch buffer may move while later rows append: callers copy
         * the value before the next cast */
        out->s = scratch->data + start;
        out->len = (int32_t)((int64_t)scratch->len - start);
        return EM_OK;
    }

    switch (t) {
    case EM_TYPE_BOOLEAN:
        if (fint)
            out->i = in->i != 0;
        else if (ffloat)
            out->i = in->d != 0;
        else if (f == EM_TYPE_DECIMAL)
            out->i = in->dec != 0;
        else if (fstr) {
            const char *p = in->s;
            int64_t n = in->len;
            trim_ws(&p, &n);
            int b = bool_text(p, n);
            if (b < 0)
                return cast_fail(ansi, false, what, to, out, err);
            out->i = b;
        } else
            goto unsupported;
        return EM_OK;
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG: {
        int64_t v;
        if (fint) {
            v = in->i;
        } else if (ffloat) {
            double d = in->d;
            if (ansi) {
                /* Spark: floor(d) <= MAX && ceil(d) >= MIN, else overflow */
                double lo = t == EM_TYPE_LONG    ? -9223372036854775808.0
                            : t == EM_TYPE_INT   ? -2147483648.0
                            : t == EM_TYPE_SHORT ? -32768.0
                                                 : -128.0;
                double hi = t == EM_TYPE_LONG    ? 9223372036854775807.0
                            : t == EM_TYPE_INT   ? 2147483647.0
                            : t == EM_TYPE_SHORT ? 32767.0
                                                 : 127.0;
                if (isnan(d) || !(floor(d) <= hi && ceil(d) >= lo) ||
                    (t == EM_TYPE_LONG && floor(d) >= 9223372036854775807.0))
                    return cast_fail(ansi, true, what, to, out, err);
                out->i = (int64_t)d;
                return EM_OK;
            }
            /* Scala's d.toLong / d.toInt, then Java narrowing for short/byte */
            out->i = t == EM_TYPE_LONG ? java_d2l(d) : int_wrap(t, java_d2i(d));
            return EM_OK;
        } else if (f == EM_TYPE_DECIMAL) {
            em_i128 q = in->dec / em_dec_pow10(from.scale); /* truncates toward zero */
            if (ansi) {
                if (q < INT64_MIN || q > INT64_MAX || !int_range(t, (int64_t)q))
                    return cast_fail(ansi, true, what, to, out, err);
                out->i = (int64_t)q;
                return EM_OK;
            }
            /* BigDecimal.longValue keeps the low 64 bits; toInt narrows that */
            out->i = int_wrap(t, (int64_t)(uint64_t)(unsigned __int128)q);
            return EM_OK;
        } else if (fstr) {
            const char *p = in->s;
            int64_t n = in->len;
            trim_ws(&p, &n);
            if (!parse_long(p, n, &v) || !int_range(t, v))
                return cast_fail(ansi, false, what, to, out, err);
            out->i = v;
            return EM_OK;
        } else if (f == EM_TYPE_TIMESTAMP || f == EM_TYPE_TIMESTAMP_NTZ) {
            /* seconds, floored */
            int64_t s = in->i / 1000000 - (in->i % 1000000 < 0);
            v = s;
        } else {
            goto unsupported;
        }
        if (!int_range(t, v)) {
            if (ansi && fint)
                return int_cast_overflow(v, f, t, what, err);
            if (ansi)
                return cast_fail(ansi, true, what, to, out, err);
            v = int_wrap(t, v);
        }
        out->i = v;
        return EM_OK;
    }
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE: {
        double d;
        if (fint)
            d = (double)in->i;
        else if (ffloat)
            d = in->d;
        else if (f == EM_TYPE_DECIMAL)
            d = em_dec_to_double(in->dec, from.scale);
        else if (fstr) {
            const char *p = in->s;
            int64_t n = in->len;
            trim_ws(&p, &n);
            if (!parse_double_text(p, n, &d))
                return cast_fail(ansi, false, what, to, out, err);
        } else
            goto unsupported;
        if (t == EM_TYPE_FLOAT) {
            if (fint)
                d = (float)in->i; /* long -> float rounds once */
            d = (float)d;
        }
        out->d = d;
        return EM_OK;
    }
    case EM_TYPE_DECIMAL: {
        em_i128 v;
        bool ok;
        if (fint) {
            ok = em_dec_rescale((em_i128)in->i, 0, to.scale, to.precision, &v);
        } else if (ffloat) {
            if (!isfinite(in->d))
                return cast_fail(ansi, false, what, to, out, err);
            ok = em_dec_from_double(in->d, to.precision, to.scale, &v);
        } else if (f == EM_TYPE_DECIMAL) {
            ok = em_dec_rescale(in->dec, from.scale, to.scale, to.precision, &v);
        } else if (fstr) {
            const char *p = in->s;
            int64_t n = in->len;
            trim_ws(&p, &n);
            bool bad;
            ok = em_dec_parse(p, n, to.precision, to.scale, &v, &bad);
            if (!ok && bad)
                return cast_fail(ansi, false, what, to, out, err);
        } else {
            goto unsupported;
        }
        if (!ok)
            return cast_fail(ansi, true, what, to, out, err);
        out->dec = v;
        return EM_OK;
    }
    case EM_TYPE_DATE:
        if (fstr) {
            int32_t days;
            if (!em_ex_parse_date(in->s, in->len, &days))
                return cast_fail(ansi, false, what, to, out, err);
            out->i = days;
            return EM_OK;
        }
        if (f == EM_TYPE_TIMESTAMP || f == EM_TYPE_TIMESTAMP_NTZ) {
            int64_t us = local_us(tz, f, in->i), day = 86400LL * 1000000;
            out->i = us / day - (us % day < 0);
            return EM_OK;
        }
        goto unsupported;
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
    {
        /* the session zone applies to the TIMESTAMP side only */
        const em_tz *ztz = t == EM_TYPE_TIMESTAMP ? tz : NULL;
        if (f == EM_TYPE_DATE) {
            /* LocalDate.atStartOfDay(zone) */
            out->i = ztz ? em_tz_day_start(ztz, in->i) * 1000000 : in->i * 86400LL * 1000000;
            return EM_OK;
        }
        if (fstr) {
            bool no_db;
            if (em_ex_parse_timestamp(in->s, in->len, t == EM_TYPE_TIMESTAMP, ztz, &out->i, &no_db))
                return EM_OK;
            if (no_db)
                return EM_FAIL(err, EM_ERR_IO,
                               "a time-zone region id in a timestamp string needs the zone "
                               "database, which is not installed (package tzdata): %s",
                               what);
            return cast_fail(ansi, false, what, to, out, err);
        }
        if (f == EM_TYPE_TIMESTAMP_NTZ) {
            out->i = ztz ? em_tz_local_to_utc_us(ztz, in->i) : in->i;
            return EM_OK;
        }
        if (f == EM_TYPE_TIMESTAMP) {
            out->i = local_us(tz, f, in->i);
            return EM_OK;
        }
    }
        goto unsupported;
    case EM_TYPE_BINARY:
        if (fstr) {
            out->s = in->s;
            out->len = in->len;
            return EM_OK;
        }
        goto unsupported;
    default:
        break;
    }
unsupported : {
    char a[32], b[32];
    em_type_format(from, a, sizeof a);
    em_type_format(to, b, sizeof b);
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "cast from %s to %s is not supported (in %s)", a, b,
                   what);
}
}

em_status em_ex_parse_literal(const char *text, em_type t, ex_value *out, em_error *err) {
    return em_ex_parse_literal_tz(text, t, NULL, out, err);
}

em_status em_ex_parse_literal_tz(const char *text, em_type t, const em_tz *tz, ex_value *out,
                              em_error *err) {
    memset(out, 0, sizeof *out);
    if (!strcmp(text, "null") || t.id == EM_TYPE_NULL) {
        out->null = true;
        return EM_OK;
    }
    ex_value in = {0};
    in.s = text;
    in.len = (int32_t)strlen(text);
    if (t.id == EM_TYPE_STRING || t.id == EM_TYPE_BINARY) {
        *out = in;
        return EM_OK;
    }
    if (t.id == EM_TYPE_BOOLEAN) {
        if (strcmp(text, "true") && strcmp(text, "false"))
            return EM_FAIL(err, EM_ERR_TYPE, "literal '%s' is not a boolean", text);
        out->i = text[0] == 't';
        return EM_OK;
    }
    em_strbuf scratch = {0};
    em_error sub = {0};
    em_status st = em_ex_cast_value_tz(&in, em_type_make(EM_TYPE_STRING), t, tz, true, text, out,
                                    &scratch, &sub);
    em_strbuf_reset(&scratch);
    if (st != EM_OK) {
        char tn[32];
        em_type_format(t, tn, sizeof tn);
        return EM_FAIL(err, EM_ERR_TYPE, "literal '%s' is not a valid %s", text, tn);
    }
    return EM_OK;
}

/* ---------------------------------------------------------------- messages */

static const char *binop_sym(em_binop op) {
    static const char *const syms[EM_OP_COUNT_] = {"+",  "-", "*",  "/",   "%",   "div",
                                                   "&",  "|", "^",  "=",   "<=>", "<",
                                                   "<=", ">", ">=", "AND", "OR"};
    return op >= 0 && op < EM_OP_COUNT_ ? syms[op] : "?";
}

static void desc(const em_expr *e, em_strbuf *sb, int depth) {
    em_error ig;
    if (!e) {
        (void)em_strbuf_appends(sb, "?", &ig);
        return;
    }
    if (depth > 6 || sb->len > 200) {
        (void)em_strbuf_appends(sb, "...", &ig);
        return;
    }
    switch (e->kind) {
    case EM_EXPR_ATTR:
        (void)em_strbuf_appendf(sb, &ig, "%s#%lld", e->name ? e->name : "", (long long)e->id);
        break;
    case EM_EXPR_LITERAL:
    case EM_EXPR_RAW:
        (void)em_strbuf_appends(sb, e->text ? e->text : "", &ig);
        break;
    case EM_EXPR_BINARY:
        (void)em_strbuf_appends(sb, "(", &ig);
        desc(e->n_args > 0 ? e->args[0] : NULL, sb, depth + 1);
        (void)em_strbuf_appendf(sb, &ig, " %s ", binop_sym(e->op));
        desc(e->n_args > 1 ? e->args[1] : NULL, sb, depth + 1);
        (void)em_strbuf_appends(sb, ")", &ig);
        break;
    case EM_EXPR_NOT:
        (void)em_strbuf_appends(sb, "NOT ", &ig);
        desc(e->n_args > 0 ? e->args[0] : NULL, sb, depth + 1);
        break;
    case EM_EXPR_NEGATE:
        (void)em_strbuf_appends(sb, "-", &ig);
        desc(e->n_args > 0 ? e->args[0] : NULL, sb, depth + 1);
        break;
    case EM_EXPR_CAST:
        (void)em_strbuf_appends(sb, "cast(", &ig);
        desc(e->n_args > 0 ? e->args[0] : NULL, sb, depth + 1);
        (void)em_strbuf_appendf(sb, &ig, " as %s)", e->text ? e->text : "?");
        break;
    case EM_EXPR_ALIAS:
        desc(e->n_args > 0 ? e->args[0] : NULL, sb, depth + 1);
        (void)em_strbuf_appendf(sb, &ig, " AS %s#%lld", e->name ? e->name : "", (long long)e->id);
        break;
    default:
        (void)em_strbuf_appendf(sb, &ig, "%s(", e->name ? e->name : "expr");
        for (int i = 0; i < e->n_args; i++) {
            if (i)
                (void)em_strbuf_appends(sb, ", ", &ig);
            desc(e->args[i], sb, depth + 1);
        }
        (void)em_strbuf_appends(sb, ")", &ig);
        break;
    }
}

void em_ex_describe(const em_expr *e, char *buf, size_t cap) {
    em_strbuf sb = {0};
    desc(e, &sb, 0);
    snprintf(buf, cap, "%s", em_strbuf_cstr(&sb));
    em_strbuf_reset(&sb);
}
