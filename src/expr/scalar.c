/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Row-wise scalar functions: strings, dates and the decimal helpers that
 * Spark's optimizer inserts (UnscaledValue, MakeDecimal).
 *
 * Strings are UTF-8 and Spark counts characters, not bytes: substring
 * positions and length() count code points (a byte not of the form
 * 10xxxxxx starts one). substring follows UTF8String.substringSQL: position
 * 1 is the first character, 0 is treated as 1, negative positions count from
 * the end, and a negative length gives "". upper/lower map ASCII, Latin-1,
 * Latin Extended-A, Greek and Cyrillic letters as Java does (other scripts
 * are copied unchanged; no final-sigma rule).
 * trim removes only the space character (0x20), as Spark's trim does.
 *
 * LIKE follows Spark's StringUtils.escapeLikeRegex: '_' is any one
 * character (newlines included), '%' any run of characters, '\' escapes
 * '_', '%' or '\'; an escape before any other character or at the end of
 * the pattern is an error. Matching is greedy with one backtracking point
 * per '%', which is linear in practice and never exponential.
 *
 * Dates are days since 1970-01-01 in the proleptic Gregorian calendar.
 */
#include <math.h>
#include <string.h>

#include "core/invariant.h"
#include "expr/internal.h"

static bool utf8_start(unsigned char c) { return (c & 0xC0) != 0x80; }

static int64_t utf8_chars(const char *s, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += utf8_start((unsigned char)s[i]);
    return k;
}

/* Byte offset of character index `ci` (clamped to n). */
static int64_t utf8_offset(const char *s, int64_t n, int64_t ci) {
    int64_t i = 0, k = -1;
    for (; i < n; i++) {
        if (utf8_start((unsigned char)s[i]))
            k++;
        if (k == ci)
            return i;
    }
    return n;
}

/* Length in bytes of the UTF-8 character starting at s[0] (within n). */
static int32_t utf8_len(const char *s, int32_t n) {
    int32_t i = 1;
    while (i < n && !utf8_start((unsigned char)s[i]))
        i++;
    return i;
}

/* ---------------------------------------------------------------- LIKE */

em_status em_ex_like_check(const char *pat, int32_t pn, em_error *err) {
    for (int32_t i = 0; i < pn; i++) {
        if (pat[i] != '\\')
            continue;
        if (i + 1 >= pn)
            return EM_FAIL(err, EM_ERR_INVALID,
                           "the escape character is not allowed to end the LIKE pattern '%.*s'",
                           (int)pn, pat);
        char c = pat[i + 1];
        if (c != '_' && c != '%' && c != '\\')
            return EM_FAIL(err, EM_ERR_INVALID,
                           "the escape character is not allowed to precede '%c' in the LIKE "
                           "pattern '%.*s'",
                           c, (int)pn, pat);
        i++;
    }
    return EM_OK;
}

/* Matches one pattern element at p against s; *pl gets the element length.
 * Returns the number of bytes of s consumed, or -1 on mismatch. */
static int32_t like_elem(const char *s, int32_t n, const char *p, int32_t pn, int32_t *pl) {
    if (p[0] == '_') {
        *pl = 1;
        return n > 0 ? utf8_len(s, n) : -1;
    }
    int32_t lit = 0;
    if (p[0] == '\\' && pn > 1) {
        lit = 1;
        *pl = 2;
    } else {
        *pl = 1;
    }
    return n > 0 && s[0] == p[lit] ? 1 : -1;
}

/* Patterns made of literal runs and '%' only (the usual shape): the first
 * run must be a prefix, the last a suffix, and the ones between are found
 * leftmost-first, which is optimal because '%' absorbs any gap. */
static bool like_percent_only(const char *s, int32_t n, const char *p, int32_t pn) {
    int32_t si = 0, pi = 0;
    bool anchored = true; /* no '%' seen yet */
    while (pi < pn) {
        if (p[pi] == '%') {
            anchored = false;
            pi++;
            continue;
        }
        int32_t end = pi;
        while (end < pn && p[end] != '%')
            end++;
        int32_t len = end - pi;
        if (end == pn && !anchored) { /* last run: a suffix at or after si */
            return n - si >= len && memcmp(s + n - len, p + pi, (size_t)len) == 0;
        }
        if (anchored) {
            if (n - si < len || memcmp(s + si, p + pi, (size_t)len) != 0)
                return false;
            si += len;
            if (end == pn)
                return si == n;
        } else {
            const char *f = memmem(s + si, (size_t)(n - si), p + pi, (size_t)len);
            if (!f)
                return false;
            si = (int32_t)(f - s) + len;
        }
        pi = end;
    }
    return anchored ? si == n : true;
}

