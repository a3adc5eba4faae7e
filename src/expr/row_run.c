/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Evaluation of a bound row expression (row_eval.h) over one row, by
 * walking the tree. Each case is Spark's definition written out: Java
 * integer wraparound unless ANSI, null for division by zero unless ANSI,
 * decimals computed exactly then rounded HALF_UP to the result type, and
 * three-valued logic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/invariant.h"
#include "expr/row_cast.h"
#include "expr/row_eval.h"

typedef struct run {
    em_rexpr *x;
    const em_datum *row;
    em_row_arena *arena;
    em_error *err;
} run;

static em_status eval(run *r, rnode *n, em_datum *out);

static em_status set_null(em_datum *out) {
    *out = em_datum_null();
    return EM_OK;
}

static em_status fail_data(run *r, const rnode *n, em_status code, const char *cls,
                           const char *detail) {
    char d[400];
    em_row_describe(n->src, d, sizeof d);
    return EM_FAIL(r->err, code, "[%s] %s in %s (spark.sql.ansi.enabled=false gives null)", cls,
                   detail, d);
}

static em_status nomem(run *r) {
    return r->err && r->err->code != EM_OK ? r->err->code : EM_ERR_NOMEM;
}

/* ------------------------------------------------------------------ arithmetic */

static void to_rdec(const em_datum *d, em_type t, rdec *x) {
    em_rdec_from_i128(x, t.id == EM_TYPE_DECIMAL ? d->v.dec : (em_i128)d->v.i64,
                   t.id == EM_TYPE_DECIMAL ? t.scale : 0);
}

static em_status dec_result(run *r, const rnode *n, const rdec *x, em_datum *out) {
    if (em_rdec_to_precision(x, n->type.precision, n->type.scale, &out->v.dec))
        return EM_OK;
    if (n->null_on_error)
        return set_null(out);
    char tn[40];
    em_type_format(n->type, tn, sizeof tn);
    char why[80];
    snprintf(why, sizeof why, "the value cannot be represented as %s", tn);
    return fail_data(r, n, EM_ERR_OVERFLOW, "NUMERIC_VALUE_OUT_OF_RANGE", why);
}

static em_status div_zero(run *r, const rnode *n, em_datum *out) {
    if (!r->x->ansi)
        return set_null(out);
    return fail_data(r, n, EM_ERR_INVALID, "DIVIDE_BY_ZERO", "division by zero");
}

static em_status int_overflow(run *r, const rnode *n, __int128 v, em_datum *out) {
    int64_t w = em_row_wrap(n->type.id, (int64_t)(uint64_t)(unsigned __int128)v);
    if (w == v) {
        out->v.i64 = w;
        return EM_OK;
    }
    if (r->x->ansi) {
        char tn[40];
        em_type_format(n->type, tn, sizeof tn);
        char why[80];
        snprintf(why, sizeof why, "%s overflow", tn);
        return fail_data(r, n, EM_ERR_OVERFLOW, "ARITHMETIC_OVERFLOW", why);
    }
    out->v.i64 = w;
    return EM_OK;
}

static em_status eval_arith(run *r, rnode *n, em_datum *out) {
    em_datum a, b;
    EM_TRY(eval(r, n->kids[0], &a));
    if (a.is_null)
        return set_null(out);
    EM_TRY(eval(r, n->kids[1], &b));
    if (b.is_null)
        return set_null(out);
    memset(out, 0, sizeof *out);
    em_type t = n->type;
    if (t.id == EM_TYPE_DECIMAL) {
        rdec x, y, z;
        to_rdec(&a, n->kids[0]->type, &x);
        to_rdec(&b, n->kids[1]->type, &y);
        switch (n->op) {
        case EM_OP_ADD:
        case EM_OP_SUB:
            em_rdec_add(&x, &y, n->op == EM_OP_SUB, &z);
            break;
        case EM_OP_MUL:
            em_rdec_mul(&x, &y, &z);
            break;
        case EM_OP_DIV:
        case EM_OP_REM:
            if (em_rdec_is_zero(&y))
                return div_zero(r, n, out);
            if (n->op == EM_OP_DIV)
                em_rdec_div(&x, &y, &z);
            else
                em_rdec_rem(&x, &y, &z);
            break;
        default:
            return EM_UNREACHABLE(r->err, "decimal operator %s", em_binop_symbol(n->op));
        }
        return dec_result(r, n, &z, out);
    }
    if (t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE) {
        double x = a.v.f64, y = b.v.f64, z;
        switch (n->op) {
        case EM_OP_ADD:
            z = x + y;
            break;
        case EM_OP_SUB:
            z = x - y;
            break;
        case EM_OP_MUL:
            z = x * y;
            break;
        case EM_OP_DIV:
            if (y == 0)
                return div_zero(r, n, out);
            z = x / y;
            break;
        case EM_OP_REM:
            if (y == 0)
                return div_zero(r, n, out);
            z = fmod(x, y);
            break;
        default:
            return EM_UNREACHABLE(r->err, "floating operator %s",
                           em_binop_symbol(n->op));
        }
        out->v.f64 = t.id == EM_TYPE_FLOAT ? (double)(float)z : z;
        return EM_OK;
    }
    __int128 x = a.v.i64, y = b.v.i64;
    switch (n->op) {
    case EM_OP_ADD:
        return int_overflow(r, n, x + y, out);
    case EM_OP_SUB:
        return int_overflow(r, n, x - y, out);
    case EM_OP_MUL:
        return int_overflow(r, n, x * y, out);
    case EM_OP_INTDIV:
        if (y == 0)
            return div_zero(r, n, out);
        if (t.id != EM_TYPE_LONG) {
            /* Java: int MIN / -1 wraps to MIN without raising */
            out->v.i64 = em_row_wrap(t.id, (int64_t)(x / y));
            return EM_OK;
        }
        return int_overflow(r, n, x / y, out);
    case EM_OP_REM:
        if (y == 0)
            return div_zero(r, n, out);
        out->v.i64 = (int64_t)(x % y); /* C and Java both truncate; MIN % -1 = 0 */
        return EM_OK;
    case EM_OP_BITAND:
        out->v.i64 = a.v.i64 & b.v.i64;
        return EM_OK;
    case EM_OP_BITOR:
        out->v.i64 = a.v.i64 | b.v.i64;
        return EM_OK;
    case EM_OP_BITXOR:
        out->v.i64 = a.v.i64 ^ b.v.i64;
        return EM_OK;
    default:
        return EM_UNREACHABLE(r->err, "integral operator %s", em_binop_symbol(n->op));
    }
}

