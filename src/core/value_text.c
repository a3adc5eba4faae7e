/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Canonical value text (format documented in value_text.h).
 *
 * Floating point: the shortest round-tripping digits (em_shortest_e) come
 * from printf's correctly rounded %e and strtod (strtof for float, so a
 * float is never double-rounded) reading them back. The digits and exponent are
 * then laid out as Python's repr does, which is also the layout DuckDB
 * and most engines use for the common range.
 *
 * Dates use Howard Hinnant's days-from-civil algorithm over 400-year eras, so
 * they are exact for every int32 day count, before 1970 and before year 1
 * (proleptic Gregorian, astronomical year numbering: year 0 exists).
 * Timestamps split microseconds with floor division so instants before 1970
 * land on the right day.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/value_text.h"

void em_strbuf_init(em_strbuf *sb) {
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
    sb->failed = false;
}

void em_strbuf_reset(em_strbuf *sb) {
    em_pool_free(NULL, sb->data, 0);
    em_strbuf_init(sb);
}

em_status em_strbuf_reserve(em_strbuf *sb, size_t extra, em_error *err) {
    if (sb->failed)
        return EM_FAIL(err, EM_ERR_NOMEM, "string builder already out of memory");
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return EM_OK;
    size_t cap = sb->cap < 64 ? 64 : sb->cap;
    while (cap < need)
        cap *= 2;
    char *d = em_pool_realloc(NULL, sb->data, (int64_t)sb->cap, (int64_t)cap, err);
    if (!d) {
        sb->failed = true;
        return err ? err->code : EM_ERR_NOMEM;
    }
    if (!sb->data)
        d[0] = '\0';
    sb->data = d;
    sb->cap = cap;
    return EM_OK;
}