bool em_ex_like_match(const char *s, int32_t n, const char *p, int32_t pn) {
    if (!memchr(p, '_', (size_t)pn) && !memchr(p, '\\', (size_t)pn))
        return like_percent_only(s, n, p, pn);
    int32_t si = 0, pi = 0;
    int32_t star_p = -1, star_s = 0;
    while (si < n || pi < pn) {
        if (pi < pn && p[pi] == '%') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < pn && si <= n) {
            int32_t pl;
            int32_t used = like_elem(s + si, n - si, p + pi, pn - pi, &pl);
            if (used >= 0) {
                si += used;
                pi += pl;
                continue;
            }
        }
        /* mismatch: let the last '%' absorb one more character */
        if (star_p >= 0 && star_s < n) {
            star_s += utf8_len(s + star_s, n - star_s);
            si = star_s;
            pi = star_p;
            continue;
        }
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- case */

/* Simple case mapping of one code point (Java's for Latin-1, Latin
 * Extended-A, Greek and Cyrillic); 0 when unchanged. */
static uint32_t upper_cp(uint32_t c) {
    if (c >= 'a' && c <= 'z')
        return c - 32;
    if (c < 0xB5)
        return 0;
    if (c == 0xB5)
        return 0x39C;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
        return c - 0x20;
    if (c == 0xFF)
        return 0x178;
    if (c == 0x131)
        return 'I';
    if (c == 0x17F)
        return 'S';
    if ((c >= 0x100 && c <= 0x137 && c != 0x130) || (c >= 0x14A && c <= 0x177))
        return c & 1 ? c - 1 : 0;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
        return c & 1 ? 0 : c - 1;
    if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB))
        return c - 0x20;
    if (c == 0x3C2)
        return 0x3A3;
    if (c == 0x3AC)
        return 0x386;
    if (c >= 0x3AD && c <= 0x3AF)
        return c - 0x25;
    if (c == 0x3CC)
        return 0x38C;
    if (c == 0x3CD || c == 0x3CE)
        return c - 0x3F;
    if (c >= 0x430 && c <= 0x44F)
        return c - 0x20;
    if (c >= 0x450 && c <= 0x45F)
        return c - 0x50;
    return 0;
}

static uint32_t lower_cp(uint32_t c) {
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if (c < 0xC0)
        return 0;
    if (c <= 0xDE && c != 0xD7)
        return c + 0x20;
    if (c == 0x178)
        return 0xFF;
    if ((c >= 0x100 && c <= 0x137 && c != 0x130) || (c >= 0x14A && c <= 0x177))
        return c & 1 ? 0 : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
        return c & 1 ? c + 1 : 0;
    if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB))
        return c + 0x20;
    if (c == 0x386)
        return 0x3AC;
    if (c >= 0x388 && c <= 0x38A)
        return c + 0x25;
    if (c == 0x38C)
        return 0x3CC;
    if (c == 0x38E || c == 0x38F)
        return c + 0x3F;
    if (c >= 0x410 && c <= 0x42F)
        return c + 0x20;
    if (c >= 0x400 && c <= 0x40F)
        return c + 0x50;
    return 0;
}