/* Three-way comparison of non-null values of the node's operand types. */
static int compare(const em_datum *a, em_type ta, const em_datum *b, em_type tb) {
    if (ta.id == EM_TYPE_DECIMAL && tb.id == EM_TYPE_DECIMAL && ta.scale != tb.scale) {
        rdec x, y;
        to_rdec(a, ta, &x);
        to_rdec(b, tb, &y);
        return em_rdec_cmp(&x, &y);
    }
    return em_datum_compare(a, b, ta);
}

static em_status eval_cmp(run *r, rnode *n, em_datum *out) {
    em_datum a, b;
    EM_TRY(eval(r, n->kids[0], &a));
    EM_TRY(eval(r, n->kids[1], &b));
    memset(out, 0, sizeof *out);
    if (n->op == EM_OP_NULLSAFE_EQ) {
        if (a.is_null || b.is_null)
            out->v.b = a.is_null && b.is_null;
        else
            out->v.b = compare(&a, n->kids[0]->type, &b, n->kids[1]->type) == 0;
        return EM_OK;
    }
    if (a.is_null || b.is_null)
        return set_null(out);
    int c = compare(&a, n->kids[0]->type, &b, n->kids[1]->type);
    switch (n->op) {
    case EM_OP_EQ:
        out->v.b = c == 0;
        break;
    case EM_OP_LT:
        out->v.b = c < 0;
        break;
    case EM_OP_LE:
        out->v.b = c <= 0;
        break;
    case EM_OP_GT:
        out->v.b = c > 0;
        break;
    default:
        out->v.b = c >= 0;
        break;
    }
    return EM_OK;
}

/* ------------------------------------------------------------------ strings */

static bool utf8_lead(uint8_t c) { return (c & 0xC0) != 0x80; }

static int64_t n_chars(const uint8_t *p, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += utf8_lead(p[i]);
    return k;
}

/* Byte offset of character ci (n when past the end). */
static int64_t char_at(const uint8_t *p, int64_t n, int64_t ci) {
    int64_t k = -1;
    for (int64_t i = 0; i < n; i++)
        if (utf8_lead(p[i]) && ++k == ci)
            return i;
    return n;
}

static uint32_t decode(const uint8_t *p, int64_t n, int64_t *i) {
    uint8_t c = p[*i];
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (*i + len > n) {
        (*i)++;
        return c;
    }
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++)
        cp = (cp << 6) | (p[*i + k] & 0x3F);
    *i += len;
    return cp;
}

static int encode(uint32_t cp, uint8_t *o) {
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Java's Character.toUpperCase / toLowerCase for the scripts the engine
 * maps: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic. */
static uint32_t to_upper(uint32_t c) {
    if (c >= 'a' && c <= 'z')
        return c - 32;
    if (c == 0xB5)
        return 0x39C;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7)
        return c - 32;
    if (c == 0xFF)
        return 0x178;
    if (c == 0x131)
        return 'I';
    if (c == 0x17F)
        return 'S';
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && (c & 1) && c != 0x131)
        return c - 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && !(c & 1))
        return c - 1;
    if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB))
        return c - 32;
    if (c == 0x3C2)
        return 0x3A3;
    if (c == 0x3AC)
        return 0x386;
    if (c >= 0x3AD && c <= 0x3AF)
        return c - 37;
    if (c == 0x3CC)
        return 0x38C;
    if (c == 0x3CD || c == 0x3CE)
        return c - 63;
    if (c >= 0x430 && c <= 0x44F)
        return c - 32;
    if (c >= 0x450 && c <= 0x45F)
        return c - 80;
    return c;
}

static uint32_t to_lower(uint32_t c) {
    if (c >= 'A' && c <= 'Z')
        return c + 32;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7)
        return c + 32;
    if (c == 0x178)
        return 0xFF;
    if (((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && !(c & 1) && c != 0x130)
        return c + 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && (c & 1))
        return c + 1;
    if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB))
        return c + 32;
    if (c == 0x386)
        return 0x3AC;
    if (c >= 0x388 && c <= 0x38A)
        return c + 37;
    if (c == 0x38C)
        return 0x3CC;
    if (c == 0x38E || c == 0x38F)
        return c + 63;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    return c;
}

static em_status change_case(run *r, const em_datum *s, bool upper, em_datum *out) {
    const uint8_t *p = s->v.str.ptr;
    int64_t n = s->v.str.len;
    uint8_t *o = em_row_arena_alloc(r->arena, n * 3 + 1, r->err);
    if (!o)
        return nomem(r);
    int64_t k = 0, i = 0;
    while (i < n) {
        uint32_t c = decode(p, n, &i);
        if (upper && c == 0xDF) { /* ß -> SS, as String.toUpperCase */
            o[k++] = 'S';
            o[k++] = 'S';
            continue;
        }
        k += encode(upper ? to_upper(c) : to_lower(c), o + k);
    }
    out->v.str.ptr = o;
    out->v.str.len = (int32_t)k;
    return EM_OK;
}

