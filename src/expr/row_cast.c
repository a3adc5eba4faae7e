/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Casts of one value for the row engine, from Spark's Cast.scala rules,
 * plus the value texts a cast to string produces (Java's Double.toString,
 * BigDecimal.toString, Spark's date and timestamp formatters).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr/row_cast.h"

static bool is_integral(em_type_id t) { return t >= EM_TYPE_BYTE && t <= EM_TYPE_LONG; }

/* Java's trim(): strips bytes <= ' ' at both ends. */
static void java_trim(const uint8_t **p, int64_t *n) {
    while (*n > 0 && (*p)[0] <= ' ') {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && (*p)[*n - 1] <= ' ')
        (*n)--;
}

static em_status put_text(em_row_arena *arena, const char *s, size_t n, em_datum *out,
                          em_error *err) {
    const uint8_t *p = em_row_arena_copy(arena, s, (int64_t)n, err);
    if (!p)
        return err && err->code != EM_OK ? err->code : EM_ERR_NOMEM;
    out->v.str.ptr = p;
    out->v.str.len = (int32_t)n;
    return EM_OK;
}

/* ---------------------------------------------------------------- texts */

/* java.math.BigDecimal.toString: plain unless the adjusted exponent is
 * below -6, then scientific ("5E-18", "-1.5E-7"). */
void em_row_decimal_text(em_i128 unscaled, int scale, char *buf, size_t cap) {
    char digits[64];
    unsigned __int128 u = unscaled < 0 ? -(unsigned __int128)unscaled : (unsigned __int128)unscaled;
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    int adjusted = -scale + (n - 1);
    char out[128];
    int o = 0;
    if (unscaled < 0)
        out[o++] = '-';
    if (adjusted >= -6) {
        rdec x;
        em_rdec_from_i128(&x, unscaled, scale);
        em_rdec_plain(&x, buf, cap);
        return;
    }
    out[o++] = digits[n - 1];
    if (n > 1) {
        out[o++] = '.';
        for (int i = n - 2; i >= 0; i--)
            out[o++] = digits[i];
    }
    snprintf(out + o, sizeof out - (size_t)o, "E%d", adjusted);
    snprintf(buf, cap, "%s", out);
}

void em_row_date_text(int64_t days, char *buf, size_t cap) {
    int64_t y;
    int m, d;
    em_civil_from_days(days, &y, &m, &d);
    if (y > 9999)
        snprintf(buf, cap, "+%lld-%02d-%02d", (long long)y, m, d);
    else if (y < 0)
        snprintf(buf, cap, "-%04lld-%02d-%02d", (long long)-y, m, d);
    else
        snprintf(buf, cap, "%04lld-%02d-%02d", (long long)y, m, d);
}

/* Spark's default timestamp formatter: the fraction without trailing zeros. */
void em_row_timestamp_text(int64_t us, char *buf, size_t cap) {
    int64_t day_us = 86400LL * 1000000;
    int64_t days = us / day_us - (us % day_us < 0);
    int64_t rest = us - days * day_us;
    char date[32];
    em_row_date_text(days, date, sizeof date);
    int64_t secs = rest / 1000000, frac = rest % 1000000;
    char f[16] = "";
    if (frac) {
        snprintf(f, sizeof f, ".%06lld", (long long)frac);
        size_t k = strlen(f);
        while (k > 1 && f[k - 1] == '0')
            f[--k] = '\0';
    }
    snprintf(buf, cap, "%s %02lld:%02lld:%02lld%s", date, (long long)(secs / 3600),
             (long long)(secs / 60 % 60), (long long)(secs % 60), f);
}

/* ---------------------------------------------------------------- parsing */

/* UTF8String.toLong(allowDecimal = true) after trimming: sign, digits, an
 * optional '.' followed by digits that are dropped. */
static bool parse_integral(const uint8_t *p, int64_t n, int64_t lo, int64_t hi, int64_t *out) {
    int64_t i = 0;
    bool neg = false;
    if (n == 0)
        return false;
    if (p[0] == '+' || p[0] == '-') {
        neg = p[0] == '-';
        i++;
        if (n == 1)
            return false;
    }
    /* accumulate negatively so MIN fits */
    __int128 v = 0;
    int64_t start = i;
    for (; i < n; i++) {
        if (p[i] == '.')
            break;
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 - (p[i] - '0');
        if (v < -(__int128)hi - 1 && v < (__int128)lo)
            return false;
    }
    if (i < n) {
        for (int64_t j = i + 1; j < n; j++)
            if (p[j] < '0' || p[j] > '9')
                return false;
        if (i == start && i + 1 == n)
            return false; /* "." or "-." */
    }
    __int128 r = neg ? v : -v;
    if (r < lo || r > hi)
        return false;
    *out = (int64_t)r;
    return true;
}

static bool ci_eq(const uint8_t *p, int64_t n, const char *w) {
    return (int64_t)strlen(w) == n && strncasecmp((const char *)p, w, (size_t)n) == 0;
}

/* Java's Double.parseDouble (decimal forms, "Infinity", "NaN", an f/d
 * suffix) and Spark's extra case-insensitive inf/infinity/nan. */
static bool parse_double(const uint8_t *p, int64_t n, double *out) {
    if (n == 0 || n > 400)
        return false;
    const uint8_t *q = p;
    int64_t m = n;
    bool neg = false;
    if (q[0] == '+' || q[0] == '-') {
        neg = q[0] == '-';
        q++;
        m--;
    }
    if (ci_eq(q, m, "inf") || ci_eq(q, m, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (ci_eq(q, m, "nan")) {
        *out = NAN;
        return true;
    }
    if (m > 0 && (q[m - 1] == 'd' || q[m - 1] == 'D' || q[m - 1] == 'f' || q[m - 1] == 'F'))
        m--;
    /* digits [. digits] [e [sign] digits], at least one mantissa digit */
    int64_t i = 0, md = 0;
    while (i < m && q[i] >= '0' && q[i] <= '9')
        i++, md++;
    if (i < m && q[i] == '.') {
        i++;
        while (i < m && q[i] >= '0' && q[i] <= '9')
            i++, md++;
    }
    if (md == 0)
        return false;
    if (i < m && (q[i] == 'e' || q[i] == 'E')) {
        i++;
        if (i < m && (q[i] == '+' || q[i] == '-'))
            i++;
        int64_t ed = 0;
        while (i < m && q[i] >= '0' && q[i] <= '9')
            i++, ed++;
        if (ed == 0)
            return false;
    }
    if (i != m)
        return false;
    char buf[420];
    memcpy(buf, q, (size_t)m);
    buf[m] = '\0';
    double d = strtod(buf, NULL);
    *out = neg ? -d : d;
    return true;
}

bool em_row_parse_date(const uint8_t *p, int64_t n, int64_t *days) {
    while (n > 0 && (p[0] <= ' ' || p[0] == 0x7f))
        p++, n--;
    while (n > 0 && (p[n - 1] <= ' ' || p[n - 1] == 0x7f))
        n--;
    if (n == 0)
        return false;
    int64_t seg[3] = {1, 1, 1};
    int i = 0, digits = 0;
    int64_t cur = 0, sign = 1, j = 0;
    if (p[0] == '-' || p[0] == '+') {
        sign = p[0] == '-' ? -1 : 1;
        j++;
    }
    for (; j < n && !(p[j] == ' ' || p[j] == 'T'); j++) {
        if (i < 2 && p[j] == '-') {
            if (!(i == 0 ? digits >= 4 && digits <= 7 : digits > 0 && digits <= 2))
                return false;
            seg[i++] = cur;
            cur = 0;
            digits = 0;
            continue;
        }
        if (p[j] < '0' || p[j] > '9')
            return false;
        cur = cur * 10 + (p[j] - '0');
        digits++;
        if (digits > 7)
            return false;
    }
    if (!(i == 0 ? digits >= 4 && digits <= 7 : digits > 0 && digits <= 2))
        return false;
    if (i < 2 && j < n)
        return false;
    seg[i] = cur;
    int64_t y = sign * seg[0];
    int m = (int)seg[1], d = (int)seg[2];
    if (m < 1 || m > 12 || d < 1)
        return false;
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[m - 1] + (m == 2 && leap))
        return false;
    *days = em_days_from_civil(y, m, d);
    return true;
}

/* Spark's stringToTimestamp: a date as stringToDate reads it, optionally
 * followed by ' ' or 'T' and [h]h:[m]m[:[s]s[.fraction]] (up to nine
 * fraction digits, truncated to microseconds), then optionally a zone: Z,
 * UTC, GMT or an offset +h[h][:mm] / -h[h][mm], or a region id (after a
 * blank) from the zone database. Without a zone the text is local time in
 * tz. Time-only strings (which take the current date) are not read here. */
int em_row_parse_timestamp(const uint8_t *p, int64_t n, bool allow_zone, const em_tz *tz,
                        int64_t *us) {
    while (n > 0 && (p[0] <= ' ' || p[0] == 0x7f))
        p++, n--;
    while (n > 0 && (p[n - 1] <= ' ' || p[n - 1] == 0x7f))
        n--;
    int64_t cut = 0;
    while (cut < n && p[cut] != ' ' && p[cut] != 'T')
        cut++;
    int64_t days;
    if (!em_row_parse_date(p, cut, &days))
        return false;
    int64_t t = 0, off = 0;
    bool fixed = false;
    int64_t i = cut < n ? cut + 1 : n;
    if (i < n) {
        int64_t part[3] = {0, 0, 0};
        int k = 0;
        for (; k < 3; k++) {
            int digits = 0;
            while (i < n && p[i] >= '0' && p[i] <= '9' && digits < 2) {
                part[k] = part[k] * 10 + (p[i++] - '0');
                digits++;
            }
            if (digits == 0)
                return false;
            if (k < 2 && i < n && p[i] == ':') {
                i++;
                continue;
            }
            break;
        }
        if (k == 0 || part[0] > 23 || part[1] > 59 || part[2] > 59)
            return false;
        int64_t frac = 0;
        if (k == 2 && i < n && p[i] == '.') {
            i++;
            int digits = 0;
            while (i < n && p[i] >= '0' && p[i] <= '9') {
                if (digits < 6)
                    frac = frac * 10 + (p[i] - '0');
                digits++;
                i++;
            }
            if (digits > 9)
                return false;
            for (; digits < 6; digits++)
                frac *= 10;
        }
        t = ((part[0] * 60 + part[1]) * 60 + part[2]) * 1000000 + frac;
        if (i < n) {
            if (!allow_zone)
                return false;
            const uint8_t *z = p + i;
            int64_t zn = n - i;
            while (zn > 0 && z[0] == ' ')
                z++, zn--;
            if (zn > 0 && ((z[0] >= 'A' && z[0] <= 'Z') || (z[0] >= 'a' && z[0] <= 'z')) &&
                !(zn == 1 && z[0] == 'Z') &&
                !(zn >= 3 && (!memcmp(z, "UTC", 3) || !memcmp(z, "GMT", 3)))) {
                /* a region id; Spark reads an unknown one as invalid */
                char id[128];
                em_error zerr = {0};
                if (zn >= (int64_t)sizeof id)
                    return 0;
                memcpy(id, z, (size_t)zn);
                id[zn] = '\0';
                if (em_tz_find(id, &tz, &zerr) != EM_OK)
                    return zerr.code == EM_ERR_IO ? -1 : 0;
                zn = 0;
            } else {
                fixed = true;
            }
            if (zn == 1 && z[0] == 'Z')
                zn = 0;
            else if (zn >= 3 && (!memcmp(z, "UTC", 3) || !memcmp(z, "GMT", 3)))
                z += 3, zn -= 3;
            if (zn > 0) {
                if (z[0] != '+' && z[0] != '-')
                    return false;
                int64_t hh = 0, mm = 0, j = 1;
                int hd = 0, md = 0;
                while (j < zn && z[j] >= '0' && z[j] <= '9' && hd < 2)
                    hh = hh * 10 + (z[j++] - '0'), hd++;
                if (j < zn && z[j] == ':')
                    j++;
                while (j < zn && z[j] >= '0' && z[j] <= '9' && md < 2)
                    mm = mm * 10 + (z[j++] - '0'), md++;
                if (hd == 0 || j != zn || hh > 18 || mm > 59 || (md != 0 && md != 2))
                    return false;
                off = (hh * 60 + mm) * 60 * 1000000 * (z[0] == '-' ? -1 : 1);
            }
        }
    }
    int64_t local = days * 86400LL * 1000000 + t;
    *us = fixed ? local - off : tz ? em_tz_local_to_utc_us(tz, local) : local;
    return 1;
}

/* ---------------------------------------------------------------- casts */

static em_status cast_error(const row_cast_ctx *c, bool overflow, em_type to, em_datum *out,
                            em_error *err) {
    if (!c->ansi) {
        *out = em_datum_null();
        return EM_OK;
    }
    char tn[40];
    em_type_format(to, tn, sizeof tn);
    /* Spark's Decimal.toPrecision raises its own class for a decimal
     * target (changePrecision failed), CAST_OVERFLOW for the others */
    if (overflow && to.id == EM_TYPE_DECIMAL)
        return EM_FAIL(err, EM_ERR_OVERFLOW,
                       "[NUMERIC_VALUE_OUT_OF_RANGE] the value cannot be represented as "
                       "Decimal(%d, %d): %s (spark.sql.ansi.enabled=false gives null)",
                       to.precision, to.scale, c->what);
    if (overflow)
        return EM_FAIL(err, EM_ERR_OVERFLOW,
                       "[CAST_OVERFLOW] the value is out of the range of %s: %s "
                       "(spark.sql.ansi.enabled=false gives null)",
                       tn, c->what);
    return EM_FAIL(err, EM_ERR_INVALID,
                   "[CAST_INVALID_INPUT] the value cannot be cast to %s: %s "
                   "(spark.sql.ansi.enabled=false gives null)",
                   tn, c->what);
}

static void int_bounds(em_type_id t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case EM_TYPE_BYTE:
        *lo = INT8_MIN, *hi = INT8_MAX;
        break;
    case EM_TYPE_SHORT:
        *lo = INT16_MIN, *hi = INT16_MAX;
        break;
    case EM_TYPE_INT:
        *lo = INT32_MIN, *hi = INT32_MAX;
        break;
    default:
        *lo = INT64_MIN, *hi = INT64_MAX;
        break;
    }
}

int64_t em_row_wrap(em_type_id t, int64_t v) {
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

/* Java's (int) d and (long) d: NaN is 0, out of range saturates. */
static int64_t java_d2l(double d, bool to_int) {
    double lo = to_int ? -2147483648.0 : -9223372036854775808.0;
    double hi = to_int ? 2147483647.0 : 9223372036854775807.0;
    if (isnan(d))
        return 0;
    if (d <= lo)
        return to_int ? INT32_MIN : INT64_MIN;
    if (d >= hi)
        return to_int ? INT32_MAX : INT64_MAX;
    return (int64_t)d;
}

/* The exact value of a double as Scala's BigDecimal(d) sees it: the
 * shortest decimal that reads back (Double.toString), not the binary one. */
static void double_to_rdec(double v, rdec *x) {
    if (v == 0) {
        em_rdec_from_i128(x, 0, 0);
        return;
    }
    char d[40];
    int e;
    em_shortest_digits(v, false, d, &e);
    char buf[80];
    snprintf(buf, sizeof buf, "%s%se%d", v < 0 ? "-" : "", d, e - ((int)strlen(d) - 1));
    (void)em_rdec_parse(buf, (int64_t)strlen(buf), x);
}

double em_row_decimal_to_double(em_i128 unscaled, int scale) {
    /* exact operands below 2^53 and 10^22: one correctly rounded division
     * (Clinger's fast path); otherwise the decimal text through strtod */
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    em_i128 lim = (em_i128)1 << 53;
    if (unscaled > -lim && unscaled < lim && scale >= 0 && scale <= 22)
        return (double)(int64_t)unscaled / p10[scale];
    char buf[80], num[64];
    em_row_decimal_text(unscaled, 0, num, sizeof num);
    snprintf(buf, sizeof buf, "%se-%d", num, scale);
    return strtod(buf, NULL);
}

em_status em_row_cast(const row_cast_ctx *c, const em_datum *in, em_type from, em_type to,
                   em_row_arena *arena, em_datum *out, em_error *err) {
    return em_row_cast_tz(c, NULL, in, from, to, arena, out, err);
}

em_status em_row_cast_tz(const row_cast_ctx *c, const em_tz *tz, const em_datum *in, em_type from,
                      em_type to, em_row_arena *arena, em_datum *out, em_error *err) {
    if (in->is_null || from.id == EM_TYPE_NULL) {
        *out = em_datum_null();
        return EM_OK;
    }
    if (em_type_equal(from, to)) {
        *out = *in;
        return EM_OK;
    }
    memset(out, 0, sizeof *out);
    em_type_id f = from.id, t = to.id;
    char buf[160];
    bool fstr = f == EM_TYPE_STRING;
    const uint8_t *sp = in->v.str.ptr;
    int64_t sn = in->v.str.len;
    if (fstr)
        java_trim(&sp, &sn);

    if (t == EM_TYPE_STRING) {
        switch (f) {
        case EM_TYPE_BOOLEAN:
            snprintf(buf, sizeof buf, "%s", in->v.b ? "true" : "false");
            break;
        case EM_TYPE_BYTE:
        case EM_TYPE_SHORT:
        case EM_TYPE_INT:
        case EM_TYPE_LONG:
            snprintf(buf, sizeof buf, "%lld", (long long)in->v.i64);
            break;
        case EM_TYPE_FLOAT:
        case EM_TYPE_DOUBLE:
            em_java_floating(in->v.f64, f == EM_TYPE_FLOAT, buf, sizeof buf);
            break;
        case EM_TYPE_DECIMAL:
            em_row_decimal_text(in->v.dec, from.scale, buf, sizeof buf);
            break;
        case EM_TYPE_DATE:
            em_row_date_text(in->v.i64, buf, sizeof buf);
            break;
        case EM_TYPE_TIMESTAMP:
            /* the local date-time in the session zone */
            em_row_timestamp_text(tz ? em_tz_utc_to_local_us(tz, in->v.i64) : in->v.i64, buf,
                               sizeof buf);
            break;
        case EM_TYPE_TIMESTAMP_NTZ:
            em_row_timestamp_text(in->v.i64, buf, sizeof buf);
            break;
        case EM_TYPE_BINARY:
            out->v.str = in->v.str;
            return EM_OK;
        default:
            goto unsupported;
        }
        return put_text(arena, buf, strlen(buf), out, err);
    }

    switch (t) {
    case EM_TYPE_BOOLEAN:
        if (f == EM_TYPE_BOOLEAN)
            out->v.b = in->v.b;
        else if (is_integral(f))
            out->v.b = in->v.i64 != 0;
        else if (f == EM_TYPE_FLOAT || f == EM_TYPE_DOUBLE)
            out->v.b = in->v.f64 != 0;
        else if (f == EM_TYPE_DECIMAL)
            out->v.b = in->v.dec != 0;
        else if (fstr) {
            static const char *const yes[] = {"t", "true", "y", "yes", "1"};
            static const char *const no[] = {"f", "false", "n", "no", "0"};
            for (int i = 0; i < 5; i++) {
                if (ci_eq(sp, sn, yes[i])) {
                    out->v.b = true;
                    return EM_OK;
                }
                if (ci_eq(sp, sn, no[i])) {
                    out->v.b = false;
                    return EM_OK;
                }
            }
            return cast_error(c, false, to, out, err);
        } else
            goto unsupported;
        return EM_OK;
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG: {
        int64_t lo, hi, v;
        int_bounds(t, &lo, &hi);
        if (f == EM_TYPE_BOOLEAN) {
            v = in->v.b;
        } else if (is_integral(f)) {
            v = in->v.i64;
            if (v < lo || v > hi) {
                if (c->ansi)
                    return cast_error(c, true, to, out, err);
                v = em_row_wrap(t, v);
            }
        } else if (f == EM_TYPE_FLOAT || f == EM_TYPE_DOUBLE) {
            double d = in->v.f64;
            if (c->ansi) {
                if (isnan(d) || !(floor(d) <= (double)hi && ceil(d) >= (double)lo) ||
                    (t == EM_TYPE_LONG && floor(d) >= 9223372036854775807.0))
                    return cast_error(c, true, to, out, err);
                v = (int64_t)d;
            } else if (t == EM_TYPE_LONG) {
                v = java_d2l(d, false);
            } else {
                v = em_row_wrap(t, java_d2l(d, true));
            }
        } else if (f == EM_TYPE_DECIMAL) {
            rdec x;
            em_rdec_from_i128(&x, in->v.dec, from.scale);
            em_i128 q = in->v.dec;
            for (int i = 0; i < from.scale; i++)
                q /= 10; /* toward zero */
            if (c->ansi) {
                if (q < lo || q > hi)
                    return cast_error(c, true, to, out, err);
                v = (int64_t)q;
            } else {
                /* BigDecimal.longValue: the low 64 bits, then Java narrowing */
                v = em_row_wrap(t, (int64_t)(uint64_t)(unsigned __int128)q);
            }
        } else if (fstr) {
            if (!parse_integral(sp, sn, lo, hi, &v))
                return cast_error(c, false, to, out, err);
        } else if (f == EM_TYPE_TIMESTAMP || f == EM_TYPE_TIMESTAMP_NTZ) {
            int64_t us = in->v.i64;
            v = us / 1000000 - (us % 1000000 < 0);
            if (v < lo || v > hi) {
                if (c->ansi)
                    return cast_error(c, true, to, out, err);
                v = em_row_wrap(t, v);
            }
        } else {
            goto unsupported;
        }
        out->v.i64 = v;
        return EM_OK;
    }
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE: {
        double d;
        if (f == EM_TYPE_BOOLEAN)
            d = in->v.b;
        else if (is_integral(f))
            d = t == EM_TYPE_FLOAT ? (double)(float)in->v.i64 : (double)in->v.i64;
        else if (f == EM_TYPE_FLOAT || f == EM_TYPE_DOUBLE)
            d = in->v.f64;
        else if (f == EM_TYPE_DECIMAL) {
            if (t == EM_TYPE_FLOAT) {
                char num[64], b2[80];
                em_row_decimal_text(in->v.dec, 0, num, sizeof num);
                snprintf(b2, sizeof b2, "%se-%d", num, from.scale);
                d = strtof(b2, NULL);
            } else {
                d = em_row_decimal_to_double(in->v.dec, from.scale);
            }
        } else if (fstr) {
            if (!parse_double(sp, sn, &d))
                return cast_error(c, false, to, out, err);
        } else if (f == EM_TYPE_TIMESTAMP || f == EM_TYPE_TIMESTAMP_NTZ)
            d = (double)in->v.i64 / 1e6;
        else
            goto unsupported;
        out->v.f64 = t == EM_TYPE_FLOAT ? (double)(float)d : d;
        return EM_OK;
    }
    case EM_TYPE_DECIMAL: {
        rdec x;
        if (f == EM_TYPE_BOOLEAN)
            em_rdec_from_i128(&x, in->v.b, 0);
        else if (is_integral(f))
            em_rdec_from_i128(&x, in->v.i64, 0);
        else if (f == EM_TYPE_DECIMAL)
            em_rdec_from_i128(&x, in->v.dec, from.scale);
        else if (f == EM_TYPE_FLOAT || f == EM_TYPE_DOUBLE) {
            if (!isfinite(in->v.f64))
                return cast_error(c, false, to, out, err);
            double_to_rdec(in->v.f64, &x);
        } else if (fstr) {
            if (!em_rdec_parse((const char *)sp, sn, &x))
                return cast_error(c, false, to, out, err);
        } else
            goto unsupported;
        if (!em_rdec_to_precision(&x, to.precision, to.scale, &out->v.dec))
            return cast_error(c, true, to, out, err);
        return EM_OK;
    }
    case EM_TYPE_DATE:
        if (fstr) {
            if (!em_row_parse_date(in->v.str.ptr, in->v.str.len, &out->v.i64))
                return cast_error(c, false, to, out, err);
            return EM_OK;
        }
        if (f == EM_TYPE_TIMESTAMP || f == EM_TYPE_TIMESTAMP_NTZ) {
            int64_t day = 86400LL * 1000000, us = in->v.i64;
            if (f == EM_TYPE_TIMESTAMP && tz)
                us = em_tz_utc_to_local_us(tz, us);
            out->v.i64 = us / day - (us % day < 0);
            return EM_OK;
        }
        goto unsupported;
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
    {
        /* zone-less values become instants in the session zone, and back */
        const em_tz *ztz = t == EM_TYPE_TIMESTAMP ? tz : NULL;
        if (fstr) {
            int ok = em_row_parse_timestamp(in->v.str.ptr, in->v.str.len, t == EM_TYPE_TIMESTAMP, ztz,
                                         &out->v.i64);
            if (ok < 0)
                return EM_FAIL(err, EM_ERR_IO,
                               "a time-zone region id in a timestamp string needs the zone "
                               "database, which is not installed (package tzdata): %s",
                               c->what);
            if (!ok)
                return cast_error(c, false, to, out, err);
            return EM_OK;
        }
        if (f == EM_TYPE_DATE) {
            /* LocalDate.atStartOfDay(zone): a skipped midnight starts the day late */
            out->v.i64 = ztz ? em_tz_day_start(ztz, in->v.i64) * 1000000
                            : in->v.i64 * 86400LL * 1000000;
            return EM_OK;
        }
        if (f == EM_TYPE_TIMESTAMP_NTZ) {
            out->v.i64 = ztz ? em_tz_local_to_utc_us(ztz, in->v.i64) : in->v.i64;
            return EM_OK;
        }
        if (f == EM_TYPE_TIMESTAMP) {
            out->v.i64 = tz ? em_tz_utc_to_local_us(tz, in->v.i64) : in->v.i64;
            return EM_OK;
        }
    }
        goto unsupported;
    case EM_TYPE_BINARY:
        if (fstr) {
            out->v.str = in->v.str;
            return EM_OK;
        }
        goto unsupported;
    default:
        break;
    }
unsupported:;
    char a[40], b[40];
    em_type_format(from, a, sizeof a);
    em_type_format(to, b, sizeof b);
    return EM_FAIL(err, EM_ERR_UNSUPPORTED, "cast from %s to %s is not supported: %s", a, b,
                   c->what);
}

bool em_row_cast_supported(em_type from, em_type to) {
    em_type_id f = from.id, t = to.id;
    if (f == EM_TYPE_NULL || em_type_equal(from, to))
        return true;
    bool fnum = f == EM_TYPE_BOOLEAN || (f >= EM_TYPE_BYTE && f <= EM_TYPE_DECIMAL);
    bool fts = f == EM_TYPE_TIMESTAMP || f == EM_TYPE_TIMESTAMP_NTZ;
    switch (t) {
    case EM_TYPE_STRING:
        return f != EM_TYPE_NULL;
    case EM_TYPE_BOOLEAN:
    case EM_TYPE_FLOAT:
    case EM_TYPE_DOUBLE:
        return fnum || f == EM_TYPE_STRING || (fts && t != EM_TYPE_BOOLEAN);
    case EM_TYPE_BYTE:
    case EM_TYPE_SHORT:
    case EM_TYPE_INT:
    case EM_TYPE_LONG:
        return fnum || f == EM_TYPE_STRING || fts;
    case EM_TYPE_DECIMAL:
        return fnum || f == EM_TYPE_STRING;
    case EM_TYPE_DATE:
        return f == EM_TYPE_STRING || fts;
    case EM_TYPE_TIMESTAMP:
    case EM_TYPE_TIMESTAMP_NTZ:
        return f == EM_TYPE_DATE || f == EM_TYPE_STRING || fts;
    case EM_TYPE_BINARY:
        return f == EM_TYPE_STRING;
    default:
        return false;
    }
}