em_status em_strbuf_append(em_strbuf *sb, const void *p, size_t n, em_error *err) {
    EM_TRY(em_strbuf_reserve(sb, n, err));
    if (n)
        memcpy(sb->data + sb->len, p, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    return EM_OK;
}

em_status em_strbuf_appends(em_strbuf *sb, const char *s, em_error *err) {
    return em_strbuf_append(sb, s, strlen(s), err);
}

em_status em_strbuf_appendf(em_strbuf *sb, em_error *err, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return EM_FAIL(err, EM_ERR_INVALID, "bad format string '%s'", fmt);
    if ((size_t)n < sizeof small)
        return em_strbuf_append(sb, small, (size_t)n, err);
    EM_TRY(em_strbuf_reserve(sb, (size_t)n, err));
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
    return EM_OK;
}

/* Lays out significant digits (no leading/trailing zeros except "0") with
 * decimal exponent x (value = d.ddd * 10^x) the way Python's repr does. */
static em_status layout_float(em_strbuf *out, bool neg, const char *digits, int nd, int x,
                              em_error *err) {
    char buf[64];
    int k = 0;
    if (neg)
        buf[k++] = '-';
    if (x >= -4 && x < 16) {
        if (x < 0) {
            buf[k++] = '0';
            buf[k++] = '.';
            for (int i = 0; i < -x - 1; i++)
                buf[k++] = '0';
            for (int i = 0; i < nd; i++)
                buf[k++] = digits[i];
        } else {
            for (int i = 0; i <= x; i++)
                buf[k++] = i < nd ? digits[i] : '0';
            buf[k++] = '.';
            if (nd > x + 1)
                for (int i = x + 1; i < nd; i++)
                    buf[k++] = digits[i];
            else
                buf[k++] = '0';
        }
    } else {
        buf[k++] = digits[0];
        if (nd > 1) {
            buf[k++] = '.';
            for (int i = 1; i < nd; i++)
                buf[k++] = digits[i];
        }
        k += snprintf(buf + k, sizeof buf - (size_t)k, "e%c%02d", x < 0 ? '-' : '+', abs(x));
    }
    return em_strbuf_append(out, buf, (size_t)k, err);
}

static bool reads_back(const char *text, double v, bool is_float) {
    return is_float ? strtof(text, NULL) == (float)v : strtod(text, NULL) == v;
}

/* Any decimal of at most DIG significant digits (15 for double, 6 for
 * float) survives a trip through a normal value of the binary type and back
 * to DIG digits.
 * So when v printed with DIG digits does not read back as v, nothing
 * shorter does; and when it does, its digits are those of the shortest such
 * decimal, padded with zeros. One printf then decides what a search over
 * 1, 2, ... digits would, and only 16 and 17 (7 to 9) remain to try. */
void em_shortest_e(double v, bool is_float, char *buf, size_t cap) {
    int dig = is_float ? 6 : 15, max = is_float ? 9 : 17;
    /* subnormals carry fewer digits than DIG: they are searched from one */
    bool normal = fabs(v) >= (is_float ? (double)FLT_MIN : DBL_MIN);
    int prec = normal ? dig : 1;
    snprintf(buf, cap, "%.*e", prec - 1, v);
    while (!reads_back(buf, v, is_float) && prec < max) {
        prec++;
        snprintf(buf, cap, "%.*e", prec - 1, v);
    }
    char *e = strchr(buf, 'e'), *dot = strchr(buf, '.');
    if (!e || !dot || dot > e)
        return; /* one digit, or not finite (printf's own text) */
    char *end = e;
    while (end > dot + 1 && end[-1] == '0')
        end--;
    if (end == dot + 1)
        end = dot;
    if (end != e)
        memmove(end, e, strlen(e) + 1);
}

int em_shortest_digits(double v, bool is_float, char *digits, int *exp10) {
    char e[48];
    em_shortest_e(fabs(v), is_float, e, sizeof e);
    int n = 0;
    const char *q = e;
    for (; *q && *q != 'e'; q++)
        if (*q != '.')
            digits[n++] = *q;
    digits[n] = '\0';
    *exp10 = atoi(q + 1);
    return n;
}

int em_java_floating(double v, bool is_float, char *buf, size_t cap) {
    if (isnan(v))
        return snprintf(buf, cap, "NaN");
    if (isinf(v))
        return snprintf(buf, cap, "%sInfinity", v < 0 ? "-" : "");
    if (v == 0)
        return snprintf(buf, cap, "%s0.0", signbit(v) ? "-" : "");
    char d[24], out[48];
    int e;
    int n = em_shortest_digits(v, is_float, d, &e);
    int o = 0;
    if (signbit(v))
        out[o++] = '-';
    double a = fabs(is_float ? (double)(float)v : v);
    if (a >= 1e-3 && a < 1e7) {
        if (e >= 0) {
            for (int i = 0; i <= e; i++)
                out[o++] = i < n ? d[i] : '0';
            out[o++] = '.';
            for (int i = e + 1; i < n; i++)
                out[o++] = d[i];
            if (n <= e + 1)
                out[o++] = '0';
        } else {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -e - 1; i++)
                out[o++] = '0';
            for (int i = 0; i < n; i++)
                out[o++] = d[i];
        }
        out[o] = '\0';
    } else {
        out[o++] = d[0];
        out[o++] = '.';
        for (int i = 1; i < n; i++)
            out[o++] = d[i];
        if (n == 1)
            out[o++] = '0';
        snprintf(out + o, sizeof out - (size_t)o, "E%d", e);
    }
    return snprintf(buf, cap, "%s", out);
}

/* Shared by float and double: digits of |v| with `prec` significant digits. */
static em_status text_floating(em_strbuf *out, double v, bool is_float, em_error *err) {
    if (isnan(v))
        return em_strbuf_appends(out, "NaN", err);
    if (isinf(v))
        return em_strbuf_appends(out, v < 0 ? "-Infinity" : "Infinity", err);
    bool neg = signbit(v);
    double a = fabs(v);
    if (a == 0.0)
        return em_strbuf_appends(out, neg ? "-0.0" : "0.0", err);
    char digits[24];
    int x;
    int nd = em_shortest_digits(a, is_float, digits, &x);
    return layout_float(out, neg, digits, nd, x, err);
}

em_status em_text_double(em_strbuf *out, double v, em_error *err) {
    return text_floating(out, v, false, err);
}

em_status em_text_float(em_strbuf *out, float v, em_error *err) {
    return text_floating(out, (double)v, true, err);
}