/* LIKE over code points: '_' one character, '%' any run, '\x' the
 * character x. Backtracks to the last '%' on a mismatch. */
static bool like(const uint8_t *s, int64_t sn, const uint8_t *p, int64_t pn) {
    int64_t si = 0, pi = 0, star_p = -1, star_s = 0;
    while (si < sn) {
        if (pi < pn && p[pi] == '%') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < pn) {
            int64_t pj = pi, sj = si;
            bool any = p[pj] == '_';
            if (p[pj] == '\\' && pj + 1 < pn)
                pj++;
            uint32_t pc = decode(p, pn, &pj), sc = decode(s, sn, &sj);
            if (any || pc == sc) {
                pi = pj;
                si = sj;
                continue;
            }
        }
        if (star_p < 0)
            return false;
        /* the last '%' swallows one more character */
        pi = star_p;
        decode(s, sn, &star_s);
        si = star_s;
    }
    while (pi < pn && p[pi] == '%')
        pi++;
    return pi == pn;
}

static em_status put_bytes(run *r, const uint8_t *p, int64_t n, em_datum *out) {
    out->v.str.ptr = p;
    out->v.str.len = (int32_t)n;
    (void)r;
    return EM_OK;
}

/* ------------------------------------------------------------------ functions */

static em_status round_value(run *r, rnode *n, const em_datum *a, em_datum *out) {
    em_type t = n->kids[0]->type;
    int sc = (int)n->iarg;
    bool even = n->fn == EM_FN_BROUND;
    if (t.id == EM_TYPE_DECIMAL) {
        rdec x;
        to_rdec(a, t, &x);
        em_rdec_rescale_mode(&x, sc < t.scale ? sc : t.scale, even);
        return dec_result(r, n, &x, out);
    }
    if (t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE) {
        /* BigDecimal(d) (through Double.toString) rounded HALF_UP */
        double d = a->v.f64;
        if (!isfinite(d) || d == 0) {
            out->v.f64 = d == 0 ? 0.0 : d; /* BigDecimal has no -0 */
            return EM_OK;
        }
        char dig[40], txt[80], plain[300];
        int e;
        em_shortest_digits(d, t.id == EM_TYPE_FLOAT, dig, &e);
        snprintf(txt, sizeof txt, "%s%se%d", d < 0 ? "-" : "", dig, e - ((int)strlen(dig) - 1));
        rdec x;
        if (!em_rdec_parse(txt, (int64_t)strlen(txt), &x)) {
            out->v.f64 = d;
            return EM_OK;
        }
        if (sc >= x.scale) {
            out->v.f64 = d; /* no digit to drop */
            return EM_OK;
        }
        em_rdec_rescale_mode(&x, sc, even);
        int scale = x.scale;
        x.scale = 0;
        em_rdec_plain(&x, plain, sizeof plain - 16);
        snprintf(plain + strlen(plain), 16, "e%d", -scale);
        double v = strtod(plain, NULL);
        out->v.f64 = t.id == EM_TYPE_FLOAT ? (double)(float)v : v;
        return EM_OK;
    }
    int64_t v = a->v.i64;
    if (sc >= 0) {
        out->v.i64 = v;
        return EM_OK;
    }
    rdec x;
    em_rdec_from_i128(&x, v, 0);
    em_rdec_rescale_mode(&x, sc, even);
    em_rdec_rescale(&x, 0);
    em_i128 q;
    if (!em_rdec_to_precision(&x, 38, 0, &q))
        q = 0;
    out->v.i64 = em_row_wrap(n->type.id, (int64_t)q);
    return EM_OK;
}

/* ------------------------------------------------------------------ more functions */

static const int month_days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

static int days_in_month(int64_t y, int m) {
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return month_days[m - 1] + (m == 2 && leap);
}

/* 0 = Monday ... 6 = Sunday (1970-01-01 was a Thursday). */
static int weekday_of(int64_t days) { return (int)(((days + 3) % 7 + 7) % 7); }

/* ISO 8601 week: the week's Thursday decides the year. */
static int iso_week(int64_t days) {
    int64_t thursday = days - weekday_of(days) + 3, y;
    int m, d;
    em_civil_from_days(thursday, &y, &m, &d);
    return (int)((thursday - em_days_from_civil(y, 1, 1)) / 7 + 1);
}

static em_status eval_null_aware(run *r, rnode *n, const em_datum *a, em_datum *out) {
    switch (n->fn) {
    case EM_FN_HASH: {
        /* Murmur3Hash(children, 42): nulls leave the running hash */
        uint32_t h = 42;
        for (int i = 0; i < n->n; i++)
            h = em_datum_murmur3(&a[i], n->kids[i]->type, h);
        out->v.i64 = (int32_t)h;
        return EM_OK;
    }
    case EM_FN_GREATEST:
    case EM_FN_LEAST: {
        /* nulls skipped; null only when every argument is */
        *out = em_datum_null();
        for (int i = 0; i < n->n; i++) {
            if (a[i].is_null)
                continue;
            int c = out->is_null ? 0 : em_datum_compare(&a[i], out, n->type);
            if (out->is_null || (n->fn == EM_FN_GREATEST ? c > 0 : c < 0))
                *out = a[i];
        }
        return EM_OK;
    }
    default: { /* EM_FN_CONCAT_WS: a null separator gives null, null values are skipped */
        if (a[0].is_null) {
            *out = em_datum_null();
            return EM_OK;
        }
        int64_t total = 0;
        for (int i = 1; i < n->n; i++)
            if (!a[i].is_null)
                total += a[i].v.str.len + a[0].v.str.len;
        uint8_t *o = em_row_arena_alloc(r->arena, total, r->err);
        if (!o)
            return nomem(r);
        int64_t k = 0;
        bool first = true;
        for (int i = 1; i < n->n; i++) {
            if (a[i].is_null)
                continue;
            if (!first) {
                memcpy(o + k, a[0].v.str.ptr, (size_t)a[0].v.str.len);
                k += a[0].v.str.len;
            }
            first = false;
            memcpy(o + k, a[i].v.str.ptr, (size_t)a[i].v.str.len);
            k += a[i].v.str.len;
        }
        return put_bytes(r, o, k, out);
    }
    }
}