static int utf8_encode(uint32_t c, char *b) {
    if (c < 0x80) {
        b[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        b[0] = (char)(0xC0 | (c >> 6));
        b[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    b[0] = (char)(0xE0 | (c >> 12));
    b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
    b[2] = (char)(0x80 | (c & 0x3F));
    return 3;
}

/* upper/lower: ASCII bytes and the two-byte scripts above are mapped, 'ß'
 * upper-cases to "SS" as in Java; everything else is copied unchanged
 * (Java maps more scripts and applies the final-sigma rule). */
static em_status change_case(const char *s, int32_t n, bool upper, em_strbuf *scratch,
                             ex_value *out, em_error *err) {
    size_t start = scratch->len;
    EM_TRY(em_strbuf_reserve(scratch, (size_t)n * 2 + 1, err));
    int32_t i = 0;
    while (i < n) {
        unsigned char b = (unsigned char)s[i];
        if (b < 0x80) {
            char c = (char)b;
            if (upper && c >= 'a' && c <= 'z')
                c = (char)(c - 32);
            else if (!upper && c >= 'A' && c <= 'Z')
                c = (char)(c + 32);
            EM_TRY(em_strbuf_append(scratch, &c, 1, err));
            i++;
            continue;
        }
        int32_t len = utf8_len(s + i, n - i);
        uint32_t cp = 0, m = 0;
        if (len == 2 && (b & 0xE0) == 0xC0)
            cp = ((uint32_t)(b & 0x1F) << 6) | ((unsigned char)s[i + 1] & 0x3F);
        if (cp == 0xDF && upper) {
            EM_TRY(em_strbuf_append(scratch, "SS", 2, err));
        } else if (cp && (m = upper ? upper_cp(cp) : lower_cp(cp)) != 0) {
            char enc[4];
            EM_TRY(em_strbuf_append(scratch, enc, (size_t)utf8_encode(m, enc), err));
        } else {
            EM_TRY(em_strbuf_append(scratch, s + i, (size_t)len, err));
        }
        i += len;
    }
    out->s = scratch->data + start;
    out->len = (int32_t)(scratch->len - start);
    return EM_OK;
}

/* ---------------------------------------------------------------- helpers */

static em_status put_str(em_strbuf *scratch, const char *p, int64_t n, ex_value *out,
                         em_error *err) {
    size_t start = scratch->len;
    EM_TRY(em_strbuf_append(scratch, p, (size_t)n, err));
    out->s = scratch->data + start;
    out->len = (int32_t)n;
    return EM_OK;
}

em_status em_ex_scalar_apply(const ex_step *st, const em_type *at, const ex_value *a, ex_value *out,
                          em_strbuf *scratch, const char *what, em_error *err) {
    memset(out, 0, sizeof *out);
    switch (st->fn) {
    case EM_FN_SUBSTRING: {
        /* UTF8String.substringSQL(pos, length) */
        int64_t pos = a[1].i;
        int64_t length = st->n_args > 2 ? a[2].i : INT32_MAX;
        int64_t nchars = utf8_chars(a[0].s, a[0].len);
        int64_t start = pos > 0 ? pos - 1 : (pos < 0 ? nchars + pos : 0);
        int64_t end = start + length;
        if (end > INT32_MAX)
            end = INT32_MAX;
        if (start < 0)
            start = 0;
        if (start >= end || start >= nchars) {
            out->s = a[0].s;
            out->len = 0;
            return EM_OK;
        }
        if (end > nchars)
            end = nchars;
        int64_t b0 = utf8_offset(a[0].s, a[0].len, start);
        int64_t b1 = utf8_offset(a[0].s, a[0].len, end);
        out->s = a[0].s + b0;
        out->len = (int32_t)(b1 - b0);
        return EM_OK;
    }
    case EM_FN_CONCAT: {
        size_t start = scratch->len;
        int64_t total = 0;
        for (int i = 0; i < st->n_args; i++) {
            EM_TRY(em_strbuf_append(scratch, a[i].s, (size_t)a[i].len, err));
            total += a[i].len;
        }
        if (total > INT32_MAX)
            return EM_FAIL(err, EM_ERR_OVERFLOW, "concat result over 2 GiB in %s", what);
        out->s = scratch->data + start;
        out->len = (int32_t)total;
        return EM_OK;
    }
    case EM_FN_UPPER:
    case EM_FN_LOWER:
        return change_case(a[0].s, a[0].len, st->fn == EM_FN_UPPER, scratch, out, err);
    case EM_FN_LENGTH:
        out->i = utf8_chars(a[0].s, a[0].len);
        return EM_OK;
    case EM_FN_READ_SIDE_PADDING: {
        /* CharVarcharCodegenUtils.readSidePadding: spaces up to n characters;
         * a longer value (written before the column became CHAR) stays */
        int64_t have = utf8_chars(a[0].s, a[0].len);
        if (have >= a[1].i) {
            *out = a[0];
            return EM_OK;
        }
        size_t start = scratch->len;
        EM_TRY(em_strbuf_append(scratch, a[0].s, (size_t)a[0].len, err));
        for (int64_t k = have; k < a[1].i; k++)
            EM_TRY(em_strbuf_append(scratch, " ", 1, err));
        out->s = scratch->data + start;
        out->len = (int32_t)(scratch->len - start);
        return EM_OK;
    }
    case EM_FN_TRIM:
    case EM_FN_LTRIM:
    case EM_FN_RTRIM: {
        const char *p = a[0].s;
        int32_t n = a[0].len;
        if (st->fn != EM_FN_RTRIM)
            while (n > 0 && p[0] == ' ') {
                p++;
                n--;
            }
        if (st->fn != EM_FN_LTRIM)
            while (n > 0 && p[n - 1] == ' ')
                n--;
        out->s = p;
        out->len = n;
        return EM_OK;
    }
    case EM_FN_LIKE:
        out->i = em_ex_like_match(a[0].s, a[0].len, a[1].s, a[1].len);
        return EM_OK;
    case EM_FN_STARTS_WITH:
        out->i = a[1].len <= a[0].len && memcmp(a[0].s, a[1].s, (size_t)a[1].len) == 0;
        return EM_OK;
    case EM_FN_ENDS_WITH:
        out->i = a[1].len <= a[0].len &&
                 memcmp(a[0].s + a[0].len - a[1].len, a[1].s, (size_t)a[1].len) == 0;
        return EM_OK;
    case EM_FN_CONTAINS:
        out->i = a[1].len == 0 || (a[0].len >= a[1].len && memmem(a[0].s, (size_t)a[0].len, a[1].s,
                                                                  (size_t)a[1].len) != NULL);
        return EM_OK;
    case EM_FN_YEAR:
    case EM_FN_MONTH:
    case EM_FN_DAY:
    case EM_FN_QUARTER: {
        int64_t y;
        int m, d;
        em_civil_from_days(a[0].i, &y, &m, &d);
        out->i = st->fn == EM_FN_YEAR    ? y
                 : st->fn == EM_FN_MONTH ? m
                 : st->fn == EM_FN_DAY   ? d
                                      : (m + 2) / 3;
        return EM_OK;
    }
    case EM_FN_HOUR:
    case EM_FN_MINUTE:
    case EM_FN_SECOND: {
        int64_t us = st->tz ? em_tz_utc_to_local_us(st->tz, a[0].i) : a[0].i;
        int64_t day = 86400LL * 1000000, secs = (us % day + day) % day / 1000000;
        out->i = st->fn == EM_FN_HOUR ? secs / 3600 : st->fn == EM_FN_MINUTE ? secs / 60 % 60 : secs % 60;
        return EM_OK;
    }
    case EM_FN_DATE_ADD:
    case EM_FN_DATE_SUB: {
        /* DateAdd/DateSub add in Java int arithmetic, which wraps in every
         * mode (ANSI included: Spark checks nothing there) */
        int64_t v = st->fn == EM_FN_DATE_ADD ? a[0].i + a[1].i : a[0].i - a[1].i;
        out->i = (int32_t)(uint32_t)(uint64_t)v;
        return EM_OK;
    }
    case EM_FN_DATEDIFF:
        out->i = (int32_t)(a[0].i - a[1].i);
        return EM_OK;
    case EM_FN_UNSCALED:
        out->i = (int64_t)a[0].dec;
        return EM_OK;
    case EM_FN_MAKE_DECIMAL: {
        /* MakeDecimal(long, p, s): overflow of p digits is null unless
         * nullOnOverflow is false (ANSI) */
        em_i128 v = a[0].i;
        if (!em_dec_fits(v, st->type.precision)) {
            if (st->null_on_error) {
                out->null = true;
                return EM_OK;
            }
            return EM_FAIL(err, EM_ERR_OVERFLOW,
                           "[NUMERIC_VALUE_OUT_OF_RANGE] %lld cannot be represented as "
                           "decimal(%d,%d) in %s",
                           (long long)a[0].i, st->type.precision, st->type.scale, what);
        }
        out->dec = v;
        return EM_OK;
    }
    case EM_FN_ISNAN:
        out->i = isnan(a[0].d);
        return EM_OK;
    case EM_FN_NORMALIZE:
        /* NormalizeFloatingNumbers: every NaN to the canonical NaN, -0.0 to 0.0 */
        out->d = isnan(a[0].d) ? NAN : (a[0].d == 0 ? 0.0 : a[0].d);
        return EM_OK;
    case EM_FN_SHIFTLEFT:
    case EM_FN_SHIFTRIGHT: {
        /* Java masks the shift distance to the operand width */
        bool is_long = st->type.id == EM_TYPE_LONG;
        int sh = (int)(a[1].i & (is_long ? 63 : 31));
        if (st->fn == EM_FN_SHIFTLEFT)
            out->i =
                is_long ? (int64_t)((uint64_t)a[0].i << sh) : (int32_t)((uint32_t)a[0].i << sh);
        else
            out->i = is_long ? a[0].i >> sh : (int32_t)a[0].i >> sh;
        return EM_OK;
    }
    case EM_FN_FLOOR:
    case EM_FN_CEIL: {
        bool fl = st->fn == EM_FN_FLOOR;
        if (at[0].id == EM_TYPE_DECIMAL) {
            /* ROUND_FLOOR / ROUND_CEILING to scale 0 */
            em_i128 p = em_dec_pow10(at[0].scale), q = a[0].dec / p, r = a[0].dec % p;
            if (r != 0 && (fl ? a[0].dec < 0 : a[0].dec > 0))
                q += fl ? -1 : 1;
            out->dec = q;
            return EM_OK;
        }
        if (at[0].id == EM_TYPE_LONG) {
            out->i = a[0].i;
            return EM_OK;
        }
        double d = fl ? floor(a[0].d) : ceil(a[0].d);
        /* Java's (long) conversion: NaN -> 0, saturating */
        out->i = isnan(d)                      ? 0
                 : d >= 9223372036854775807.0  ? INT64_MAX
                 : d <= -9223372036854775808.0 ? INT64_MIN
                                               : (int64_t)d;
        return EM_OK;
    }
    case EM_FN_SQRT:
        out->d = sqrt(a[0].d);
        return EM_OK;
    case EM_FN_EXP:
        out->d = exp(a[0].d);
        return EM_OK;
    case EM_FN_LN:
        /* Spark's Logarithm: null for x <= 0 */
        if (a[0].d <= 0) {
            out->null = true;
            return EM_OK;
        }
        out->d = log(a[0].d);
        return EM_OK;
    case EM_FN_POWER:
        out->d = pow(a[0].d, a[1].d);
        return EM_OK;
    case EM_FN_PMOD: {
        /* Pmod: a zero divisor is null, or DIVIDE_BY_ZERO in ANSI mode; a
         * negative remainder becomes (r + n) % n, where r + n is Java
         * arithmetic of the operand type: it wraps for int and long (byte
         * and short promote to int and cannot) */
        int64_t n = a[1].i;
        if (n == 0) {
            if (!st->null_on_error)
                return EM_FAIL(err, EM_ERR_INVALID,
                               "[DIVIDE_BY_ZERO] division by zero in %s (set "
                               "spark.sql.ansi.enabled=false to get null)",
                               what);
            out->null = true;
            return EM_OK;
        }
        int64_t r = n == -1 ? 0 : a[0].i % n;
        if (r < 0) {
            int64_t sum = (int64_t)((uint64_t)r + (uint64_t)n);
            if (st->type.id == EM_TYPE_INT)
                sum = (int32_t)(uint32_t)(uint64_t)sum;
            r = n == -1 ? 0 : sum % n;
        }
        out->i = r;
        return EM_OK;
    }
    case EM_FN_ROUND: {
        int scale = (int)st->iarg;
        if (at[0].id == EM_TYPE_DECIMAL) {
            em_i128 v;
            /* round to `scale` digits HALF_UP, then back to the result scale */
            int tmp = scale < at[0].scale ? scale : at[0].scale;
            if (!em_dec_rescale(a[0].dec, at[0].scale, tmp, 0, &v) ||
                !em_dec_rescale(v, tmp, st->type.scale, st->type.precision, &v)) {
                if (st->null_on_error) {
                    out->null = true;
                    return EM_OK;
                }
                return EM_FAIL(err, EM_ERR_OVERFLOW, "[NUMERIC_VALUE_OUT_OF_RANGE] in %s", what);
            }
            out->dec = v;
            return EM_OK;
        }
        if (at[0].id == EM_TYPE_DOUBLE || at[0].id == EM_TYPE_FLOAT) {
            /* Spark rounds doubles through BigDecimal(d) HALF_UP */
            double d = a[0].d;
            if (!isfinite(d)) {
                out->d = d;
                return EM_OK;
            }
            em_i128 v;
            if (scale >= -38 && scale <= 30 && fabs(d) < 1e30 &&
                em_dec_from_double(d, 0, scale > 0 ? scale : 0, &v)) {
                if (scale < 0) {
                    em_i128 p = em_dec_pow10(-scale);
                    em_i128 q = v / p, r = v % p;
                    if ((r < 0 ? -r : r) * 2 >= p)
                        q += v < 0 ? -1 : 1;
                    out->d = (double)(q * p);
                } else {
                    out->d = em_dec_to_double(v, scale);
                }
            } else {
                out->d = d;
            }
            return EM_OK;
        }
        /* integral: round to a negative scale HALF_UP */
        int64_t v = a[0].i;
        if (scale >= 0) {
            out->i = v;
            return EM_OK;
        }
        if (scale < -18) {
            out->i = 0;
            return EM_OK;
        }
        int64_t p = (int64_t)em_dec_pow10(-scale);
        int64_t q = v / p, r = v % p;
        if ((r < 0 ? -r : r) >= p - (r < 0 ? -r : r))
            q += v < 0 ? -1 : 1;
        out->i = q * p;
        return EM_OK;
    }
    default: /* catalog functions the vectorized engine compiles by paths of their own */
        break;
    }
    (void)put_str;
    return EM_UNREACHABLE(err, "unknown scalar function in %s", what);
}