em_status em_text_decimal(em_strbuf *out, em_i128 unscaled, int scale, em_error *err) {
    if (scale < 0 || scale > EM_DECIMAL_MAX_PRECISION)
        return EM_FAIL(err, EM_ERR_INVALID, "decimal scale %d outside 0..38", scale);
    unsigned __int128 u = unscaled < 0 ? -(unsigned __int128)unscaled : (unsigned __int128)unscaled;
    char rev[48];
    int n = 0;
    do {
        rev[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (n < scale + 1)
        rev[n++] = '0';
    char buf[52];
    int k = 0;
    if (unscaled < 0)
        buf[k++] = '-';
    for (int i = n - 1; i >= 0; i--) {
        buf[k++] = rev[i];
        if (i == scale && scale > 0)
            buf[k++] = '.';
    }
    return em_strbuf_append(out, buf, (size_t)k, err);
}

/* Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms". */
void em_civil_from_days(int64_t days, int64_t *year, int *month, int *day) {
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11] */
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = yoe + era * 400 + (*month <= 2);
}

int64_t em_days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int format_date(char *buf, size_t cap, int64_t days) {
    int64_t y;
    int m, d;
    em_civil_from_days(days, &y, &m, &d);
    if (y < 0)
        return snprintf(buf, cap, "-%04lld-%02d-%02d", (long long)-y, m, d);
    return snprintf(buf, cap, "%04lld-%02d-%02d", (long long)y, m, d);
}

em_status em_text_date(em_strbuf *out, int32_t days, em_error *err) {
    char buf[32];
    int n = format_date(buf, sizeof buf, days);
    return em_strbuf_append(out, buf, (size_t)n, err);
}

em_status em_text_timestamp(em_strbuf *out, int64_t micros, em_error *err) {
    const int64_t per_day = INT64_C(86400000000);
    int64_t days = micros / per_day, rem = micros % per_day;
    if (rem < 0) {
        rem += per_day;
        days--;
    }
    char buf[64];
    int n = format_date(buf, sizeof buf, days);
    int64_t secs = rem / 1000000, us = rem % 1000000;
    n += snprintf(buf + n, sizeof buf - (size_t)n, " %02d:%02d:%02d", (int)(secs / 3600),
                  (int)(secs / 60 % 60), (int)(secs % 60));
    if (us)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ".%06d", (int)us);
    return em_strbuf_append(out, buf, (size_t)n, err);
}

static em_status text_hex(em_strbuf *out, const uint8_t *p, int64_t n, em_error *err) {
    static const char hex[] = "0123456789abcdef";
    EM_TRY(em_strbuf_reserve(out, (size_t)n * 2, err));
    char *d = out->data + out->len;
    for (int64_t i = 0; i < n; i++) {
        d[2 * i] = hex[p[i] >> 4];
        d[2 * i + 1] = hex[p[i] & 15];
    }
    out->len += (size_t)n * 2;
    out->data[out->len] = '\0';
    return EM_OK;
}

em_status em_value_text(const em_column *c, int64_t row, em_strbuf *out, bool *is_null,
                        em_error *err) {
    if (row < 0 || row >= c->length)
        return EM_FAIL(err, EM_ERR_INVALID, "row %lld out of range (column of %lld rows)",
                       (long long)row, (long long)c->length);
    bool null = c->type.id == EM_TYPE_NULL || !em_column_is_valid(c, row);
    if (is_null)
        *is_null = null;
    if (null)
        return EM_OK;
    const uint8_t *v = c->values->data;
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
        return em_strbuf_appends(out, em_bit_get(v, row) ? "true" : "false", err);
    case EM_TYPE_BYTE:
        return em_strbuf_appendf(out, err, "%d", ((const int8_t *)v)[row]);
    case EM_TYPE_SHORT:
        return em_strbuf_appendf(out, err, "%d", ((const int16_t *)v)[row]);
    case EM_TYPE_INT:
        return em_strbuf_appendf(out, err, "%d", ((const int32_t *)v)[row]);
    case EM_TYPE_LONG:
        return em_strbuf_appendf(out, err, "%lld", (long long)((const int64_t *)v)[row]);
    case EM_TYPE_FLOAT:
        return em_text_float(out, ((const float *)v)[row], err);
    case EM_TYPE_DOUBLE:
        return em_text_double(out, ((const double *)v)[row], err);
    case EM_TYPE_DECIMAL: {
        em_i128 d;
        memcpy(&d, v + 16 * row, 16);
        return em_text_decimal(out, d, c->type.scale, err);
    }
    case EM_TYPE_STRING:
    case EM_TYPE_BINARY: {
        const int32_t *off = (const int32_t *)v;
        const uint8_t *p = c->data->data + off[row];
        int64_t n = off[row + 1] - off[row];
        if (c->type.id == EM_TYPE_STRING)
            return em_strbuf_append(out, p, (size_t)n, err);
        return text_hex(out, p, n, err);
    }
    case EM_TYPE_DATE:
        return em_text_date(out, ((const int32_t *)v)[row], err);
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return em_text_timestamp(out, ((const int64_t *)v)[row], err);
    default:
        break;
    }
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "no text form for type id %d", (int)c->type.id);
}