/* Character index (0-based) of the first occurrence of w in s at or after
 * character `from`, or -1. */
static int64_t index_of(const em_datum *s, const em_datum *w, int64_t from) {
    const uint8_t *p = s->v.str.ptr;
    int64_t n = s->v.str.len, wn = w->v.str.len;
    int64_t ci = 0;
    for (int64_t i = 0; i <= n; i++) {
        if (i < n && !utf8_lead(p[i]))
            continue;
        if (ci >= from && i + wn <= n && (wn == 0 || memcmp(p + i, w->v.str.ptr, (size_t)wn) == 0))
            return ci;
        ci++;
    }
    return -1;
}

/* lpad/rpad (UTF8String.lpad/rpad): cut to len characters, or fill with
 * the pad repeated (and cut) on the left or right. */
static em_status pad(run *r, const em_datum *s, int64_t len, const em_datum *p, bool left,
                     em_datum *out) {
    int64_t have = n_chars(s->v.str.ptr, s->v.str.len);
    if (len <= 0)
        return put_bytes(r, s->v.str.ptr, 0, out);
    if (len <= have || p->v.str.len == 0) {
        int64_t cut = char_at(s->v.str.ptr, s->v.str.len, len < have ? len : have);
        return put_bytes(r, s->v.str.ptr, cut, out);
    }
    int64_t fill = len - have, pchars = n_chars(p->v.str.ptr, p->v.str.len);
    int64_t full = fill / pchars, part = fill % pchars;
    int64_t part_bytes = char_at(p->v.str.ptr, p->v.str.len, part);
    int64_t total = s->v.str.len + full * p->v.str.len + part_bytes;
    uint8_t *o = em_row_arena_alloc(r->arena, total, r->err);
    if (!o)
        return nomem(r);
    int64_t k = 0;
    if (!left) {
        memcpy(o, s->v.str.ptr, (size_t)s->v.str.len);
        k = s->v.str.len;
    }
    for (int64_t i = 0; i < full; i++, k += p->v.str.len)
        memcpy(o + k, p->v.str.ptr, (size_t)p->v.str.len);
    memcpy(o + k, p->v.str.ptr, (size_t)part_bytes);
    k += part_bytes;
    if (left) {
        memcpy(o + k, s->v.str.ptr, (size_t)s->v.str.len);
        k += s->v.str.len;
    }
    return put_bytes(r, o, k, out);
}

static em_status eval_more(run *r, rnode *n, const em_datum *a, em_datum *out) {
    switch (n->fn) {
    case EM_FN_DAYOFWEEK:
        out->v.i64 = (weekday_of(a[0].v.i64) + 1) % 7 + 1; /* 1 = Sunday */
        return EM_OK;
    case EM_FN_WEEKDAY:
        out->v.i64 = weekday_of(a[0].v.i64);
        return EM_OK;
    case EM_FN_WEEKOFYEAR:
        out->v.i64 = iso_week(a[0].v.i64);
        return EM_OK;
    case EM_FN_LAST_DAY:
    case EM_FN_ADD_MONTHS: {
        int64_t y;
        int m, d;
        em_civil_from_days(a[0].v.i64, &y, &m, &d);
        if (n->fn == EM_FN_ADD_MONTHS) {
            /* LocalDate.plusMonths: the day is kept, clamped to the month */
            int64_t months = y * 12 + (m - 1) + a[1].v.i64;
            y = months / 12 - (months % 12 < 0);
            m = (int)(months - y * 12) + 1;
            if (d > days_in_month(y, m))
                d = days_in_month(y, m);
        } else {
            d = days_in_month(y, m);
        }
        out->v.i64 = em_days_from_civil(y, m, d);
        return EM_OK;
    }
    case EM_FN_MAKE_DATE: {
        int64_t y = a[0].v.i64, m = a[1].v.i64, d = a[2].v.i64;
        if (m < 1 || m > 12 || d < 1 || y < -999999999 || y > 999999999 ||
            d > days_in_month(y, (int)m)) {
            if (!n->null_on_error)
                return fail_data(r, n, EM_ERR_INVALID, "DATETIME_FIELD_OUT_OF_BOUNDS",
                                 "invalid date");
            *out = em_datum_null();
            return EM_OK;
        }
        out->v.i64 = em_days_from_civil(y, (int)m, (int)d);
        return EM_OK;
    }
    case EM_FN_HOUR:
    case EM_FN_MINUTE:
    case EM_FN_SECOND: {
        int64_t day = 86400LL * 1000000, t = a[0].v.i64;
        if (n->tz) /* the instant's local time in the session zone */
            t = em_tz_utc_to_local_us(n->tz, t);
        int64_t us = ((t % day) + day) % day;
        int64_t secs = us / 1000000;
        out->v.i64 = n->fn == EM_FN_HOUR ? secs / 3600 : n->fn == EM_FN_MINUTE ? secs / 60 % 60 : secs % 60;
        return EM_OK;
    }
    case EM_FN_ASCII: {
        int64_t i = 0;
        out->v.i64 = a[0].v.str.len ? decode(a[0].v.str.ptr, a[0].v.str.len, &i) : 0;
        return EM_OK;
    }
    case EM_FN_OCTET_LENGTH:
    case EM_FN_BIT_LENGTH:
        out->v.i64 = (int64_t)a[0].v.str.len * (n->fn == EM_FN_BIT_LENGTH ? 8 : 1);
        return EM_OK;
    case EM_FN_INITCAP: {
        /* lower-case everything, then upper-case the first letter of each
         * space-separated word */
        EM_TRY(change_case(r, &a[0], false, out));
        uint8_t *o = (uint8_t *)out->v.str.ptr;
        int64_t n_out = out->v.str.len;
        uint8_t *t = em_row_arena_alloc(r->arena, n_out * 3 + 1, r->err);
        if (!t)
            return nomem(r);
        int64_t i = 0, k = 0;
        bool start = true;
        while (i < n_out) {
            uint32_t c = decode(o, n_out, &i);
            k += encode(start ? to_upper(c) : c, t + k);
            start = c == ' ';
        }
        return put_bytes(r, t, k, out);
    }
    case EM_FN_INSTR:
        out->v.i64 = index_of(&a[0], &a[1], 0) + 1;
        return EM_OK;
    case EM_FN_LOCATE: {
        int64_t pos = n->n > 2 ? a[2].v.i64 : 1;
        out->v.i64 = pos < 1 ? 0 : index_of(&a[1], &a[0], pos - 1) + 1;
        return EM_OK;
    }
    case EM_FN_READ_SIDE_PADDING:
        /* CHAR(n) columns: spaces up to n characters, a longer value as it is */
        if (n_chars(a[0].v.str.ptr, a[0].v.str.len) >= a[1].v.i64)
            return put_bytes(r, a[0].v.str.ptr, a[0].v.str.len, out);
        return pad(r, &a[0], a[1].v.i64, &(em_datum){.v.str = {(const uint8_t *)" ", 1}}, false,
                   out);
    case EM_FN_LPAD:
    case EM_FN_RPAD: {
        em_datum space = {0};
        space.v.str.ptr = (const uint8_t *)" ";
        space.v.str.len = 1;
        return pad(r, &a[0], a[1].v.i64, n->n > 2 ? &a[2] : &space, n->fn == EM_FN_LPAD, out);
    }
    case EM_FN_REPEAT: {
        int64_t times = a[1].v.i64 > 0 ? a[1].v.i64 : 0, len = a[0].v.str.len;
        if (times * len > INT32_MAX)
            return fail_data(r, n, EM_ERR_INVALID, "INVALID_PARAMETER_VALUE",
                             "the result would exceed 2 GiB");
        uint8_t *o = em_row_arena_alloc(r->arena, times * len, r->err);
        if (!o)
            return nomem(r);
        for (int64_t i = 0; i < times; i++)
            memcpy(o + i * len, a[0].v.str.ptr, (size_t)len);
        return put_bytes(r, o, times * len, out);
    }
    case EM_FN_REPLACE: {
        const uint8_t *s = a[0].v.str.ptr, *w = a[1].v.str.ptr;
        int64_t sn = a[0].v.str.len, wn = a[1].v.str.len;
        const uint8_t *rep = n->n > 2 ? a[2].v.str.ptr : (const uint8_t *)"";
        int64_t rn = n->n > 2 ? a[2].v.str.len : 0;
        if (wn == 0)
            return put_bytes(r, s, sn, out);
        int64_t hits = 0;
        for (int64_t i = 0; i + wn <= sn;)
            if (memcmp(s + i, w, (size_t)wn) == 0) {
                hits++;
                i += wn;
            } else {
                i++;
            }
        uint8_t *o = em_row_arena_alloc(r->arena, sn + hits * (rn - wn) + 1, r->err);
        if (!o)
            return nomem(r);
        int64_t k = 0;
        for (int64_t i = 0; i < sn;) {
            if (i + wn <= sn && memcmp(s + i, w, (size_t)wn) == 0) {
                memcpy(o + k, rep, (size_t)rn);
                k += rn;
                i += wn;
            } else {
                o[k++] = s[i++];
            }
        }
        return put_bytes(r, o, k, out);
    }
    case EM_FN_REVERSE: {
        const uint8_t *s = a[0].v.str.ptr;
        int64_t sn = a[0].v.str.len, k = sn;
        uint8_t *o = em_row_arena_alloc(r->arena, sn, r->err);
        if (!o)
            return nomem(r);
        for (int64_t i = 0; i < sn;) {
            int64_t j = i;
            decode(s, sn, &j);
            k -= j - i;
            memcpy(o + k, s + i, (size_t)(j - i));
            i = j;
        }
        return put_bytes(r, o, sn, out);
    }
    case EM_FN_TRANSLATE: {
        /* each character of `matching` maps to the one at the same place
         * in `replace` (the first occurrence wins), or is deleted */
        const uint8_t *s = a[0].v.str.ptr;
        int64_t sn = a[0].v.str.len;
        uint8_t *o = em_row_arena_alloc(r->arena, sn * 4 + 1, r->err);
        if (!o)
            return nomem(r);
        int64_t k = 0;
        for (int64_t i = 0; i < sn;) {
            uint32_t c = decode(s, sn, &i);
            int64_t mi = 0, idx = 0, found = -1;
            while (mi < a[1].v.str.len) {
                if (decode(a[1].v.str.ptr, a[1].v.str.len, &mi) == c) {
                    found = idx;
                    break;
                }
                idx++;
            }
            if (found < 0) {
                k += encode(c, o + k);
                continue;
            }
            int64_t ri = 0, ridx = 0;
            while (ri < a[2].v.str.len) {
                uint32_t rc = decode(a[2].v.str.ptr, a[2].v.str.len, &ri);
                if (ridx++ == found) {
                    k += encode(rc, o + k);
                    break;
                }
            }
        }
        return put_bytes(r, o, k, out);
    }
    case EM_FN_CBRT: {
        /* Java's cbrt is within 2/3 ulp (exact cubes come back exact); one
         * Newton step in extended precision brings libm's there */
        double x = a[0].v.f64, y = cbrt(x);
        if (isfinite(y) && y != 0) {
            long double ly = y;
            ly -= (ly * ly * ly - (long double)x) / (3.0L * ly * ly);
            y = (double)ly;
        }
        out->v.f64 = y;
        return EM_OK;
    }
    case EM_FN_LOG:
        /* Logarithm(base, x): null for a base or x <= 0 */
        if (a[0].v.f64 <= 0 || a[1].v.f64 <= 0)
            *out = em_datum_null();
        else
            out->v.f64 = log(a[1].v.f64) / log(a[0].v.f64);
        return EM_OK;
    case EM_FN_POSITIVE:
        *out = a[0];
        return EM_OK;
    case EM_FN_SHIFTRIGHTUNSIGNED: {
        bool is_long = n->type.id == EM_TYPE_LONG;
        int sh = (int)(a[1].v.i64 & (is_long ? 63 : 31));
        out->v.i64 = is_long ? (int64_t)((uint64_t)a[0].v.i64 >> sh)
                             : (int32_t)((uint32_t)a[0].v.i64 >> sh);
        return EM_OK;
    }
    default:
        return EM_UNREACHABLE(r->err, "unknown row function");
    }
}