em_status em_json_escape(em_strbuf *out, const char *p, size_t n, em_error *err) {
    EM_TRY(em_strbuf_reserve(out, n + 2, err));
    EM_TRY(em_strbuf_append(out, "\"", 1, err));
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        const char *esc = NULL;
        char u[8];
        switch (ch) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        default:
            if (ch < 0x20) {
                snprintf(u, sizeof u, "\\u%04x", ch);
                esc = u;
            }
        }
        if (!esc)
            continue;
        EM_TRY(em_strbuf_append(out, p + start, i - start, err));
        EM_TRY(em_strbuf_appends(out, esc, err));
        start = i + 1;
    }
    EM_TRY(em_strbuf_append(out, p + start, n - start, err));
    return em_strbuf_append(out, "\"", 1, err);
}

em_status em_csv_escape(em_strbuf *out, const char *p, size_t n, char delim, em_error *err) {
    bool quote = n > 0 && (p[0] == ' ' || p[n - 1] == ' ');
    for (size_t i = 0; i < n && !quote; i++)
        quote = p[i] == delim || p[i] == '"' || p[i] == '\n' || p[i] == '\r';
    if (!quote)
        return em_strbuf_append(out, p, n, err);
    EM_TRY(em_strbuf_append(out, "\"", 1, err));
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '"')
            continue;
        EM_TRY(em_strbuf_append(out, p + start, i + 1 - start, err)); /* through the quote */
        EM_TRY(em_strbuf_append(out, "\"", 1, err));                  /* ... doubled */
        start = i + 1;
    }
    EM_TRY(em_strbuf_append(out, p + start, n - start, err));
    return em_strbuf_append(out, "\"", 1, err);
}

/* Types whose canonical text is already a JSON number or literal. */
static bool json_bare(const em_column *c, int64_t row) {
    switch (c->type.id) {
    case EM_TYPE_BOOLEAN:
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
    case EM_TYPE_DECIMAL:
        return true;
    case EM_TYPE_FLOAT:
        return isfinite(((const float *)c->values->data)[row]);
    case EM_TYPE_DOUBLE:
        return isfinite(((const double *)c->values->data)[row]);
    default:
        return false;
    }
}

em_status em_value_json(const em_column *c, int64_t row, em_strbuf *out, em_error *err) {
    size_t mark = out->len;
    bool null;
    EM_TRY(em_value_text(c, row, out, &null, err));
    if (null)
        return em_strbuf_appends(out, "null", err);
    if (json_bare(c, row))
        return EM_OK;
    /* Re-append the text escaped: copy it out first, the append may move data. */
    em_strbuf tmp;
    em_strbuf_init(&tmp);
    em_status st = em_strbuf_append(&tmp, out->data + mark, out->len - mark, err);
    out->len = mark;
    out->data[mark] = '\0';
    if (st == EM_OK)
        st = em_json_escape(out, em_strbuf_cstr(&tmp), tmp.len, err);
    em_strbuf_reset(&tmp);
    return st;
}

em_status em_value_csv(const em_column *c, int64_t row, char delim, em_strbuf *out, em_error *err) {
    size_t mark = out->len;
    bool null;
    EM_TRY(em_value_text(c, row, out, &null, err));
    if (null)
        return EM_OK;
    if (out->len == mark && em_type_is_varlen(c->type))
        return em_strbuf_append(out, "\"\"", 2, err); /* "" tells an empty value from null */
    if (c->type.id != EM_TYPE_STRING)
        return EM_OK; /* only strings can hold delimiters, quotes or edge spaces */
    em_strbuf tmp;
    em_strbuf_init(&tmp);
    em_status st = em_strbuf_append(&tmp, out->data + mark, out->len - mark, err);
    out->len = mark;
    out->data[mark] = '\0';
    if (st == EM_OK)
        st = em_csv_escape(out, em_strbuf_cstr(&tmp), tmp.len, delim, err);
    em_strbuf_reset(&tmp);
    return st;
}