static em_status eval_fn(run *r, rnode *n, em_datum *out) {
    em_datum args[8];
    em_datum *a = n->n <= 8 ? args : calloc((size_t)n->n, sizeof *a);
    if (!a)
        return EM_FAIL(r->err, EM_ERR_NOMEM, "out of memory evaluating an expression");
    em_status st = EM_OK;
    /* hash, greatest/least and concat_ws see nulls; the rest are null
     * intolerant */
    bool sees_nulls = n->fn == EM_FN_HASH || n->fn == EM_FN_GREATEST || n->fn == EM_FN_LEAST ||
                      n->fn == EM_FN_CONCAT_WS;
    for (int i = 0; i < n->n; i++) {
        st = eval(r, n->kids[i], &a[i]);
        if (st != EM_OK)
            goto done;
        if (a[i].is_null && !sees_nulls) {
            *out = em_datum_null();
            goto done;
        }
    }
    memset(out, 0, sizeof *out);
    if (sees_nulls) {
        st = eval_null_aware(r, n, a, out);
        goto done;
    }
    switch (n->fn) {
    case EM_FN_SUBSTRING: {
        /* UTF8String.substringSQL: 1-based, 0 is 1, negative from the end;
         * the end is computed before the start is clamped */
        const uint8_t *p = a[0].v.str.ptr;
        int64_t len = n_chars(p, a[0].v.str.len);
        int64_t pos = a[1].v.i64, cnt = n->n > 2 ? a[2].v.i64 : INT32_MAX;
        int64_t start = pos > 0 ? pos - 1 : pos < 0 ? len + pos : 0;
        int64_t end = start + cnt;
        if (end > INT32_MAX)
            end = INT32_MAX;
        if (start < 0)
            start = 0;
        if (start >= end || start >= len) {
            put_bytes(r, p, 0, out);
            break;
        }
        if (end > len)
            end = len;
        int64_t b0 = char_at(p, a[0].v.str.len, start), b1 = char_at(p, a[0].v.str.len, end);
        put_bytes(r, p + b0, b1 - b0, out);
        break;
    }
    case EM_FN_CONCAT: {
        int64_t total = 0;
        for (int i = 0; i < n->n; i++)
            total += a[i].v.str.len;
        uint8_t *o = em_row_arena_alloc(r->arena, total, r->err);
        if (!o) {
            st = nomem(r);
            break;
        }
        int64_t k = 0;
        for (int i = 0; i < n->n; i++) {
            if (a[i].v.str.len)
                memcpy(o + k, a[i].v.str.ptr, (size_t)a[i].v.str.len);
            k += a[i].v.str.len;
        }
        put_bytes(r, o, total, out);
        break;
    }
    case EM_FN_UPPER:
    case EM_FN_LOWER:
        st = change_case(r, &a[0], n->fn == EM_FN_UPPER, out);
        break;
    case EM_FN_LENGTH:
        out->v.i64 = n_chars(a[0].v.str.ptr, a[0].v.str.len);
        break;
    case EM_FN_TRIM:
    case EM_FN_LTRIM:
    case EM_FN_RTRIM: {
        /* Spark's trim functions strip the space character only */
        const uint8_t *p = a[0].v.str.ptr;
        int64_t len = a[0].v.str.len;
        if (n->fn != EM_FN_RTRIM)
            while (len > 0 && *p == ' ')
                p++, len--;
        if (n->fn != EM_FN_LTRIM)
            while (len > 0 && p[len - 1] == ' ')
                len--;
        put_bytes(r, p, len, out);
        break;
    }
    case EM_FN_LIKE:
        out->v.b = like(a[0].v.str.ptr, a[0].v.str.len, a[1].v.str.ptr, a[1].v.str.len);
        break;
    case EM_FN_STARTS_WITH:
    case EM_FN_ENDS_WITH:
    case EM_FN_CONTAINS: {
        const uint8_t *s = a[0].v.str.ptr, *w = a[1].v.str.ptr;
        int64_t sn = a[0].v.str.len, wn = a[1].v.str.len;
        bool hit = false;
        for (int64_t i = 0; i + wn <= sn && !hit; i++) {
            if (n->fn == EM_FN_STARTS_WITH && i > 0)
                break;
            if (n->fn == EM_FN_ENDS_WITH && i != sn - wn)
                continue;
            hit = wn == 0 || memcmp(s + i, w, (size_t)wn) == 0;
        }
        out->v.b = hit;
        break;
    }
    case EM_FN_YEAR:
    case EM_FN_MONTH:
    case EM_FN_DAY:
    case EM_FN_QUARTER: {
        int64_t y;
        int m, d;
        em_civil_from_days(a[0].v.i64, &y, &m, &d);
        out->v.i64 = n->fn == EM_FN_YEAR    ? y
                     : n->fn == EM_FN_MONTH ? m
                     : n->fn == EM_FN_DAY   ? d
                                         : (m - 1) / 3 + 1;
        break;
    }
    case EM_FN_DATE_ADD:
    case EM_FN_DATE_SUB: {
        /* DateAdd/DateSub: Java int arithmetic, wrapping even in ANSI mode */
        int64_t v = n->fn == EM_FN_DATE_ADD ? a[0].v.i64 + a[1].v.i64 : a[0].v.i64 - a[1].v.i64;
        out->v.i64 = (int32_t)(uint32_t)(uint64_t)v;
        break;
    }
    case EM_FN_DATEDIFF:
        out->v.i64 = (int32_t)(a[0].v.i64 - a[1].v.i64);
        break;
    case EM_FN_UNSCALED:
        out->v.i64 = (int64_t)a[0].v.dec;
        break;
    case EM_FN_MAKE_DECIMAL: {
        rdec x;
        em_rdec_from_i128(&x, a[0].v.i64, n->type.scale);
        st = dec_result(r, n, &x, out);
        break;
    }
    case EM_FN_ISNAN:
        out->v.b = isnan(a[0].v.f64);
        break;
    case EM_FN_NORMALIZE:
        out->v.f64 = isnan(a[0].v.f64) ? NAN : a[0].v.f64 == 0 ? 0.0 : a[0].v.f64;
        break;
    case EM_FN_SHIFTLEFT:
    case EM_FN_SHIFTRIGHT: {
        bool is_long = n->type.id == EM_TYPE_LONG;
        int sh = (int)(a[1].v.i64 & (is_long ? 63 : 31));
        if (n->fn == EM_FN_SHIFTLEFT)
            out->v.i64 = is_long ? (int64_t)((uint64_t)a[0].v.i64 << sh)
                                 : (int32_t)((uint32_t)a[0].v.i64 << sh);
        else
            out->v.i64 = a[0].v.i64 >> sh; /* arithmetic, sign-extended datum */
        break;
    }
    case EM_FN_ROUND:
    case EM_FN_BROUND:
        st = round_value(r, n, &a[0], out);
        break;
    case EM_FN_FLOOR:
    case EM_FN_CEIL: {
        em_type t = n->kids[0]->type;
        bool fl = n->fn == EM_FN_FLOOR;
        if (t.id == EM_TYPE_DECIMAL) {
            em_i128 v = a[0].v.dec, q = v, p = 1;
            for (int i = 0; i < t.scale; i++)
                p *= 10;
            q = v / p;
            if (v % p != 0 && (fl ? v < 0 : v > 0))
                q += fl ? -1 : 1;
            out->v.dec = q;
        } else if (t.id == EM_TYPE_LONG) {
            out->v.i64 = a[0].v.i64;
        } else {
            double d = fl ? floor(a[0].v.f64) : ceil(a[0].v.f64);
            out->v.i64 = isnan(d)                      ? 0
                         : d >= 9223372036854775807.0  ? INT64_MAX
                         : d <= -9223372036854775808.0 ? INT64_MIN
                                                       : (int64_t)d;
        }
        break;
    }
    case EM_FN_SQRT:
        out->v.f64 = sqrt(a[0].v.f64);
        break;
    case EM_FN_EXP:
        out->v.f64 = exp(a[0].v.f64);
        break;
    case EM_FN_LN:
        if (a[0].v.f64 <= 0)
            *out = em_datum_null();
        else
            out->v.f64 = log(a[0].v.f64);
        break;
    case EM_FN_POWER:
        out->v.f64 = pow(a[0].v.f64, a[1].v.f64);
        break;
    case EM_FN_PMOD: {
        /* Pmod: r = a % n; r < 0 ? (r + n) % n : r, in Java arithmetic: int
         * and long wrap, byte and short are promoted to int (no wrap) and
         * narrowed at the end */
        __int128 x = a[0].v.i64, m = a[1].v.i64;
        if (m == 0) {
            if (r->x->ansi)
                st = fail_data(r, n, EM_ERR_INVALID, "DIVIDE_BY_ZERO", "division by zero");
            else
                *out = em_datum_null();
            break;
        }
        __int128 rr = x % m;
        bool wraps = n->type.id == EM_TYPE_INT || n->type.id == EM_TYPE_LONG;
        if (rr < 0)
            rr = (wraps ? (__int128)em_row_wrap(n->type.id, (int64_t)(rr + m)) : rr + m) % m;
        out->v.i64 = em_row_wrap(n->type.id, (int64_t)rr);
        break;
    }
    default:
        st = eval_more(r, n, a, out);
        break;
    }
done:
    if (a != args)
        free(a);
    return st;
}

/* ------------------------------------------------------------------ the walk */

static em_status fetch_subquery(run *r, rnode *n, em_datum *out) {
    if (!n->have_subq) {
        memset(&n->subq, 0, sizeof n->subq);
        em_status st = r->x->subquery(r->x->subquery_ctx, n->src, n->type, r->x->pool, &n->subq,
                                      r->err);
        if (st != EM_OK)
            return st;
        if (n->subq.length != 1) {
            em_column_reset(&n->subq);
            return EM_FAIL(r->err, EM_ERR_INVALID, "a scalar subquery returned %lld rows",
                           (long long)n->subq.length);
        }
        n->have_subq = true;
    }
    em_datum_from_column(&n->subq, 0, out);
    return EM_OK;
}

static em_status eval(run *r, rnode *n, em_datum *out) {
    em_datum a, b;
    switch (n->kind) {
    case RK_INPUT:
        *out = r->row[n->ordinal];
        return EM_OK;
    case RK_CONST:
        *out = n->k;
        return EM_OK;
    case RK_SUBQ:
        return fetch_subquery(r, n, out);
    case RK_ARITH:
        return eval_arith(r, n, out);
    case RK_CMP:
        return eval_cmp(r, n, out);
    case RK_AND:
    case RK_OR: {
        bool stop = n->kind == RK_OR; /* the value that decides alone */
        EM_TRY(eval(r, n->kids[0], &a));
        memset(out, 0, sizeof *out);
        if (!a.is_null && a.v.b == stop) {
            out->v.b = stop;
            return EM_OK;
        }
        EM_TRY(eval(r, n->kids[1], &b));
        if (!b.is_null && b.v.b == stop) {
            out->v.b = stop;
            return EM_OK;
        }
        if (a.is_null || b.is_null)
            return set_null(out);
        out->v.b = !stop;
        return EM_OK;
    }
    case RK_NOT:
        EM_TRY(eval(r, n->kids[0], &a));
        *out = a;
        if (!a.is_null)
            out->v.b = !a.v.b;
        return EM_OK;
    case RK_ISNULL:
    case RK_ISNOTNULL:
        EM_TRY(eval(r, n->kids[0], &a));
        memset(out, 0, sizeof *out);
        out->v.b = a.is_null == (n->kind == RK_ISNULL);
        return EM_OK;
    case RK_IN: {
        EM_TRY(eval(r, n->kids[0], &a));
        if (a.is_null)
            return set_null(out);
        bool saw_null = false;
        for (int i = 1; i < n->n; i++) {
            EM_TRY(eval(r, n->kids[i], &b));
            if (b.is_null) {
                saw_null = true;
                continue;
            }
            if (compare(&a, n->kids[0]->type, &b, n->kids[i]->type) == 0) {
                memset(out, 0, sizeof *out);
                out->v.b = true;
                return EM_OK;
            }
        }
        if (saw_null)
            return set_null(out);
        memset(out, 0, sizeof *out);
        return EM_OK;
    }
    case RK_CASE: {
        int pairs = (n->n - (n->has_else ? 1 : 0)) / 2;
        for (int i = 0; i < pairs; i++) {
            EM_TRY(eval(r, n->kids[2 * i], &a));
            if (!a.is_null && a.v.b)
                return eval(r, n->kids[2 * i + 1], out);
        }
        if (n->has_else)
            return eval(r, n->kids[n->n - 1], out);
        return set_null(out);
    }
    case RK_IF:
        EM_TRY(eval(r, n->kids[0], &a));
        return eval(r, n->kids[!a.is_null && a.v.b ? 1 : 2], out);
    case RK_COALESCE:
        for (int i = 0; i < n->n; i++) {
            EM_TRY(eval(r, n->kids[i], out));
            if (!out->is_null)
                return EM_OK;
        }
        return set_null(out);
    case RK_CAST: {
        EM_TRY(eval(r, n->kids[0], &a));
        char d[300];
        d[0] = '\0';
        row_cast_ctx c = {!n->null_on_error, d};
        if (c.ansi)
            em_row_describe(n->src, d, sizeof d);
        return em_row_cast_tz(&c, n->tz, &a, n->kids[0]->type, n->type, r->arena, out, r->err);
    }
    case RK_CHECK: {
        EM_TRY(eval(r, n->kids[0], &a));
        if (a.is_null)
            return set_null(out);
        rdec x;
        to_rdec(&a, n->kids[0]->type, &x);
        memset(out, 0, sizeof *out);
        return dec_result(r, n, &x, out);
    }
    case RK_NEG:
    case RK_ABS: {
        EM_TRY(eval(r, n->kids[0], &a));
        if (a.is_null)
            return set_null(out);
        memset(out, 0, sizeof *out);
        bool flip = n->kind == RK_NEG;
        em_type t = n->type;
        if (t.id == EM_TYPE_DECIMAL) {
            flip = flip || a.v.dec < 0;
            out->v.dec = flip ? -a.v.dec : a.v.dec;
        } else if (t.id == EM_TYPE_FLOAT || t.id == EM_TYPE_DOUBLE) {
            out->v.f64 = n->kind == RK_NEG ? -a.v.f64 : fabs(a.v.f64);
        } else {
            flip = flip || a.v.i64 < 0;
            return int_overflow(r, n, flip ? -(__int128)a.v.i64 : (__int128)a.v.i64, out);
        }
        return EM_OK;
    }
    case RK_FN:
        return eval_fn(r, n, out);
    }
    return EM_UNREACHABLE(r->err, "unknown row expression node");
}

em_status em_rexpr_eval(em_rexpr *x, const em_datum *row, em_row_arena *arena, em_datum *out,
                        em_error *err) {
    run r = {x, row, arena, err};
    return eval(&r, x->root, out);
}

em_status em_rexpr_test(em_rexpr *x, const em_datum *row, em_row_arena *arena, bool *keep,
                        em_error *err) {
    em_datum d;
    *keep = false;
    EM_TRY(em_rexpr_eval(x, row, arena, &d, err));
    *keep = !d.is_null && d.v.b;
    return EM_OK;
}
